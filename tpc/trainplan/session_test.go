package trainplan

import (
	"testing"

	"github.com/gnnplan/gnnplan/tpc"
)

// TestPlanCache: a plan of this machine trains at its cache (in memory,
// or the hottest share from the store) unless --features or
// --cache-fraction say otherwise.
func TestPlanCache(t *testing.T) {
	for _, tc := range []struct {
		fraction     float64
		set          string
		wantFeatures string
		wantCache    float64
		wantSet      bool
	}{
		{1, "", "memory", -1, false},
		{0.3, "", "store", 0.3, true},
		{0.3, "features", "auto", -1, false},
		{0.3, "cache-fraction", "auto", -1, true},
	} {
		o := &RunFlags{Features: "auto", CacheFraction: -1, Flags: Flags{Set: func(name string) bool { return name == tc.set }}}
		planCache(o, &tpc.Plan{Cache: &tpc.PlanCache{Fraction: tc.fraction}})
		if o.Features != tc.wantFeatures || o.CacheFraction != tc.wantCache || o.Set("cache-fraction") != tc.wantSet {
			t.Errorf("cache %g, flag %q set: features %q, cache fraction %g (set %v); want %q, %g (%v)",
				tc.fraction, tc.set, o.Features, o.CacheFraction, o.Set("cache-fraction"), tc.wantFeatures, tc.wantCache, tc.wantSet)
		}
	}
}
