//go:build !linux

package main

import "errors"

// characterMode is Linux-only; elsewhere the terminal echoes as usual.
func characterMode(fd int) (restore func(), err error) {
	return nil, errors.New("character mode is implemented for Linux only")
}

// onContinue is Linux-only with characterMode: nothing to watch elsewhere.
func onContinue(fn func()) (stop func()) { return func() {} }
