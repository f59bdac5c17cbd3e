package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// Real CPUs' identities, as /proc/cpuinfo and golang.org/x/sys/cpu give
// them.
var (
	emeraldRapids = cpuID{vendor: "GenuineIntel", family: 6, model: 207, avx: true, avx2: true, fma: true, avx512: true}
	sapphire      = cpuID{vendor: "GenuineIntel", family: 6, model: 143, avx: true, avx2: true, fma: true, avx512: true}
	raptorLake    = cpuID{vendor: "GenuineIntel", family: 6, model: 183, avx: true, avx2: true, fma: true}
	rocketLake    = cpuID{vendor: "GenuineIntel", family: 6, model: 167, avx: true, avx2: true, fma: true, avx512: true}
	iceLakeSP     = cpuID{vendor: "GenuineIntel", family: 6, model: 106, avx: true, avx2: true, fma: true, avx512: true}
	zen3          = cpuID{vendor: "AuthenticAMD", family: 25, model: 1, avx: true, avx2: true, fma: true}
	zen4          = cpuID{vendor: "AuthenticAMD", family: 25, model: 17, avx: true, avx2: true, fma: true, avx512: true}
	zen5          = cpuID{vendor: "AuthenticAMD", family: 26, model: 2, avx: true, avx2: true, fma: true, avx512: true}
	oldAtom       = cpuID{vendor: "GenuineIntel", family: 6, model: 190}
)

func version(t *testing.T, s string) libVersion {
	t.Helper()
	v, ok := parseVersion(s)
	if !ok {
		t.Fatalf("parseVersion(%q) failed", s)
	}
	return v
}

// TestGenericCore: which releases send which CPUs to generic kernels,
// per OpenBLAS's driver/others/dynamic.c at each release.
func TestGenericCore(t *testing.T) {
	cases := []struct {
		name    string
		cpu     cpuID
		version string
		want    string
	}{
		{"Emerald Rapids on Debian 12's 0.3.21", emeraldRapids, "0.3.21", "Prescott"},
		{"Emerald Rapids once fixed, 0.3.25", emeraldRapids, "0.3.25", ""},
		{"Raptor Lake on 0.3.24", raptorLake, "0.3.24", "Prescott"},
		{"Sapphire Rapids is listed in 0.3.21", sapphire, "0.3.21", ""},
		{"Ice Lake SP is listed", iceLakeSP, "0.3.21", ""},
		{"Rocket Lake before 0.3.13 listed extended model 10", rocketLake, "0.3.10", "Prescott"},
		{"Rocket Lake from 0.3.13", rocketLake, "0.3.13", ""},
		{"Zen 3 is listed", zen3, "0.3.17", ""},
		{"Zen 4 is listed in 0.3.21", zen4, "0.3.21", ""},
		{"Zen 5 derived from its features from 0.3.19", zen5, "0.3.21", ""},
		{"Zen 5 before 0.3.19", zen5, "0.3.18", "Prescott"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := genericCore(version(t, c.version), c.cpu); got != c.want {
				t.Errorf("genericCore(%s, %s) = %q, want %q", c.version, c.cpu, got, c.want)
			}
		})
	}
}

func TestChooseCore(t *testing.T) {
	v21 := func(string) (libVersion, bool) { return libVersion{0, 3, 21}, true }
	unknown := func(string) (libVersion, bool) { return libVersion{}, false }
	cases := []struct {
		name          string
		probe         coreProbe
		wantSet, fell string
	}{
		{"gnnplan gives Emerald Rapids SkylakeX", coreProbe{cpu: emeraldRapids, version: v21}, "SkylakeX", "Prescott"},
		{"an AVX2 CPU that falls back gets Haswell", coreProbe{cpu: raptorLake, version: v21}, "Haswell", "Prescott"},
		{"the user's setting wins", coreProbe{cpu: emeraldRapids, user: "Haswell", userSet: true, version: v21}, "", ""},
		{"a library whose version is unknown is left alone", coreProbe{cpu: emeraldRapids, version: unknown}, "", ""},
		{"a CPU the library knows is left alone", coreProbe{cpu: zen5, version: v21}, "", ""},
		{"a CPU without AVX has nothing better than the fallback", coreProbe{cpu: oldAtom, version: v21}, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ch := c.probe.choose("libopenblas.so.0")
			if ch.set != c.wantSet || ch.fallback != c.fell {
				t.Errorf("choose: set %q instead of %q, want %q instead of %q", ch.set, ch.fallback, c.wantSet, c.fell)
			}
		})
	}
}

func TestDescribeCoreChoice(t *testing.T) {
	cases := []struct {
		name string
		ch   coreChoice
		want string
	}{
		{"chosen by gnnplan",
			coreChoice{set: "SkylakeX", fallback: "Prescott", version: libVersion{0, 3, 21}, cpu: emeraldRapids, ran: "SkylakeX"},
			"SkylakeX kernels, chosen by gnnplan: OpenBLAS 0.3.21 would run Prescott on Intel family 6 model 207 (0xCF)"},
		{"the library's own",
			coreChoice{cpu: zen5, ran: "Cooperlake"}, "Cooperlake kernels, the library's choice"},
		{"the library's own, generic, with a hint",
			coreChoice{cpu: emeraldRapids, ran: "Prescott"},
			"Prescott kernels, the library's choice; this CPU runs SkylakeX kernels (set OPENBLAS_CORETYPE=SkylakeX)"},
		{"the user's, slower than the CPU runs",
			coreChoice{user: "Haswell", userSet: true, cpu: zen5, ran: "Haswell"},
			"Haswell kernels, as OPENBLAS_CORETYPE=Haswell asks; this CPU runs SkylakeX kernels"},
		{"the user's", coreChoice{user: "zen", userSet: true, cpu: zen3, ran: "Zen"}, "Zen kernels, as OPENBLAS_CORETYPE=zen asks"},
		{"the user's, not found by the library",
			coreChoice{user: "Skylake", userSet: true, cpu: zen5, ran: "Cooperlake"},
			`Cooperlake kernels, though OPENBLAS_CORETYPE="Skylake" asks for Skylake`},
		{"a build that ignores the variable",
			coreChoice{set: "SkylakeX", fallback: "Prescott", cpu: emeraldRapids, ran: "Prescott"},
			"Prescott kernels: gnnplan asked for SkylakeX, which this build ignored"},
		{"not OpenBLAS", coreChoice{cpu: zen5}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := c.ch.describe(); got != c.want {
				t.Errorf("describe() = %q\nwant         %q", got, c.want)
			}
		})
	}
}

func TestParseCPUInfo(t *testing.T) {
	const info = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\nmodel name\t: INTEL(R) XEON(R) PLATINUM 8581C CPU @ 2.30GHz\n\nprocessor\t: 1\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 207\n"
	v, f, m := parseCPUInfo(strings.NewReader(info))
	if v != "GenuineIntel" || f != 6 || m != 207 {
		t.Errorf("parseCPUInfo = %q, %d, %d; want GenuineIntel, 6, 207", v, f, m)
	}
	if v, f, m := parseCPUInfo(strings.NewReader("garbage\n")); v != "" || f != 0 || m != 0 {
		t.Errorf("parseCPUInfo of garbage = %q, %d, %d; want nothing", v, f, m)
	}
}

// TestLibraryVersion: the release from the file name a soname resolves to,
// else from the configuration string inside the file.
func TestLibraryVersion(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	real := write("libopenblasp-r0.3.21.so", "\x7fELF")
	if err := os.Symlink(real, filepath.Join(dir, "libopenblas.so.0")); err != nil {
		t.Fatal(err)
	}
	inside := write("libopenblas.so.3", "\x7fELF\x00junk\x00OpenBLAS 0.3.26 DYNAMIC_ARCH NO_AFFINITY Haswell\x00")
	write("libcblas.so", "\x7fELF no version here")
	t.Setenv("LD_LIBRARY_PATH", "/nonexistent:"+dir)
	cases := []struct {
		name string
		want string // "" for none
	}{
		{"libopenblas.so.0", "0.3.21"},
		{real, "0.3.21"},
		{inside, "0.3.26"},
		{"libcblas.so", ""},
		{"libnosuchblas.so.9", ""},
		{filepath.Join(dir, "missing.so"), ""},
	}
	for _, c := range cases {
		v, ok := libraryVersion(c.name)
		if got := map[bool]string{true: v.String(), false: ""}[ok]; got != c.want {
			t.Errorf("libraryVersion(%q) = %q, want %q", c.name, got, c.want)
		}
	}
}

// fakeOpenBLAS is a shared library that answers as OpenBLAS 0.3.21 does:
// its constructor reads OPENBLAS_CORETYPE (else it "detects" Prescott),
// and its cblas_sgemm is the triple loop.
const fakeOpenBLAS = `
#include <stdlib.h>
#include <string.h>
static char core[64] = "Prescott";
static int nthreads = 4;
__attribute__((constructor)) static void init(void) {
	const char *e = getenv("OPENBLAS_CORETYPE");
	if (e != NULL && *e != 0) strncpy(core, e, sizeof core - 1);
}
char *openblas_get_config(void) { return "OpenBLAS 0.3.21 DYNAMIC_ARCH NO_AFFINITY"; }
char *openblas_get_corename(void) { return core; }
int openblas_get_parallel(void) { return 1; }
void openblas_set_num_threads(int n) { nthreads = n; }
int openblas_get_num_threads(void) { return nthreads; }
void cblas_sgemm(int order, int ta, int tb, int m, int n, int k, float alpha, const float *a, int lda,
		const float *b, int ldb, float beta, float *c, int ldc) {
	for (int i = 0; i < m; i++)
		for (int j = 0; j < n; j++) {
			float s = 0;
			for (int l = 0; l < k; l++)
				s += (ta == 112 ? a[l * lda + i] : a[i * lda + l]) * (tb == 112 ? b[j * ldb + l] : b[l * ldb + j]);
			c[i * ldc + j] = alpha * s + (beta == 0 ? 0 : beta * c[i * ldc + j]);
		}
}
`

// buildFakeOpenBLAS compiles fakeOpenBLAS into dir under name, skipping
// the test where there is no C compiler or no dlopen.
func buildFakeOpenBLAS(t *testing.T, dir, name string) string {
	t.Helper()
	if !haveDlopen {
		t.Skip("built without cgo: no dlopen")
	}
	cc, err := exec.LookPath("gcc")
	if err != nil {
		t.Skipf("no gcc to build a fake OpenBLAS: %v", err)
	}
	src := filepath.Join(dir, "fake.c")
	if err := os.WriteFile(src, []byte(fakeOpenBLAS), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, name)
	if out, err := exec.Command(cc, "-O1", "-shared", "-fPIC", "-o", lib, src).CombinedOutput(); err != nil {
		t.Fatalf("gcc: %v\n%s", err, out)
	}
	return lib
}

// TestLoadChoosesCore loads a fake OpenBLAS 0.3.21 for fake CPUs: gnnplan
// sets OPENBLAS_CORETYPE for the library's constructor only where it
// would fall back, leaves the user's setting alone, puts the environment
// back, and the library's name says who chose.
func TestLoadChoosesCore(t *testing.T) {
	cases := []struct {
		name     string
		cpu      cpuID
		user     string // OPENBLAS_CORETYPE, "" unset
		wantName string
	}{
		{"Emerald Rapids gets SkylakeX from gnnplan", emeraldRapids, "",
			"(pthread, SkylakeX kernels, chosen by gnnplan: OpenBLAS 0.3.21 would run Prescott on Intel family 6 model 207 (0xCF))"},
		{"the user's setting wins", emeraldRapids, "Haswell",
			"(pthread, Haswell kernels, as OPENBLAS_CORETYPE=Haswell asks; this CPU runs SkylakeX kernels)"},
		{"a CPU the library knows: its own choice", iceLakeSP, "",
			"(pthread, Prescott kernels, the library's choice; this CPU runs SkylakeX kernels (set OPENBLAS_CORETYPE=SkylakeX))"},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			// A directory of its own each: dlopen loads a file once.
			dir := filepath.Join(t.TempDir(), string(rune('a'+i)))
			if err := os.Mkdir(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			path := buildFakeOpenBLAS(t, dir, "libopenblasp-r0.3.21.so")
			if c.user != "" {
				t.Setenv(coreTypeEnv, c.user)
			} else {
				t.Setenv(coreTypeEnv, "")
				os.Unsetenv(coreTypeEnv)
			}
			probe := coreProbe{cpu: c.cpu, user: c.user, userSet: c.user != "", version: libraryVersion}
			lib, _, err := loadBLASFrom(path, nil, probe)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(lib.name(), c.wantName) {
				t.Errorf("name %q\nwant it to hold %q", lib.name(), c.wantName)
			}
			if got, set := os.LookupEnv(coreTypeEnv); got != c.user || set != (c.user != "") {
				t.Errorf("after loading, %s=%q (set %v), want it as it was: %q", coreTypeEnv, got, set, c.user)
			}
			if n := lib.(cLib).threads(); n != 1 {
				t.Errorf("the library is left on %d threads of its own, want 1", n)
			}
			if i > 0 {
				return
			}
			// A product cut in tiles and chunks of k, on the fake library.
			g := gemmCase{transA: true, m: 64, n: 600, k: 8400, padC: 3, alpha: 1, beta: 0.5}
			if s := planGemm(g.m, g.n, g.k); s.pieces(g.m, g.n, g.k) != 9 {
				t.Fatalf("split %+v: %d pieces, want 3 column tiles x 3 chunks of k", s, s.pieces(g.m, g.n, g.k))
			}
			a, lda, b, ldb, cm, ldc := gemmOperands(g, rand.New(rand.NewPCG(8, 9)))
			want, bound := naiveGemm(g, a, lda, b, ldb, cm, ldc)
			lib.sgemm(2, g.transA, g.transB, g.m, g.n, g.k, g.alpha, a, lda, b, ldb, g.beta, cm, ldc)
			for r := range g.m {
				for j := range g.n {
					if d := math.Abs(float64(cm[r*ldc+j]) - want[r*g.n+j]); !(d <= bound[r*g.n+j]) {
						t.Fatalf("C(%d, %d) = %g, want %g", r, j, cm[r*ldc+j], want[r*g.n+j])
					}
				}
			}
		})
	}
}
