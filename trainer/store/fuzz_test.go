package store

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// FuzzReadManifest feeds store.json's parser arbitrary bytes: it must
// return a manifest or an error, never panic, and a manifest it accepts
// must survive writing and reading back unchanged.
func FuzzReadManifest(f *testing.F) {
	seed, _ := json.Marshal(Manifest{SchemaVersion: ManifestSchemaVersion, Dataset: "d", NumNodes: 10, FeatureDim: 2, RowBytes: 8, StoreID: "00112233445566778899aabbccddeeff", LayoutDir: ".",
		Bins: []BinFile{{ID: "gpu0", Kind: "gpu_memory", Rows: 4, RowBytes: 8},
			{ID: "nvme0", Kind: "ssd", Rows: 6, RowBytes: 8, Path: "/ssd/d-nvme0.rows", StrideBytes: 512, FileBytes: 12288, CRC32C: 7}}})
	f.Add(seed)
	f.Add([]byte(`{"schema_version": 4}`))
	f.Add([]byte(`{"schema_version": 4, "store_id": "00112233445566778899aabbccddeeff", "num_nodes": 1, "feature_dim": 1, "row_bytes": 4, "bins": [{"kind": "ssd", "rows": -1}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		dir := t.TempDir()
		path := filepath.Join(dir, ManifestFile)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := readManifestFile(path)
		if err != nil {
			return
		}
		if err := writeManifestFile(path, m); err != nil {
			t.Fatal(err)
		}
		again, err := readManifestFile(path)
		if err != nil || !reflect.DeepEqual(m, again) {
			t.Fatalf("manifest %+v read back as %+v (%v)", m, again, err)
		}
	})
}
