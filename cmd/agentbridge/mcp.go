package main

import (
	"context"
	"io"
	"os"

	"github.com/agentbridge/agentbridge/shim/sendfile"
)

// cmdMCP runs the send_file MCP server (package sendfile) on stdin and
// stdout: the shims register it with their CLI, which starts it. The shim
// names its spool and the working directory in the environment.
func cmdMCP(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := newFlagSet("mcp", "usage: agentbridge mcp\n\n"+
		"The MCP stdio server with the send_file tool, which agent CLIs start: the shims register it\n"+
		"(agentbridge shim NAME), so a file the agent sends reaches the chat. It reads "+sendfile.SpoolEnv+"\n"+
		"(where sent files go) and "+sendfile.RootEnv+" (the directory they are sent from; default: the\n"+
		"current directory).\n", stderr)
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageErrorf("mcp takes no arguments")
	}
	srv := sendfile.Server{Root: os.Getenv(sendfile.RootEnv), Version: buildVersion()}
	if srv.Root == "" {
		srv.Root = "."
	}
	if dir := os.Getenv(sendfile.SpoolEnv); dir != "" {
		srv.Spool = &sendfile.Spool{Dir: dir}
	}
	return srv.Serve(ctx, stdin, stdout)
}
