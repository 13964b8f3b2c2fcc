package core

import "log/slog"

// Secret is a credential such as a bot token. It never prints, formats or
// logs its value; Reveal is the one way to read it, at the point of use.
type Secret string

// String returns "REDACTED" so fmt never shows the value.
func (Secret) String() string { return "REDACTED" }

// GoString keeps %#v from showing the value.
func (Secret) GoString() string { return "REDACTED" }

// LogValue keeps slog from showing the value.
func (Secret) LogValue() slog.Value { return slog.StringValue("REDACTED") }

// MarshalText keeps encoders (JSON, YAML) from writing the value.
func (Secret) MarshalText() ([]byte, error) { return []byte("REDACTED"), nil }

// Reveal returns the credential itself.
func (s Secret) Reveal() string { return string(s) }

// IsZero reports whether no secret is set.
func (s Secret) IsZero() bool { return s == "" }
