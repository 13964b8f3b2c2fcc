package core

import "context"

// Transcriber turns speech into text: a voice note's words become its
// turn's message. Package transcribe holds the engines.
type Transcriber interface {
	// Transcribe returns the words spoken in the audio file at path (a is
	// the attachment it was downloaded from: its name and media type). An
	// error wrapping context.DeadlineExceeded means ctx's deadline passed.
	// Errors never carry the engine's credentials.
	Transcribe(ctx context.Context, path string, a Attachment) (string, error)
}
