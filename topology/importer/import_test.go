package importer

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gnnplan/gnnplan/topology"
	"github.com/gnnplan/gnnplan/topology/internal/sysfstest"
	"github.com/gnnplan/gnnplan/topology/internal/topotest"
)

func TestImportRecognisesFormats(t *testing.T) {
	var js bytes.Buffer
	topology.Encode(&js, topotest.SampleMachine(t))
	cases := []struct {
		name, doc, wantErr string
	}{
		{"machine JSON", js.String(), ""},
		{"NCCL system", `<system version="1"><cpu numaid="0" familyid="6" modelid="85" vendor="GenuineIntel"><pci busid="0000:01:00.0" class="0x030200" vendor="0x10de" device="0x20b0" link_speed="16.0 GT/s PCIe" link_width="16"><gpu dev="0" sm="80"/></pci></cpu></system>`, ""},
		{"hwloc topology", `<?xml version="1.0"?><topology version="2.0"><object type="Machine" os_index="0"><object type="Package" os_index="0"><object type="NUMANode" os_index="0" local_memory="1073741824"/><object type="Core" os_index="0"><object type="PU" os_index="0"/></object></object></object></topology>`, ""},
		{"NCCL graph", `<graphs version="1"><graph id="0"/></graphs>`, "channel graph"},
		{"other XML", `<html><body/></html>`, "unknown XML document"},
		{"empty", "   \n", "empty file"},
		{"neither", "hello: world", "neither JSON, XML, an nvidia-smi topo -m matrix nor lspci output"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m, err := ImportBytes("in.x", []byte(tc.doc))
			if tc.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := m.Validate(); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !topology.IsBadInput(err) || !strings.Contains(err.Error(), tc.wantErr) || !strings.HasPrefix(err.Error(), "in.x") {
				t.Fatalf("err = %v, want bad input from in.x mentioning %q", err, tc.wantErr)
			}
		})
	}
}

// FuzzImport feeds the format dispatcher (and through it every importer)
// with the real topology files and small documents; it must never panic
// and only return valid machines.
func FuzzImport(f *testing.F) {
	ents, _ := os.ReadDir(sysfstest.FixtureDir)
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".xml") {
			if data, err := os.ReadFile(filepath.Join(sysfstest.FixtureDir, e.Name())); err == nil {
				f.Add(data)
			}
		}
	}
	var js bytes.Buffer
	topology.Encode(&js, topotest.SampleMachine(f))
	f.Add(js.Bytes())
	// A sysfs snapshot archive: ImportBytes unpacks it.
	f.Add(sysfstest.Gzip(f, sysfstest.BuildTar(f, []sysfstest.TarEntry{{Name: "sys/devices/system/cpu/cpu0/topology/core_id", Body: "0\n"}})))
	f.Add([]byte(`<graphs/>`))
	f.Add([]byte(`<system version="1"/>`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ImportBytes("fuzz", data)
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("Import returned an invalid machine: %v", err)
		}
	})
}
