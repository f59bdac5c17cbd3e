package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	"github.com/gnnplan/gnnplan/internal/fsutil"
)

func main() {
	var (
		bin     = flag.String("gnnplan", "bin/gnnplan", "the gnnplan binary to run")
		dataset = flag.String("dataset", "", "dataset directory with a materialized store (required)")
		rounds  = flag.Int("rounds", 3, "rounds of a run in memory and one per loader")
		epochs  = flag.Int("epochs", 4, "epochs a run (the first is left out of its median)")
		cache   = flag.Float64("cache-fraction", 0.1, "share of the rows the store's caches hold")
		list    = flag.String("loaders", "online,packed,multistage", "comma-separated loaders to run from the store")
		out     = flag.String("out", "loaderbench-out", "directory for each run's JSON")
	)
	flag.Parse()
	loaders := strings.Split(*list, ",")
	switch {
	case *dataset == "":
		usage("-dataset: missing (a dataset directory with a materialized store)")
	case *rounds < 1:
		usage(fmt.Sprintf("-rounds %d: want 1 or more", *rounds))
	case *epochs < 2:
		usage(fmt.Sprintf("-epochs %d: want 2 or more (the first is left out)", *epochs))
	case !(*cache >= 0 && *cache < 1):
		usage(fmt.Sprintf("-cache-fraction %v: want 0 to below 1", *cache))
	}
	for _, l := range loaders {
		if !slices.Contains([]string{"online", "packed", "multistage"}, l) {
			usage(fmt.Sprintf("-loaders: %q is no loader (online, packed, multistage)", l))
		}
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		usage(fmt.Sprintf("-out %s: %v", *out, err))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGHUP)
	defer stop()
	common := []string{"train", "--dataset", *dataset, "--model", "graphsage", "--hidden", "256", "--fanouts", "25,10", "--batch", "1024",
		"--eval-every", "0", "--seed", "1", "--epochs", strconv.Itoa(*epochs), "-o", "json"}
	var results []map[string]runResult
	for r := 1; r <= *rounds; r++ {
		res := map[string]runResult{}
		for _, name := range append([]string{"memory"}, loaders...) {
			args := append(slices.Clone(common), "--features", "memory", "--loader", "online")
			if name != "memory" {
				args = append(slices.Clone(common), "--features", "store", "--cache-fraction", strconv.FormatFloat(*cache, 'g', -1, 64), "--loader", name)
			}
			fmt.Fprintf(os.Stderr, "loaderbench: round %d of %d: %s\n", r, *rounds, name)
			run, err := trainOnce(ctx, *bin, args, filepath.Join(*out, fmt.Sprintf("%d-%s.json", r, name)))
			if err != nil {
				fmt.Fprintf(os.Stderr, "loaderbench: round %d, %s: %v\n", r, name, err)
				os.Exit(1)
			}
			res[name] = run
		}
		results = append(results, res)
	}
	writeTable(os.Stdout, loaders, results)
}

// trainOnce runs bin with args, keeping its JSON at path (written whole
// or not at all), and parses it. Its progress goes to stderr; Ctrl-C
// reaches it as an interrupt, so it stops cleanly.
func trainOnce(ctx context.Context, bin string, args []string, path string) (runResult, error) {
	var stdout bytes.Buffer
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = &stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return runResult{}, errors.Join(err, context.Cause(ctx))
		}
		return runResult{}, fmt.Errorf("%s %s: %w", bin, strings.Join(args, " "), err)
	}
	if err := fsutil.WriteFileAtomic(path, stdout.Bytes()); err != nil {
		return runResult{}, err
	}
	return parseRun(stdout.Bytes())
}

func usage(msg string) {
	fmt.Fprintln(os.Stderr, "loaderbench: "+msg)
	os.Exit(2)
}
