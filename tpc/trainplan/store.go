package trainplan

import (
	"fmt"
	"math"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/internal/inputerr"
	"github.com/gnnplan/gnnplan/trainer/dataset"
	"github.com/gnnplan/gnnplan/trainer/sample"
	"github.com/gnnplan/gnnplan/trainer/store"
)

// StoreFlags say where a run's feature rows come from.
type StoreFlags struct {
	// Features is auto (the store when the dataset has one), memory or
	// store; CacheFraction (when Set says it was given) holds the hottest
	// share of the rows in memory instead of the layout's caches, or with
	// CacheOrder random a random share drawn with Seed.
	Features      string
	CacheFraction float64
	CacheOrder    string
	Seed          uint64
	// FromPlan says Features and CacheFraction came from the plan at
	// PlanPath; Dataset is the dataset flag ("": a generated graph).
	FromPlan bool
	PlanPath string
	Dataset  string
	Set      func(name string) bool
	// RowNormalize has the store serve its rows scaled to unit L1 norm
	// (store.Options.RowNormalize): the run's trainer.Options.RowNormalize.
	RowNormalize bool
}

// OpenStore opens dir's feature store when the run trains out of core
// (Features store, or auto with a store present), with the cache override
// of CacheFraction; nil when it trains in memory.
func OpenStore(dir string, m dataset.Meta, o StoreFlags, copyThreads int) (*store.Store, error) {
	_, err := os.Stat(filepath.Join(dir, store.ManifestFile))
	have := err == nil
	var use bool
	switch o.Features {
	case "auto":
		use = have && o.Dataset != ""
	case "memory":
	case "store":
		if !have && o.FromPlan {
			return nil, inputerr.Errorf("", "", "--plan %s trains at cache %.0f%%, reading the other rows from the dataset's feature store, and %s has none: lay the dataset out over this machine's disks first (gnnplan recommend --dataset %s --gpus 1 --save layout.json; gnnplan place --plan layout.json --dataset %s --materialize --ssd-dir DIR), or train in memory with --features memory",
				o.PlanPath, 100*o.CacheFraction, dir, dir, dir)
		}
		if !have {
			return nil, inputerr.Errorf("", "", "--features store: %s has no feature store (%s); lay it out and write the SSD bins first: gnnplan place --plan plan.json --dataset %s --materialize --ssd-dir DIR", dir, store.ManifestFile, dir)
		}
		use = true
	default:
		return nil, inputerr.Errorf("", "", "--features %q (valid: auto, memory, store)", o.Features)
	}
	override := o.Set != nil && o.Set("cache-fraction")
	if o.CacheOrder != "hottest" && o.CacheOrder != "random" {
		return nil, inputerr.Errorf("", "", "--cache-order %q (valid: hottest, random)", o.CacheOrder)
	}
	if o.Set != nil && o.Set("cache-order") && !override {
		return nil, inputerr.Errorf("", "", "--cache-order picks the rows of --cache-fraction's cache: give --cache-fraction too")
	}
	if override && !use {
		return nil, inputerr.Errorf("", "", "--cache-fraction applies to training out of core, and %s has no feature store in use (--features %s); materialize one with gnnplan place --materialize", dir, o.Features)
	}
	if !use {
		return nil, nil
	}
	opt := store.Options{CopyThreads: copyThreads, RowNormalize: o.RowNormalize}
	if override {
		f := o.CacheFraction
		if math.IsNaN(f) || f < 0 || f > 1 {
			return nil, inputerr.Errorf("", "", "--cache-fraction %g (want a share of the rows from 0 to 1)", f)
		}
		hot, err := sample.ReadHotness(filepath.Join(dir, sample.HotnessFile), m.NumNodes)
		if err != nil {
			return nil, fmt.Errorf("--cache-fraction ranks rows by the hotness gnnplan place measured: %w", err)
		}
		opt.Cache = &store.CacheOverride{Fraction: f, Hotness: hot, Random: o.CacheOrder == "random", Seed: o.Seed}
	}
	return store.Open(dir, opt)
}
