//go:build !linux

package main

import "errors"

// characterMode is Linux-only; elsewhere the terminal echoes as usual.
func characterMode(fd int) (restore func(), err error) {
	return nil, errors.New("character mode is implemented for Linux only")
}
