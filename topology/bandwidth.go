package topology

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// Where a link capacity came from (Link.Source).
const (
	SourceSysfs    = "sysfs"     // current_link_speed x current_link_width (the maximum was missing)
	SourceSysfsMax = "sysfs-max" // max_link_* of the device and its port, the lesser of the two
	SourceXML      = "xml"       // link_speed / link_width attributes of an imported file
	SourceProfile  = "profile"   // written in an embedded or user profile
	SourceDerived  = "derived"   // from the lanes and generation of the nodes it joins
	SourceNominal  = "nominal"   // a per-technology default (CPU family, NVLink generation)
	SourceSum      = "sum"       // on-die: the sum of the root complex's downstream links
	SourceCPULanes = "cpu-lanes" // on-die: the CPU's PCIe lanes x rate, less than the sum below
	SourceAssumed  = "assumed"   // nothing known; see the machine's notes
)

// pcieX16GBps is the usable per-direction bandwidth of an x16 link per PCIe
// generation, in decimal GB/s: NCCL's figures (Gen3 12, Gen4 24, Gen5 48,
// Gen6 96; docs/architecture.md section 3), extended down to Gen1/Gen2 by the same
// halving per generation. They sit ~75% of the raw signalling rate, close to
// measured host-to-device copies (Gen4 x16 ~22.4 GiB/s in Moment's profiler).
var pcieX16GBps = [...]float64{0, 3, 6, 12, 24, 48, 96, 192}

// PCIeGBps returns the per-direction capacity of a PCIe link of the given
// generation (1-7) and lane width, in GB/s. It returns 0 when either is
// unknown (zero or out of range).
func PCIeGBps(gen, lanes int) float64 {
	if gen <= 0 || gen >= len(pcieX16GBps) || lanes <= 0 {
		return 0
	}
	return pcieX16GBps[gen] * float64(lanes) / 16
}

// transferRateGen maps a per-lane signalling rate in GT/s to a PCIe
// generation.
func transferRateGen(gts float64) int {
	switch {
	case gts <= 0:
		return 0
	case gts < 4:
		return 1 // 2.5 GT/s
	case gts < 7:
		return 2 // 5 GT/s
	case gts < 12:
		return 3 // 8 GT/s
	case gts < 24:
		return 4 // 16 GT/s
	case gts < 48:
		return 5 // 32 GT/s
	case gts < 96:
		return 6 // 64 GT/s
	default:
		return 7 // 128 GT/s
	}
}

// maxGTps is the fastest per-lane rate a PCIe link can report (Gen7,
// 128 GT/s), with room for rounding.
const maxGTps = 130

// MaxLinkGBps bounds any single link's per-direction capacity: the widest
// links built (18 NVLink5 links, 900 GB/s; PCIe Gen7 x32, 384 GB/s) stay well
// below it. A larger value is a typo or a corrupt file.
const MaxLinkGBps = 4000

// ParseLinkSpeed reads a PCIe link speed as sysfs, lspci, NCCL XML and hwloc
// write it ("16.0 GT/s PCIe", "8 GT/s", "2.5 GT/s", "Unknown") and returns the
// PCIe generation, or 0 when the speed is unknown.
func ParseLinkSpeed(s string) (gen int, err error) {
	s = strings.TrimSpace(s)
	if s == "" || strings.EqualFold(s, "unknown") {
		return 0, nil
	}
	f := strings.Fields(s)
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
		return 0, fmt.Errorf("link speed %q: want a rate like \"16.0 GT/s\"", s)
	}
	if v > maxGTps {
		return 0, fmt.Errorf("link speed %q: no PCIe generation runs faster than 128 GT/s (Gen7)", s)
	}
	if len(f) > 1 && !strings.HasPrefix(strings.ToUpper(f[1]), "GT/S") {
		return 0, fmt.Errorf("link speed %q: want a rate in GT/s", s)
	}
	return transferRateGen(v), nil
}

// ParseLinkWidth reads a lane count ("16", "x16"); 0 means unknown.
func ParseLinkWidth(s string) (int, error) {
	s = strings.TrimPrefix(strings.TrimSpace(strings.ToLower(s)), "x")
	if s == "" || s == "unknown" {
		return 0, nil
	}
	n, err := strconv.Atoi(s)
	if err == nil && n == 255 {
		return 0, nil // sysfs and NCCL write 255 for "unknown"
	}
	if err != nil || n < 0 || n > 32 {
		return 0, fmt.Errorf("link width %q: want a lane count 1-32", s)
	}
	return n, nil
}

// CPUArch identifies a CPU microarchitecture closely enough to pick its
// inter-socket link rate.
type CPUArch struct {
	Name string  // e.g. "Sapphire Rapids"
	Link string  // "UPI", "QPI" or "Infinity Fabric"
	GBps float64 // per direction between two sockets
}

// PCIe returns the PCIe lanes one CPU package of this architecture
// provides and their generation, from the vendors' datasheets: the most of
// the family (the widest SKU, the newer generation where a name covers two),
// so that a root complex capped by them is an upper bound, never tighter
// than the machine. lanes is 0 when the architecture is unknown.
func (a CPUArch) PCIe() (lanes, gen int) {
	switch a.Name {
	case "pre-Haswell":
		return 40, 3 // Sandy/Ivy Bridge-EP; Westmere's IOH had 36 Gen2
	case "Broadwell-class":
		return 40, 3
	case "Skylake/Cascade Lake":
		return 48, 3
	case "Ice Lake":
		return 64, 4
	case "Sapphire Rapids", "Emerald Rapids":
		return 80, 5
	case "Granite Rapids":
		return 96, 5
	case "Zen1/Zen2":
		return 128, 4 // Naples Gen3, Rome Gen4
	case "Zen3/Zen4":
		return 128, 5 // Milan Gen4, Genoa Gen5
	case "Zen5":
		return 128, 5
	}
	return 0, 0
}

// RootComplexGBps is the most a socket's root complex can carry in one
// direction: its CPU's PCIe lanes at their generation's rate. 0 means
// unknown.
func (a CPUArch) RootComplexGBps() float64 {
	lanes, gen := a.PCIe()
	if lanes == 0 {
		return 0
	}
	return pcieX16GBps[gen] * float64(lanes) / 16
}

// InterSocketLink returns the inter-socket link of a CPU given its vendor
// ("GenuineIntel", "AuthenticAMD"), family and model numbers as /proc/cpuinfo
// and NCCL XML give them. The rates are NCCL's per-direction defaults
// (docs/architecture.md section 3): Intel Broadwell 6, Skylake-class 10, Sapphire Rapids
// 22, Emerald Rapids 40; AMD Zen1/2 16, Zen3/4 24, Zen5 32. ok is false when
// the CPU is not recognised; the returned rate is then the Skylake-class
// value, the most common two-socket server.
func InterSocketLink(vendor string, family, model int) (arch CPUArch, ok bool) {
	switch {
	case strings.Contains(vendor, "Intel") && family == 6:
		switch model {
		case 63, 79, 86: // Haswell-EP, Broadwell-EP, Broadwell-DE
			return CPUArch{"Broadwell-class", "QPI", 6}, true
		case 85: // Skylake-SP, Cascade Lake-SP, Cooper Lake
			return CPUArch{"Skylake/Cascade Lake", "UPI", 10}, true
		case 106, 108: // Ice Lake-SP: NCCL has no entry; it uses the Skylake rate
			return CPUArch{"Ice Lake", "UPI", 10}, true
		case 143: // Sapphire Rapids
			return CPUArch{"Sapphire Rapids", "UPI", 22}, true
		case 207: // Emerald Rapids
			return CPUArch{"Emerald Rapids", "UPI", 40}, true
		case 173, 174, 175: // Granite Rapids, Sierra Forest: NCCL uses the Emerald Rapids rate
			return CPUArch{"Granite Rapids", "UPI", 40}, true
		case 44, 45, 46, 47, 62: // Westmere, Sandy Bridge, Nehalem-EX, Ivy Bridge
			return CPUArch{"pre-Haswell", "QPI", 6}, true
		}
	case strings.Contains(vendor, "AMD"):
		switch family {
		case 23: // 0x17: Zen1, Zen2
			return CPUArch{"Zen1/Zen2", "Infinity Fabric", 16}, true
		case 25: // 0x19: Zen3, Zen4
			return CPUArch{"Zen3/Zen4", "Infinity Fabric", 24}, true
		case 26: // 0x1A: Zen5
			return CPUArch{"Zen5", "Infinity Fabric", 32}, true
		}
	}
	return CPUArch{"unknown", "inter-socket", 10}, false
}

// InterSocketLinkByName guesses the architecture from a CPU model string as
// /proc/cpuinfo or a profile writes it ("Intel(R) Xeon(R) Gold 6426Y",
// "AMD EPYC 7742"). ok is false when the name says nothing recognisable.
// platformCodenames are the code names chipset and root-complex devices
// carry in lspci's and hwloc's names ("[AMD] Genoa CCP/PSP 4.0 Device",
// "Sapphire Rapids ... Root Port"), to each platform's inter-socket link.
var platformCodenames = []struct {
	name         string
	vendor       string
	family, mode int
}{
	{"turin", "AuthenticAMD", 26, 0}, {"genoa", "AuthenticAMD", 25, 0}, {"bergamo", "AuthenticAMD", 25, 0},
	{"siena", "AuthenticAMD", 25, 0}, {"milan", "AuthenticAMD", 25, 0}, {"rome", "AuthenticAMD", 23, 0},
	{"naples", "AuthenticAMD", 23, 0}, {"granite rapids", "GenuineIntel", 6, 173}, {"emerald rapids", "GenuineIntel", 6, 207},
	{"sapphire rapids", "GenuineIntel", 6, 143}, {"ice lake", "GenuineIntel", 6, 106}, {"cascade lake", "GenuineIntel", 6, 85},
	{"sky lake-e", "GenuineIntel", 6, 85}, {"skylake-e", "GenuineIntel", 6, 85},
}

// platformCodename finds a platform code name in a lower-case name and
// returns its link lookup, or nil.
func platformCodename(n string) func() (CPUArch, bool) {
	for _, p := range platformCodenames {
		if strings.Contains(n, p.name) {
			return func() (CPUArch, bool) { return InterSocketLink(p.vendor, p.family, p.mode) }
		}
	}
	return nil
}

func InterSocketLinkByName(name string) (CPUArch, bool) {
	n := strings.ToLower(name)
	intel := func(model int) (CPUArch, bool) { return InterSocketLink("GenuineIntel", 6, model) }
	amd := func(family int) (CPUArch, bool) { return InterSocketLink("AuthenticAMD", family, 0) }
	switch {
	case strings.Contains(n, "xeon"):
		num := xeonNumber(n)
		switch {
		case strings.Contains(n, "e5-") || strings.Contains(n, "e7-") || strings.Contains(n, " x5") || strings.Contains(n, " l5"):
			return intel(79)
		case num >= 6700 && num < 7000 && !strings.Contains(n, "w-"): // Xeon 6 (Granite Rapids)
			return intel(173)
		case len(strconv.Itoa(num)) == 4:
			// Scalable: 2nd digit is the generation (x1xx Skylake, x2xx
			// Cascade Lake, x3xx Ice Lake, x4xx Sapphire Rapids, x5xx Emerald Rapids).
			switch (num / 100) % 10 {
			case 1, 2:
				return intel(85)
			case 3:
				return intel(106)
			case 4:
				return intel(143)
			case 5:
				return intel(207)
			}
		}
	case platformCodename(n) != nil:
		return platformCodename(n)()
	case strings.Contains(n, "epyc") || strings.Contains(n, "threadripper"):
		num := firstModelNumber(n)
		// EPYC 7xx1 Zen1, 7xx2 Zen2, 7xx3 Zen3, 9xx4 Zen4, 9xx5 Zen5.
		switch num % 10 {
		case 1, 2:
			return amd(23)
		case 3, 4:
			return amd(25)
		case 5:
			return amd(26)
		}
	}
	return InterSocketLink("", 0, 0)
}

func xeonNumber(n string) int {
	for _, tier := range []string{"platinum", "gold", "silver", "bronze", "max"} {
		if i := strings.Index(n, tier); i >= 0 {
			return leadingNumber(n[i+len(tier):])
		}
	}
	return lastNumber(n)
}

func leadingNumber(s string) int {
	s = strings.TrimSpace(s)
	end := 0
	for end < len(s) && s[end] >= '0' && s[end] <= '9' {
		end++
	}
	v, _ := strconv.Atoi(s[:end])
	return v
}

// firstModelNumber returns the first 4-digit number in s (the model number
// of "AMD EPYC 9755 128-Core Processor"), or 0.
func firstModelNumber(s string) int {
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		if len(f) == 4 {
			v, _ := strconv.Atoi(f)
			return v
		}
	}
	return 0
}

func lastNumber(s string) int {
	best := 0
	for _, f := range strings.FieldsFunc(s, func(r rune) bool { return r < '0' || r > '9' }) {
		if len(f) >= 3 && len(f) <= 5 {
			best, _ = strconv.Atoi(f)
		}
	}
	return best
}

// NVLinkGBps returns the per-direction bandwidth of one NVLink lane group
// ("link") for a GPU of the given CUDA compute capability major*10+minor, as
// NCCL counts it: SM60 18, SM70/SM80 20, SM90 20.6, SM100 40.1 GB/s. ok is
// false when sm is unknown (then the SM80 rate is returned).
func NVLinkGBps(sm int) (float64, bool) {
	switch {
	case sm >= 100:
		return 40.1, true
	case sm >= 90:
		return 20.6, true
	case sm >= 70:
		return 20, true
	case sm >= 60:
		return 18, true
	}
	return 20, false
}

// XGMIGBps is the per-direction bandwidth of one xGMI link between AMD
// Instinct GPUs when the GPU generation is unknown: RCCL's MI300 figure
// (GFX94X_XGMI_WIDTH, 48 GB/s).
const XGMIGBps = 48.0

// XGMIGBpsForGCN returns the per-direction bandwidth of one xGMI link as
// RCCL's topology code sets it per GPU ISA (topo.h: VEGA_XGMI_WIDTH 24 for
// MI50/MI60 gfx906 and MI100 gfx908, MI200_XGMI_WIDTH 36 for gfx90a,
// GFX94X_XGMI_WIDTH 48 for MI300 gfx94x, 48 for gfx95x). gcn is what RCCL
// writes in the gcn attribute ("908", "gfx90a:sramecc+:xnack-"). ok is
// false when gcn is empty or not an Instinct ISA; XGMIGBps is returned then.
func XGMIGBpsForGCN(gcn string) (float64, bool) {
	g := strings.ToLower(strings.TrimSpace(gcn))
	g = strings.TrimPrefix(g, "gfx")
	if i := strings.IndexByte(g, ':'); i >= 0 {
		g = g[:i]
	}
	switch {
	case g == "906" || g == "908":
		return 24, true
	case g == "90a":
		return 36, true
	case strings.HasPrefix(g, "94") || strings.HasPrefix(g, "95"):
		return 48, true
	}
	return XGMIGBps, false
}

// NVLinkSMForDevice returns the compute capability (major*10+minor) of
// well-known NVIDIA datacenter GPUs by PCI device id, or 0.
func NVLinkSMForDevice(deviceID string) int {
	switch strings.ToLower(strings.TrimPrefix(deviceID, "0x")) {
	case "15f7", "15f8", "15f9": // P100
		return 60
	case "1db1", "1db4", "1db5", "1db6", "1db8", "1df6", "1df5": // V100
		return 70
	case "20b0", "20b1", "20b2", "20b3", "20b5", "20f1", "20f3", "20f5", "20b7": // A100, A30
		return 80
	case "2330", "2331", "2322", "2324", "2335", "2339", "233a", "233b": // H100, H800, H200
		return 90
	case "2901", "2941": // B200, GB200
		return 100
	}
	return 0
}
