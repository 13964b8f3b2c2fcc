package main

import (
	"fmt"

	"golang.org/x/sys/unix"
)

// characterMode turns the terminal's echo and line editing off, keeping
// signals (Ctrl-C still sends SIGINT) and output processing, so the chat
// can draw what the user types itself. restore puts the old mode back.
func characterMode(fd int) (restore func(), err error) {
	old, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return nil, fmt.Errorf("read terminal mode: %w", err)
	}
	mode := *old
	mode.Lflag &^= unix.ICANON | unix.ECHO
	mode.Lflag |= unix.ISIG
	mode.Cc[unix.VMIN], mode.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, &mode); err != nil {
		return nil, fmt.Errorf("set terminal mode: %w", err)
	}
	return func() { _ = unix.IoctlSetTermios(fd, unix.TCSETS, old) }, nil
}
