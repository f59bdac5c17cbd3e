package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"
	"gopkg.in/yaml.v3"

	"github.com/gnnplan/gnnplan/profiles"
)

// catalogOptions are catalog's flags.
type catalogOptions struct {
	IO      *deps
	Catalog string
	Output  string
}

func newCatalogCmd(d *deps) *cobra.Command {
	opts := &catalogOptions{IO: d}
	cmd := &cobra.Command{
		Use:   "catalog",
		Short: "Print the hardware catalog plans are priced with, to start a --catalog file from",
		Long: `Print the catalog recommend, report and validate price plans with: the GPUs
and SSDs one can buy (price, memory, link, rates, and where each figure comes
from; "estimate:" marks estimates) and the host's costs. With --catalog FILE,
the built-in catalog with the file's entries over it, as recommend --catalog
sees it. The YAML output is a valid --catalog file: copy the entries to
change, or give an entry's key and price alone to change its price.`,
		Example: `  gnnplan catalog > prices.yaml
  gnnplan catalog --catalog prices.yaml -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runCatalog(opts) },
	}
	f := cmd.Flags()
	f.StringVar(&opts.Catalog, "catalog", "", "a catalog file (JSON or YAML) whose entries override the built-in ones")
	outputFlag(f, &opts.Output, "", "", "yaml", "json")
	return cmd
}

func runCatalog(o *catalogOptions) error {
	c := profiles.DefaultCatalog()
	if o.Catalog != "" {
		var err error
		if c, err = profiles.LoadCatalog(o.Catalog); err != nil {
			return err
		}
	}
	var out []byte
	var err error
	switch o.Output {
	case "yaml":
		out, err = yaml.Marshal(c)
	case "json":
		out, err = json.MarshalIndent(c, "", "  ")
		out = append(out, '\n')
	}
	if err != nil {
		return err
	}
	_, err = fmt.Fprint(o.IO.Out, string(out))
	return err
}
