// Command gnnplan plans, places and trains out-of-core GNN workloads on
// multi-GPU, multi-SSD servers: it discovers a server's PCIe topology,
// recommends what to buy and where to put it, and places and trains.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/gnnplan/gnnplan/topology"
)

// Exit codes.
const (
	exitOK       = 0
	exitFailure  = 1 // something went wrong that is not the user's input
	exitBadInput = 2 // a file, directory or flag the user can fix
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes one gnnplan invocation and returns its exit code; main is
// only the process glue around it, so tests can call run in-process.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	deps := &deps{In: stdin, Out: stdout, Err: stderr}
	root := newRootCmd(deps)
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	if ctx.Err() != nil {
		// Stopped by Ctrl-C, SIGTERM or SIGHUP: what was stopped, not
		// the context's own words.
		msg := strings.TrimSuffix(strings.TrimSuffix(oneLine(err.Error()), "context canceled"), ": ")
		if msg == "" {
			msg = root.CalledAs()
			if c, _, ferr := root.Find(args); ferr == nil {
				msg = c.Name()
			}
		}
		fmt.Fprintf(stderr, "gnnplan: %s: interrupted, nothing more written\n", msg)
		return 130
	}
	fmt.Fprintf(stderr, "gnnplan: %s\n", oneLine(err.Error()))
	switch {
	case topology.IsBadInput(err) || isUsageError(err):
		return exitBadInput
	}
	return exitFailure
}
