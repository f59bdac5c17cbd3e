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
	fmt.Fprintf(stderr, "gnnplan: %s\n", oneLine(err.Error()))
	switch {
	case ctx.Err() != nil:
		return 130
	case topology.IsBadInput(err) || isUsageError(err):
		return exitBadInput
	}
	return exitFailure
}
