// Package outfile checks the files an agent sends back (the attachments
// of its partial and result events, spec/protocol.md X-FILE-1) before
// any of them reaches a chat: one place for the schemes a turn allows,
// where a file:// URL may point, the per-turn and platform limits, and
// the file names. A file that passes is spooled to a directory of the
// turn's own and becomes a core.File; anything else becomes a line the
// reply shows instead — a link, or why the file was refused — never
// silence. The bytes are never logged.
package outfile
