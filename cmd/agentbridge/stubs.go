package main

import (
	"context"
	"errors"
	"io"
)

// Temporary stubs, replaced by their own files as they land.

func cmdChat(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("chat: not built yet")
}

func cmdServe(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("serve: not built yet")
}

func cmdValidate(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("validate: not built yet")
}

const demoAgentCommand = "demo-agent"

func cmdDemoAgent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	return errors.New("demo-agent: not built yet")
}
