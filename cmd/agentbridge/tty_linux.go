package main

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

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

// onContinue calls fn each time the process is continued after a stop
// (SIGCONT: fg after Ctrl-Z) until the returned stop is called, which
// waits for the watching goroutine to end.
func onContinue(fn func()) (stop func()) {
	cont := make(chan os.Signal, 1)
	signal.Notify(cont, syscall.SIGCONT)
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-cont:
				fn()
			case <-done:
				return
			}
		}
	}()
	return func() {
		signal.Stop(cont)
		close(done)
		<-ended
	}
}
