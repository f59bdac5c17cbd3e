package profiles

import (
	"math"
	"strings"
	"unicode"
)

// GPUForDriverName returns the catalog GPU a driver's device name and
// memory (GiB, as the driver reports it) describe, and false when none
// does. The name must carry the catalog model's family ("A100", "H100",
// "L40S"; drivers spell names "NVIDIA A100-PCIE-40GB" or "NVIDIA A100 80GB
// PCIe"), the memory must be within 12% of the catalog's (drivers report
// GiB of usable memory, catalogs the marketed size), and an SXM or HBM
// module does not match a PCIe card: they are different products with
// different links and rates. Of several matches, the closest in memory
// wins.
func (c *Catalog) GPUForDriverName(name string, memGiB float64) (GPUModel, bool) {
	tokens := nameTokens(name)
	module := false
	for _, t := range tokens {
		if strings.HasPrefix(t, "sxm") || strings.HasPrefix(t, "hbm") {
			module = true
		}
	}
	var best GPUModel
	found := false
	for _, g := range c.GPUs {
		family := catalogFamily(g.Name)
		if family == "" || !contains(tokens, family) || !(memGiB > 0) {
			continue
		}
		if module && contains(nameTokens(g.Name), "pcie") {
			continue
		}
		if math.Abs(memGiB-g.MemoryGiB) > 0.12*g.MemoryGiB {
			continue
		}
		if !found || math.Abs(memGiB-g.MemoryGiB) < math.Abs(memGiB-best.MemoryGiB) {
			best, found = g, true
		}
	}
	return best, found
}

// nameTokens splits a device name into lower-case words of letters and
// digits.
func nameTokens(name string) []string {
	return strings.FieldsFunc(strings.ToLower(name), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) })
}

// catalogFamily is a catalog GPU name's model word: the first after the
// vendor that mixes letters and digits ("a100" of "NVIDIA A100 80GB
// PCIe").
func catalogFamily(name string) string {
	for _, t := range nameTokens(name) {
		if t == "nvidia" || strings.HasSuffix(t, "gb") {
			continue
		}
		if strings.IndexFunc(t, unicode.IsDigit) >= 0 && strings.IndexFunc(t, unicode.IsLetter) >= 0 {
			return t
		}
	}
	return ""
}

func contains(ts []string, t string) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}
