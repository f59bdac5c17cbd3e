package main

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/gnnplan/gnnplan/profiles"
	"github.com/gnnplan/gnnplan/tpc"
)

// deps are what commands use from the outside world, injected so tests can
// run commands in-process and read what they print.
type deps struct {
	In  io.Reader
	Out io.Writer
	Err io.Writer
}

// usageError is a flag or argument problem (exit code 2).
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usageErrorf(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// flagUsageError makes a flag the parser refused a usage error (exit 2).
func flagUsageError(_ *cobra.Command, err error) error { return &usageError{msg: err.Error()} }

func isUsageError(err error) bool {
	var u *usageError
	return errors.As(err, &u)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.ReplaceAll(s, "\n", " ")), " ")
}

func newRootCmd(d *deps) *cobra.Command {
	root := &cobra.Command{
		Use:   "gnnplan",
		Short: "Plan, place and train out-of-core GNNs on multi-GPU, multi-SSD servers",
		Long: `gnnplan answers the questions asked before buying or re-cabling a GNN training
server: what is in this machine and how is it wired, which GPUs and how many
NVMe SSDs to buy, which slots to put them in, and where each vertex's
embedding should live. Then it trains on the plan and reports how close the
prediction was.`,
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetFlagErrorFunc(flagUsageError)
	// An unknown command is a usage error like an unknown flag: exit 2,
	// naming the commands there are (cobra checks Args only on a command
	// that runs: with no command, root prints its help).
	root.RunE = func(cmd *cobra.Command, _ []string) error { return cmd.Help() }
	root.SuggestionsMinimumDistance = 2
	root.Args = func(cmd *cobra.Command, args []string) error {
		if len(args) == 0 {
			return nil
		}
		var names []string
		for _, c := range cmd.Commands() {
			if c.IsAvailableCommand() {
				names = append(names, c.Name())
			}
		}
		hint := ""
		if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
			hint = fmt.Sprintf("did you mean %s? ", strings.Join(s, " or "))
		}
		return usageErrorf("unknown command %q: %svalid: %s", args[0], hint, strings.Join(names, ", "))
	}
	root.AddCommand(newVersionCmd(d), newDiscoverCmd(d, nil), newPlacementsCmd(d, nil), newRecommendCmd(d, nil), newDatasetCmd(d), newPlaceCmd(d, nil), newMaterializeCmd(d, nil), newProfileCmd(d, nil), newTrainCmd(d, nil), newReportCmd(d, nil), newValidateCmd(d, nil), newCatalogCmd(d))
	registerCompletions(root)
	return root
}

// registerCompletions gives shell completion the values of the flags that
// name something built in, on every command that has them: machine
// profiles, workloads, catalog models, and -o's formats where -o is a
// format (its usage lists them after "format:").
func registerCompletions(root *cobra.Command) {
	cat := profiles.DefaultCatalog()
	var gpus, ssds, workloads []string
	for _, g := range cat.GPUs {
		gpus = append(gpus, g.Key)
	}
	for _, s := range cat.SSDs {
		ssds = append(ssds, s.Key)
	}
	for _, w := range tpc.BuiltinWorkloads() {
		workloads = append(workloads, w.Name)
	}
	values := map[string][]string{"profile": profiles.MachineNames(), "workload": workloads, "gpu-model": gpus, "ssd-model": ssds}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(f *pflag.Flag) {
			vals := values[f.Name]
			if f.Name == "output" {
				vals = formatsIn(f.Usage)
			}
			if len(vals) > 0 {
				_ = c.RegisterFlagCompletionFunc(f.Name, cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp))
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// formatsIn reads the formats a usage line lists after "format:" ("output
// format: table, json, tree" or "format: yaml or json"); none where -o
// names a file.
func formatsIn(usage string) []string {
	_, list, ok := strings.Cut(usage, "format: ")
	if !ok {
		return nil
	}
	list, _, _ = strings.Cut(list, " (")
	var out []string
	for _, part := range strings.Split(strings.ReplaceAll(list, " or ", ", "), ",") {
		if w := strings.TrimSpace(part); w != "" && !strings.ContainsAny(w, " ./") {
			out = append(out, w)
		}
	}
	return out
}
