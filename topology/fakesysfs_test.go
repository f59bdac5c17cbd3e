package topology

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fixtureDir holds copies of the shared real-world topology files
// (testdata/topology/SOURCES.md says where each comes from), so tests run
// on a clean clone.
var fixtureDir = filepath.Join("testdata", "topology")

func fixture(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(fixtureDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("fixture %s not available (%v); copy it from shared/fixtures/topology into topology/testdata/topology", name, err)
	}
	return p
}

// unpackSnapshot extracts a sysfs snapshot archive (with its symlinks)
// into a temporary directory, as Import does, and returns the directory
// holding sys/.
func unpackSnapshot(t testing.TB, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	root, err := extractSnapshot(context.Background(), path, f, t.TempDir(), defaultSnapshotLimits())
	if err != nil {
		t.Fatalf("unpack %s: %v", path, err)
	}
	return root
}

// fakeFunc is one PCI function of a fake sysfs tree.
type fakeFunc struct {
	addr, parent   string // parent "" = on root bus
	class          string // "0x030200"
	vendor, device string
	numa           int
	speed          string // current_link_speed, "" = absent
	width          string
	maxSpeed       string // max_link_speed, "" = same as speed
	maxWidth       string // max_link_width, "" = same as width
	block          string // a disk behind this function (e.g. "nvme0n1")
	secondaryBus   int    // bridges: secondary_bus_number, 0 = not written
	hidden         bool   // on the device path of its children, but not listed in sys/bus/pci/devices
}

// fakeSysfs writes a minimal sysfs tree: NUMA nodes with CPUs and memory,
// /proc/cpuinfo, PCI functions with their files and symlinks, and block
// devices. It is what discovery reads, nothing more.
type fakeSysfs struct {
	numaNodes int
	packages  int // CPU packages the NUMA nodes split evenly into; 0 = one per node
	cpuModel  string
	funcs     []fakeFunc
}

func (fs fakeSysfs) write(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	put := func(rel, content string) {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	link := func(rel, target string) {
		p := filepath.Join(root, rel)
		os.MkdirAll(filepath.Dir(p), 0o755)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	var cpuinfo strings.Builder
	for n := 0; n < fs.numaNodes; n++ {
		put(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", n), fmt.Sprintf("%d-%d", n*4, n*4+3))
		put(fmt.Sprintf("sys/devices/system/node/node%d/meminfo", n), fmt.Sprintf("Node %d MemTotal:       134217728 kB", n))
		for c := n * 4; c < n*4+4; c++ {
			put(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/core_id", c), fmt.Sprint(c%4))
			pkg := n
			if fs.packages > 0 {
				pkg = n * fs.packages / fs.numaNodes
			}
			put(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", c), fmt.Sprint(pkg))
			fmt.Fprintf(&cpuinfo, "processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: %s\n\n", c, fs.cpuModel)
		}
	}
	put("proc/cpuinfo", cpuinfo.String())
	put("proc/meminfo", fmt.Sprintf("MemTotal:       %d kB", fs.numaNodes*134217728))
	paths := map[string]string{}
	for _, f := range fs.funcs {
		bus := "pci" + f.addr[:7]
		dev := "sys/devices/" + bus + "/" + f.addr
		if f.parent != "" {
			dev = paths[f.parent] + "/" + f.addr
		}
		paths[f.addr] = dev
		if f.hidden {
			os.MkdirAll(filepath.Join(root, dev), 0o755)
			continue
		}
		put(dev+"/class", f.class)
		put(dev+"/vendor", "0x"+f.vendor)
		put(dev+"/device", "0x"+f.device)
		put(dev+"/numa_node", fmt.Sprint(f.numa))
		if f.speed != "" {
			put(dev+"/current_link_speed", f.speed)
		}
		if f.width != "" {
			put(dev+"/current_link_width", f.width)
		}
		if ms := firstNonEmpty(f.maxSpeed, f.speed); ms != "" {
			put(dev+"/max_link_speed", ms)
		}
		if mw := firstNonEmpty(f.maxWidth, f.width); mw != "" {
			put(dev+"/max_link_width", mw)
		}
		if f.secondaryBus > 0 {
			put(dev+"/secondary_bus_number", fmt.Sprint(f.secondaryBus))
		}
		rel, _ := filepath.Rel(filepath.Join(root, "sys/bus/pci/devices"), filepath.Join(root, dev))
		link("sys/bus/pci/devices/"+f.addr, rel)
		if f.block != "" {
			put(dev+"/block/"+f.block+"/size", "7501476528")
			relb, _ := filepath.Rel(filepath.Join(root, "sys/block"), filepath.Join(root, dev, "block", f.block))
			link("sys/block/"+f.block, relb)
		}
	}
	return root
}

// serverSysfs is a 2-socket server: on socket 0 a root port with a PCIe
// switch holding 2 GPUs and 2 NVMe SSDs, a cascaded switch below it with
// nGPU more GPUs; on socket 1 root ports with NVMe SSDs. It grows to about
// 100 devices with extra.
func serverSysfs(extraNVMe int) fakeSysfs {
	gen4 := "16.0 GT/s PCIe"
	fs := fakeSysfs{numaNodes: 2, cpuModel: "Intel(R) Xeon(R) Gold 6426Y"}
	add := func(f fakeFunc) { fs.funcs = append(fs.funcs, f) }
	add(fakeFunc{addr: "0000:00:00.0", class: "0x060000", vendor: "8086", device: "09a2", numa: 0})
	add(fakeFunc{addr: "0000:00:01.0", class: "0x060400", vendor: "8086", device: "347a", numa: 0, speed: gen4, width: "16"})
	// switch 0: upstream port 01:00.0, downstream ports 02:0x.0
	add(fakeFunc{addr: "0000:01:00.0", parent: "0000:00:01.0", class: "0x060400", vendor: "1000", device: "c010", numa: 0, speed: gen4, width: "16"})
	for i, kind := range []string{"gpu", "gpu", "nvme", "nvme", "sw"} {
		dp := fmt.Sprintf("0000:02:%02x.0", i)
		add(fakeFunc{addr: dp, parent: "0000:01:00.0", class: "0x060400", vendor: "1000", device: "c010", numa: 0, speed: gen4, width: "16"})
		ep := fmt.Sprintf("0000:%02x:00.0", 3+i)
		switch kind {
		case "gpu":
			add(fakeFunc{addr: ep, parent: dp, class: "0x030200", vendor: "10de", device: "20f1", numa: 0, speed: gen4, width: "16"})
		case "nvme":
			add(fakeFunc{addr: ep, parent: dp, class: "0x010802", vendor: "8086", device: "0b60", numa: 0, speed: gen4, width: "4", block: fmt.Sprintf("nvme%dn1", i)})
		case "sw":
			// cascaded switch 1 at bus 07 with two GPUs below
			add(fakeFunc{addr: "0000:07:00.0", parent: dp, class: "0x060400", vendor: "1000", device: "c010", numa: 0, speed: gen4, width: "16"})
			for j := 0; j < 2; j++ {
				dp2 := fmt.Sprintf("0000:08:%02x.0", j)
				add(fakeFunc{addr: dp2, parent: "0000:07:00.0", class: "0x060400", vendor: "1000", device: "c010", numa: 0, speed: gen4, width: "16"})
				add(fakeFunc{addr: fmt.Sprintf("0000:%02x:00.0", 9+j), parent: dp2, class: "0x030200", vendor: "10de", device: "20f1", numa: 0, speed: gen4, width: "16"})
			}
		}
	}
	add(fakeFunc{addr: "0000:80:00.0", class: "0x060000", vendor: "8086", device: "09a2", numa: 1})
	for i := 0; i < extraNVMe; i++ {
		rp := fmt.Sprintf("0000:80:%02x.0", 1+i%30)
		if i < 30 {
			add(fakeFunc{addr: rp, class: "0x060400", vendor: "8086", device: "347a", numa: 1, speed: gen4, width: "4"})
		}
		add(fakeFunc{addr: fmt.Sprintf("0000:%02x:00.%d", 0x81+i%30, i/30), parent: rp, class: "0x010802", vendor: "8086", device: "0b60", numa: 1,
			speed: gen4, width: "4", block: fmt.Sprintf("nvme%dn1", 10+i)})
	}
	return fs
}

// assertSound checks what every machine must satisfy whatever built it:
// the model's invariants and a finite positive capacity on every link.
func assertSound(t testing.TB, m *Machine) {
	t.Helper()
	if err := m.Validate(); err != nil {
		t.Errorf("Validate: %v", err)
	}
	for i, l := range m.Links {
		if !(l.GBps > 0) || math.IsInf(l.GBps, 0) {
			t.Errorf("links[%d] %s->%s (%s): GBps %v, want > 0", i, l.From, l.To, l.Kind, l.GBps)
		}
	}
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
