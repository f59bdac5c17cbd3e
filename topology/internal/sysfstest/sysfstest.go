// Package sysfstest serves the tests of package topology and its
// importers: fake sysfs trees written to a temporary directory, the real
// topology fixtures in topology/testdata, and tar archives built in memory.
// It imports nothing from topology, so topology's own tests can use it.
package sysfstest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// FixtureDir holds copies of the shared real-world topology files
// (topology/testdata/topology/SOURCES.md says where each comes from), so
// tests run on a clean clone. It is relative to the test's package
// directory where it can be.
var FixtureDir = filepath.Join(testdataDir(), "topology")

// PCIIDs is a two-line excerpt of the pci.ids database
// (topology/testdata/pci.ids), for PCIDB_PATH.
var PCIIDs = filepath.Join(testdataDir(), "pci.ids")

// testdataDir is topology/testdata, found from this file's path.
func testdataDir() string {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "testdata"
	}
	dir := filepath.Join(filepath.Dir(file), "..", "..", "testdata")
	if wd, err := os.Getwd(); err == nil {
		if rel, err := filepath.Rel(wd, dir); err == nil {
			return rel
		}
	}
	return dir
}

// Fixture returns the path of the fixture name, skipping the test when it
// is not there.
func Fixture(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(FixtureDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("fixture %s not available (%v); copy it from shared/fixtures/topology into topology/testdata/topology", name, err)
	}
	return p
}

// Func is one PCI function of a fake sysfs tree.
type Func struct {
	Addr, Parent   string // Parent "" = on a root bus
	Class          string // "0x030200"
	Vendor, Device string
	NUMA           int
	Speed          string // current_link_speed, "" = absent
	Width          string
	MaxSpeed       string // max_link_speed, "" = same as speed
	MaxWidth       string // max_link_width, "" = same as width
	Block          string // a disk behind this function (e.g. "nvme0n1")
	SecondaryBus   int    // bridges: secondary_bus_number, 0 = not written
	Hidden         bool   // on the device path of its children, but not listed in sys/bus/pci/devices
}

// FS is a minimal sysfs tree: NUMA nodes with CPUs and memory,
// /proc/cpuinfo, PCI functions with their files and symlinks, and block
// devices. It is what discovery reads, nothing more.
type FS struct {
	NUMANodes int
	Packages  int // CPU packages the NUMA nodes split evenly into; 0 = one per node
	CPUModel  string
	Funcs     []Func
}

// Write writes the tree under a new temporary directory and returns it.
func (fs FS) Write(t testing.TB) string {
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
	for n := 0; n < fs.NUMANodes; n++ {
		put(fmt.Sprintf("sys/devices/system/node/node%d/cpulist", n), fmt.Sprintf("%d-%d", n*4, n*4+3))
		put(fmt.Sprintf("sys/devices/system/node/node%d/meminfo", n), fmt.Sprintf("Node %d MemTotal:       134217728 kB", n))
		for c := n * 4; c < n*4+4; c++ {
			put(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/core_id", c), fmt.Sprint(c%4))
			pkg := n
			if fs.Packages > 0 {
				pkg = n * fs.Packages / fs.NUMANodes
			}
			put(fmt.Sprintf("sys/devices/system/cpu/cpu%d/topology/physical_package_id", c), fmt.Sprint(pkg))
			fmt.Fprintf(&cpuinfo, "processor\t: %d\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 143\nmodel name\t: %s\n\n", c, fs.CPUModel)
		}
	}
	put("proc/cpuinfo", cpuinfo.String())
	put("proc/meminfo", fmt.Sprintf("MemTotal:       %d kB", fs.NUMANodes*134217728))
	paths := map[string]string{}
	for _, f := range fs.Funcs {
		bus := "pci" + f.Addr[:7]
		dev := "sys/devices/" + bus + "/" + f.Addr
		if f.Parent != "" {
			dev = paths[f.Parent] + "/" + f.Addr
		}
		paths[f.Addr] = dev
		if f.Hidden {
			os.MkdirAll(filepath.Join(root, dev), 0o755)
			continue
		}
		put(dev+"/class", f.Class)
		put(dev+"/vendor", "0x"+f.Vendor)
		put(dev+"/device", "0x"+f.Device)
		put(dev+"/numa_node", fmt.Sprint(f.NUMA))
		if f.Speed != "" {
			put(dev+"/current_link_speed", f.Speed)
		}
		if f.Width != "" {
			put(dev+"/current_link_width", f.Width)
		}
		if ms := firstNonEmpty(f.MaxSpeed, f.Speed); ms != "" {
			put(dev+"/max_link_speed", ms)
		}
		if mw := firstNonEmpty(f.MaxWidth, f.Width); mw != "" {
			put(dev+"/max_link_width", mw)
		}
		if f.SecondaryBus > 0 {
			put(dev+"/secondary_bus_number", fmt.Sprint(f.SecondaryBus))
		}
		rel, _ := filepath.Rel(filepath.Join(root, "sys/bus/pci/devices"), filepath.Join(root, dev))
		link("sys/bus/pci/devices/"+f.Addr, rel)
		if f.Block != "" {
			put(dev+"/block/"+f.Block+"/size", "7501476528")
			relb, _ := filepath.Rel(filepath.Join(root, "sys/block"), filepath.Join(root, dev, "block", f.Block))
			link("sys/block/"+f.Block, relb)
		}
	}
	return root
}

// Server is a 2-socket server: on socket 0 a root port with a PCIe
// switch holding 2 GPUs and 2 NVMe SSDs, a cascaded switch below it with
// nGPU more GPUs; on socket 1 root ports with NVMe SSDs. It grows to about
// 100 devices with extra.
func Server(extraNVMe int) FS {
	gen4 := "16.0 GT/s PCIe"
	fs := FS{NUMANodes: 2, CPUModel: "Intel(R) Xeon(R) Gold 6426Y"}
	add := func(f Func) { fs.Funcs = append(fs.Funcs, f) }
	add(Func{Addr: "0000:00:00.0", Class: "0x060000", Vendor: "8086", Device: "09a2", NUMA: 0})
	add(Func{Addr: "0000:00:01.0", Class: "0x060400", Vendor: "8086", Device: "347a", NUMA: 0, Speed: gen4, Width: "16"})
	// switch 0: upstream port 01:00.0, downstream ports 02:0x.0
	add(Func{Addr: "0000:01:00.0", Parent: "0000:00:01.0", Class: "0x060400", Vendor: "1000", Device: "c010", NUMA: 0, Speed: gen4, Width: "16"})
	for i, kind := range []string{"gpu", "gpu", "nvme", "nvme", "sw"} {
		dp := fmt.Sprintf("0000:02:%02x.0", i)
		add(Func{Addr: dp, Parent: "0000:01:00.0", Class: "0x060400", Vendor: "1000", Device: "c010", NUMA: 0, Speed: gen4, Width: "16"})
		ep := fmt.Sprintf("0000:%02x:00.0", 3+i)
		switch kind {
		case "gpu":
			add(Func{Addr: ep, Parent: dp, Class: "0x030200", Vendor: "10de", Device: "20f1", NUMA: 0, Speed: gen4, Width: "16"})
		case "nvme":
			add(Func{Addr: ep, Parent: dp, Class: "0x010802", Vendor: "8086", Device: "0b60", NUMA: 0, Speed: gen4, Width: "4", Block: fmt.Sprintf("nvme%dn1", i)})
		case "sw":
			// cascaded switch 1 at bus 07 with two GPUs below
			add(Func{Addr: "0000:07:00.0", Parent: dp, Class: "0x060400", Vendor: "1000", Device: "c010", NUMA: 0, Speed: gen4, Width: "16"})
			for j := 0; j < 2; j++ {
				dp2 := fmt.Sprintf("0000:08:%02x.0", j)
				add(Func{Addr: dp2, Parent: "0000:07:00.0", Class: "0x060400", Vendor: "1000", Device: "c010", NUMA: 0, Speed: gen4, Width: "16"})
				add(Func{Addr: fmt.Sprintf("0000:%02x:00.0", 9+j), Parent: dp2, Class: "0x030200", Vendor: "10de", Device: "20f1", NUMA: 0, Speed: gen4, Width: "16"})
			}
		}
	}
	add(Func{Addr: "0000:80:00.0", Class: "0x060000", Vendor: "8086", Device: "09a2", NUMA: 1})
	for i := 0; i < extraNVMe; i++ {
		rp := fmt.Sprintf("0000:80:%02x.0", 1+i%30)
		if i < 30 {
			add(Func{Addr: rp, Class: "0x060400", Vendor: "8086", Device: "347a", NUMA: 1, Speed: gen4, Width: "4"})
		}
		add(Func{Addr: fmt.Sprintf("0000:%02x:00.%d", 0x81+i%30, i/30), Parent: rp, Class: "0x010802", Vendor: "8086", Device: "0b60", NUMA: 1,
			Speed: gen4, Width: "4", Block: fmt.Sprintf("nvme%dn1", 10+i)})
	}
	return fs
}

func firstNonEmpty(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// TarEntry is one entry of a tar built by a test.
type TarEntry struct {
	Name, Body, Link string
	Typ              byte // tar.TypeReg when 0
}

// BuildTar archives entries as a tar in memory.
func BuildTar(t testing.TB, entries []TarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{Name: e.Name, Linkname: e.Link, Typeflag: e.Typ, Mode: 0o644, Format: tar.FormatPAX}
		if h.Typeflag == 0 {
			h.Typeflag = tar.TypeReg
		}
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(h); err != nil {
			t.Fatal(err)
		}
		if _, err := io.WriteString(tw, e.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TarDir archives the tree at dir, symlinks as symlinks, under prefix.
func TarDir(t testing.TB, dir, prefix string) []byte {
	t.Helper()
	var entries []TarEntry
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || p == dir {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		name := prefix + filepath.ToSlash(rel)
		switch {
		case d.Type()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			entries = append(entries, TarEntry{Name: name, Link: target, Typ: tar.TypeSymlink})
			return err
		case d.IsDir():
			entries = append(entries, TarEntry{Name: name + "/", Typ: tar.TypeDir})
		default:
			body, err := os.ReadFile(p)
			entries = append(entries, TarEntry{Name: name, Body: string(body)})
			return err
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return BuildTar(t, entries)
}

// Gzip compresses data with gzip.
func Gzip(t testing.TB, data []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	zw.Write(data)
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
