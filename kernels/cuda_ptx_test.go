package kernels

import (
	"crypto/sha256"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/kernels/internal/cudac"
)

// TestPTXIsCurrent fails when kernels.cu changed after cuda_kernels.ptx
// was generated: run `make ptx`.
func TestPTXIsCurrent(t *testing.T) {
	want := fmt.Sprintf("kernels/internal/cudac/kernels.cu sha256 %x", sha256.Sum256([]byte(cudac.Source)))
	lines := strings.SplitN(cudaPTX, "\n", 3)
	if len(lines) < 3 || !strings.Contains(lines[1], want) {
		t.Errorf("cuda_kernels.ptx was not generated from this kernels.cu (want a line with %q): run `make ptx`", want)
	}
}

// TestPTXHasEveryKernel checks that the PTX defines exactly the kernels
// the Go side launches, each with gp_args' 24 parameters: 8 pointers and
// 8 integers (.u64 or .s64: 8 bytes), then 8 doubles.
func TestPTXHasEveryKernel(t *testing.T) {
	entry := regexp.MustCompile(`(?m)^\.visible \.entry (\w+)\(([^)]*)\)`)
	param := regexp.MustCompile(`\.param \.(\w+) (\w+)_param_(\d+)`)
	found := map[string]bool{}
	for _, m := range entry.FindAllStringSubmatch(cudaPTX, -1) {
		name := m[1]
		found[name] = true
		ps := param.FindAllStringSubmatch(m[2], -1)
		if len(ps) != gpArgsFields {
			t.Errorf("kernel %s has %d parameters, the Go side passes %d", name, len(ps), gpArgsFields)
			continue
		}
		for i, p := range ps {
			want := "u64 or s64"
			ok := p[1] == "u64" || p[1] == "s64"
			if i >= 16 {
				want, ok = "f64", p[1] == "f64"
			}
			if !ok || p[2] != name || p[3] != fmt.Sprint(i) {
				t.Errorf("kernel %s parameter %d is .%s %s_param_%s, want .%s", name, i, p[1], p[2], p[3], want)
			}
		}
	}
	if n := strings.Count(cudaPTX, ".entry "); n != len(found) {
		t.Errorf("%d entries in the PTX, %d parsed", n, len(found))
	}
	for _, name := range kernelNames {
		if !found[name] {
			t.Errorf("kernel %s is not in cuda_kernels.ptx", name)
		}
		delete(found, name)
	}
	for name := range found {
		t.Errorf("cuda_kernels.ptx defines %s, which the Go side never launches", name)
	}
	if !strings.Contains(cudaPTX, ".target sm_70") {
		t.Error("the PTX does not target compute capability 7.0 (sm_70)")
	}
}
