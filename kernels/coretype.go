package kernels

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"

	"golang.org/x/sys/cpu"
)

// coreTypeEnv is the variable OpenBLAS's DYNAMIC_ARCH builds read, once,
// when the library is loaded, to override their choice of kernels.
const coreTypeEnv = "OPENBLAS_CORETYPE"

// cpuID is what choosing OpenBLAS's kernels needs to know of the CPU.
type cpuID struct {
	// vendor is CPUID's vendor string ("GenuineIntel", "AuthenticAMD").
	vendor string
	// family and model are the display family and model (extended
	// fields folded in, as /proc/cpuinfo prints them: 6 and 207 for
	// Emerald Rapids, 26 and 2 for Zen 5).
	family, model int
	// The instruction sets, each only when the OS saves its registers.
	// avx512 means F, CD, BW, DQ and VL, what the SkylakeX kernels use.
	avx, avx2, fma, avx512 bool
}

func (c cpuID) String() string {
	v := strings.TrimSuffix(strings.TrimPrefix(c.vendor, "Genuine"), "Authentic")
	return fmt.Sprintf("%s family %d model %d (0x%X)", v, c.family, c.model, c.model)
}

// hostCPU reads this machine's CPU: features from golang.org/x/sys/cpu,
// vendor, family and model from /proc/cpuinfo (zero when unreadable).
func hostCPU() cpuID {
	c := cpuID{
		avx:    cpu.X86.HasAVX,
		avx2:   cpu.X86.HasAVX2,
		fma:    cpu.X86.HasFMA,
		avx512: cpu.X86.HasAVX512F && cpu.X86.HasAVX512CD && cpu.X86.HasAVX512BW && cpu.X86.HasAVX512DQ && cpu.X86.HasAVX512VL,
	}
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return c
	}
	defer f.Close()
	c.vendor, c.family, c.model = parseCPUInfo(f)
	return c
}

// parseCPUInfo reads the first processor's vendor_id, cpu family and
// model from /proc/cpuinfo.
func parseCPUInfo(r interface{ Read([]byte) (int, error) }) (vendor string, family, model int) {
	sc := bufio.NewScanner(r)
	seen := 0
	for sc.Scan() && seen < 3 {
		key, val, ok := strings.Cut(sc.Text(), ":")
		if !ok {
			continue
		}
		key, val = strings.TrimSpace(key), strings.TrimSpace(val)
		switch key {
		case "vendor_id":
			vendor = val
			seen++
		case "cpu family":
			family, _ = strconv.Atoi(val)
			seen++
		case "model":
			model, _ = strconv.Atoi(val)
			seen++
		}
	}
	return vendor, family, model
}

// libVersion is an OpenBLAS release, 0.3.21 as {0, 3, 21}.
type libVersion [3]int

func (v libVersion) less(o libVersion) bool {
	for i := range v {
		if v[i] != o[i] {
			return v[i] < o[i]
		}
	}
	return false
}

func (v libVersion) String() string { return fmt.Sprintf("%d.%d.%d", v[0], v[1], v[2]) }

var versionRE = regexp.MustCompile(`(\d+)\.(\d+)\.(\d+)`)

func parseVersion(s string) (libVersion, bool) {
	g := versionRE.FindStringSubmatch(s)
	if g == nil {
		return libVersion{}, false
	}
	var v libVersion
	for i := range v {
		v[i], _ = strconv.Atoi(g[i+1])
	}
	return v, true
}

// genericCore is the core OpenBLAS release v's own detection picks for c
// when it is a generic fallback below what c runs, or "" when it picks
// (or, for CPUs it does not list, derives from the features) kernels
// made for c. Only the detection's known gaps are modelled, all in
// driver/others/dynamic.c's get_coretype:
//   - before 0.3.25 an Intel family-6 CPU whose extended model is past the
//     last the switch lists (10 from 0.3.13, 9 before) falls through into
//     family 15's case and gets Prescott (OpenBLAS issue 4267, PR 4268):
//     Raptor Lake, Emerald Rapids, Granite Rapids and later;
//   - before 0.3.19 a CPU the tables do not list gets Prescott instead of
//     kernels chosen by its features: AMD past the last extended family
//     listed (10 from 0.3.13, 9 before), Zen 5 and later.
func genericCore(v libVersion, c cpuID) string {
	if runtime.GOARCH != "amd64" {
		return ""
	}
	lastListed := 10
	if v.less(libVersion{0, 3, 13}) {
		lastListed = 9
	}
	switch c.vendor {
	case "GenuineIntel":
		if c.family == 6 && c.model>>4 > lastListed && v.less(libVersion{0, 3, 25}) {
			return "Prescott"
		}
	case "AuthenticAMD", "HygonGenuine":
		if c.family > 0xf+lastListed && v.less(libVersion{0, 3, 19}) {
			return "Prescott"
		}
	}
	return ""
}

// bestCore is the OpenBLAS core type to give a CPU with c's features:
// the widest kernels it runs. Measured (docs/benchmarks.md): on Zen 5 the
// SkylakeX kernels run the trainer's products 1.6-1.8x faster than the
// Haswell or Zen ones; on Emerald Rapids 4.6x faster than Prescott.
// Cooperlake's single-precision kernels are SkylakeX's, and 0.3.21 cannot
// be asked for them by name.
func bestCore(c cpuID) string {
	switch {
	case c.avx512:
		return "SkylakeX"
	case c.avx2 && c.fma:
		return "Haswell"
	case c.avx:
		return "Sandybridge"
	}
	return ""
}

// coreProbe is what choosing a library's kernels reads: the CPU, the
// user's OPENBLAS_CORETYPE, and a library's version.
type coreProbe struct {
	cpu cpuID
	// user is OPENBLAS_CORETYPE when set (userSet), which always wins.
	user    string
	userSet bool
	// version returns the OpenBLAS release a library name loads, or
	// false when it cannot tell.
	version func(name string) (libVersion, bool)
}

// hostCoreProbe reads this machine and process.
func hostCoreProbe() coreProbe {
	// An empty value asks for nothing (OpenBLAS finds no core of that
	// name and detects its own).
	user, set := os.LookupEnv(coreTypeEnv)
	set = set && user != ""
	return coreProbe{cpu: hostCPU(), user: user, userSet: set, version: libraryVersion}
}

// coreChoice records who chose a library's kernels and why.
type coreChoice struct {
	// set is the core type gnnplan gave the library ("": none).
	set string
	// user is the user's OPENBLAS_CORETYPE, when userSet.
	user    string
	userSet bool
	// fallback is what the library would have run instead of set.
	fallback string
	version  libVersion
	cpu      cpuID
	// ran is the core the library reports running, "" when it does not
	// say (not OpenBLAS).
	ran string
}

// choose decides, before the library name is loaded, whether gnnplan
// must pick its kernels.
func (p coreProbe) choose(name string) coreChoice {
	ch := coreChoice{user: p.user, userSet: p.userSet, cpu: p.cpu}
	if p.userSet || p.version == nil {
		return ch
	}
	v, ok := p.version(name)
	if !ok {
		return ch
	}
	ch.version = v
	if g := genericCore(v, p.cpu); g != "" {
		if best := bestCore(p.cpu); best != "" && best != g {
			ch.set, ch.fallback = best, g
		}
	}
	return ch
}

// describe says which kernels run and who chose them, for the library's
// name: "SkylakeX kernels, chosen by gnnplan: OpenBLAS 0.3.21 would run
// Prescott on Intel family 6 model 207 (0xCF)".
func (ch coreChoice) describe() string {
	if ch.ran == "" {
		return ""
	}
	k := ch.ran + " kernels"
	switch {
	case ch.userSet && strings.EqualFold(ch.user, ch.ran):
		if best := bestCore(ch.cpu); coreRank(best) > coreRank(ch.ran) {
			return fmt.Sprintf("%s, as %s=%s asks; this CPU runs %s kernels", k, coreTypeEnv, ch.user, best)
		}
		return fmt.Sprintf("%s, as %s=%s asks", k, coreTypeEnv, ch.user)
	case ch.userSet:
		return fmt.Sprintf("%s, though %s=%q asks for %s", k, coreTypeEnv, ch.user, ch.user)
	case ch.set != "" && strings.EqualFold(ch.set, ch.ran):
		return fmt.Sprintf("%s, chosen by gnnplan: OpenBLAS %s would run %s on %s", k, ch.version, ch.fallback, ch.cpu)
	case ch.set != "":
		return fmt.Sprintf("%s: gnnplan asked for %s, which this build ignored", k, ch.set)
	}
	if best := bestCore(ch.cpu); coreRank(best) > coreRank(ch.ran) {
		return fmt.Sprintf("%s, the library's choice; this CPU runs %s kernels (set %s=%s)", k, best, coreTypeEnv, best)
	}
	return k + ", the library's choice"
}

// coreRank orders OpenBLAS's x86-64 core types by the vector instructions
// their kernels use: 0 for the pre-AVX ones and any it does not know.
func coreRank(name string) int {
	switch strings.ToLower(name) {
	case "sandybridge", "bulldozer", "piledriver", "steamroller":
		return 1
	case "haswell", "zen", "excavator":
		return 2
	case "skylakex", "cooperlake", "sapphirerapids":
		return 3
	}
	return 0
}

// setEnv sets an environment variable and returns what puts it back.
func setEnv(key, val string) (restore func()) {
	old, had := os.LookupEnv(key)
	os.Setenv(key, val)
	return func() {
		if had {
			os.Setenv(key, old)
		} else {
			os.Unsetenv(key)
		}
	}
}

var releaseRE = regexp.MustCompile(`-r(\d+\.\d+\.\d+)`)

// libraryVersion returns the OpenBLAS release a library name loads,
// without loading it: from the file name the name resolves to
// (libopenblasp-r0.3.21.so), else from the "OpenBLAS 0.3.21" its
// configuration string holds.
func libraryVersion(name string) (libVersion, bool) {
	path := findLibrary(name)
	if path == "" {
		return libVersion{}, false
	}
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	if g := releaseRE.FindStringSubmatch(filepath.Base(path)); g != nil {
		return parseVersion(g[1])
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return libVersion{}, false
	}
	if i := bytes.Index(data, []byte("OpenBLAS 0.")); i >= 0 {
		return parseVersion(string(data[i+len("OpenBLAS ") : min(len(data), i+len("OpenBLAS ")+12)]))
	}
	return libVersion{}, false
}

// findLibrary returns the file the dynamic linker would load for name, or
// "": name itself when it holds a '/', else the first directory of
// LD_LIBRARY_PATH, /etc/ld.so.conf.d and the system's that has it.
func findLibrary(name string) string {
	if strings.Contains(name, "/") {
		return name
	}
	dirs := filepath.SplitList(os.Getenv("LD_LIBRARY_PATH"))
	confs, _ := filepath.Glob("/etc/ld.so.conf.d/*.conf")
	for _, conf := range confs {
		data, err := os.ReadFile(conf)
		if err != nil {
			continue
		}
		for line := range strings.Lines(string(data)) {
			line = strings.TrimSpace(line)
			if strings.HasPrefix(line, "/") {
				dirs = append(dirs, line)
			}
		}
	}
	dirs = append(dirs, "/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
	for _, d := range dirs {
		p := filepath.Join(d, name)
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}
