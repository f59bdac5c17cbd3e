package topology

import (
	"strings"
	"testing"
)

// Tests for issue 13, "Machines read as they are".

func TestDiscoverCapacityFromMaximumLink(t *testing.T) {
	gen4, gen1, gen3 := "16.0 GT/s PCIe", "2.5 GT/s PCIe", "8.0 GT/s PCIe"
	cases := []struct {
		name                string
		port, gpu           fakeFunc
		wantGBps            float64
		wantGen, wantLanes  int
		wantCurGen, wantCur int // 0: current equals maximum, nothing kept
		wantNote            bool
	}{
		{"idle GPU in power save keeps its Gen4 x16 capacity",
			fakeFunc{speed: gen4, width: "16"}, fakeFunc{speed: gen1, width: "16", maxSpeed: gen4},
			24, 4, 16, 1, 16, true},
		{"link downtrained in width is modelled at its maximum",
			fakeFunc{speed: gen4, width: "16"}, fakeFunc{speed: gen4, width: "8", maxWidth: "16"},
			24, 4, 16, 4, 8, true},
		{"port's maximum bounds the link",
			fakeFunc{speed: gen3, width: "16"}, fakeFunc{speed: gen1, width: "16", maxSpeed: gen4},
			12, 3, 16, 1, 16, true},
		{"link at its maximum gets no note",
			fakeFunc{speed: gen4, width: "16"}, fakeFunc{speed: gen4, width: "16"},
			24, 4, 16, 0, 0, false},
		{"no maximum falls back to the current link",
			fakeFunc{}, fakeFunc{speed: gen3, width: "8", maxSpeed: "Unknown", maxWidth: "255"},
			6, 3, 8, 0, 0, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			port, gpu := tc.port, tc.gpu
			port.addr, port.class, port.vendor, port.device = "0000:00:01.0", "0x060400", "8086", "347a"
			gpu.addr, gpu.parent, gpu.class, gpu.vendor, gpu.device = "0000:01:00.0", "0000:00:01.0", "0x030200", "10de", "20f1"
			fs := fakeSysfs{numaNodes: 1, cpuModel: "Intel(R) Xeon(R) Gold 6426Y", funcs: []fakeFunc{port, gpu}}
			m := discoverAt(t, fs.write(t))
			assertSound(t, m)
			gpus := m.NodesOfKind(KindGPU)
			if len(gpus) != 1 {
				t.Fatalf("GPUs = %d, want 1", len(gpus))
			}
			up := m.UplinkOf(gpus[0].ID)
			if up.GBps != tc.wantGBps || up.PCIeGen != tc.wantGen || up.Lanes != tc.wantLanes {
				t.Errorf("uplink %+v, want Gen%d x%d %v GB/s", *up, tc.wantGen, tc.wantLanes, tc.wantGBps)
			}
			if up.CurrentPCIeGen != tc.wantCurGen || up.CurrentLanes != tc.wantCur {
				t.Errorf("current link Gen%d x%d, want Gen%d x%d", up.CurrentPCIeGen, up.CurrentLanes, tc.wantCurGen, tc.wantCur)
			}
			if got := hasNote(m, "below their maximum"); got != tc.wantNote {
				t.Errorf("note about links below maximum = %v, want %v; notes %q", got, tc.wantNote, m.Notes)
			}
		})
	}
}

func hasNote(m *Machine, s string) bool {
	for _, n := range m.Notes {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}
