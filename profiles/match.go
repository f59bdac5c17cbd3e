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
// PCIe") or its architecture ("sm80", "gfx908": what NCCL and RCCL files
// give when they name no model); the memory must be within 12% of the
// catalog's (drivers report GiB of usable memory, catalogs the marketed
// size); and a module (SXM, HBM in the name) matches only a module, a
// PCIe card only a card: they are different products with different links
// and rates. Of several matches the closest in memory wins. With the
// memory unknown (0) the smallest model of the family matches, and a name
// that says neither module nor card prefers the card.
func (c *Catalog) GPUForDriverName(name string, memGiB float64) (GPUModel, bool) {
	tokens := nameTokens(name)
	module, card := false, false
	for _, t := range tokens {
		module = module || strings.HasPrefix(t, "sxm") || strings.HasPrefix(t, "hbm")
		card = card || t == "pcie"
	}
	var best GPUModel
	found := false
	score := func(g GPUModel) float64 {
		d := g.MemoryGiB
		if memGiB > 0 {
			d = math.Abs(memGiB - g.MemoryGiB)
		}
		if !module && !card && isModule(g) {
			d += 1e6 // form unknown: a card before a module
		}
		return d
	}
	for _, g := range c.GPUs {
		family := catalogFamily(g.Name)
		if !(family != "" && contains(tokens, family) || g.Arch != "" && contains(tokens, g.Arch)) {
			continue
		}
		if module && !isModule(g) || card && isModule(g) {
			continue
		}
		if memGiB > 0 && math.Abs(memGiB-g.MemoryGiB) > 0.12*g.MemoryGiB {
			continue
		}
		if !found || score(g) < score(best) {
			best, found = g, true
		}
	}
	return best, found
}

// isModule reports whether a catalog GPU is a module (SXM, OAM) rather
// than a PCIe card.
func isModule(g GPUModel) bool { return IsModuleName(g.Name) }

// IsModuleName reports whether a GPU's name says it is a module on a
// board (SXM, OAM, or HBM as NVIDIA's driver names SXM parts: "NVIDIA
// H100 80GB HBM3"), which no PCIe slot takes and no PCIe card replaces.
func IsModuleName(name string) bool {
	for _, t := range nameTokens(name) {
		if strings.HasPrefix(t, "sxm") || strings.HasPrefix(t, "hbm") || t == "oam" {
			return true
		}
	}
	return false
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
