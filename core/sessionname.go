package core

// SessionNameRule says what ValidSessionName accepts after its length
// ("1 to 64 …"), for the messages that refuse a name.
const SessionNameRule = "letters, digits, '.', '_' or '-', starting with a letter or digit"

// ValidSessionName reports whether name may name a session: 1 to 64
// SessionNameRule characters, something safe to show and store. The engine's
// session command, the trigger and the config's schedules all ask it.
func ValidSessionName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i, c := range []byte(name) {
		alnum := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
		if !alnum && (i == 0 || c != '.' && c != '_' && c != '-') {
			return false
		}
	}
	return true
}
