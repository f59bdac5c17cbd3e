package dataset

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"testing"
)

// importShared imports a shared fixture into a temporary directory.
func importShared(t *testing.T, format, rel string, opt ImportOptions) string {
	t.Helper()
	src := needShared(t, rel)
	out := filepath.Join(t.TempDir(), "ds")
	if opt.SplitFile != "" {
		opt.SplitFile = needShared(t, opt.SplitFile)
	}
	if _, err := runImport(context.Background(), format, src, out, opt); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestInfoCoraJSONKeysAndDegrees(t *testing.T) {
	dir := importShared(t, "linqs", "cora", ImportOptions{SplitFile: "cora/planetoid_split_linqs_ids.tsv"})
	info, err := InfoOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	var obj map[string]any
	if err := json.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]float64{"num_nodes": 2708, "num_edges": 10556, "num_classes": 7, "feature_dim": 1433,
		"num_train": 140, "num_val": 500, "num_test": 1000, "num_labeled": 2708} {
		if got, ok := obj[key].(float64); !ok || got != want {
			t.Errorf("JSON %s = %v, want %v", key, obj[key], want)
		}
	}
	if obj["undirected"] != true {
		t.Errorf("JSON undirected = %v, want true", obj["undirected"])
	}
	if _, ok := obj["in_degree"]; ok {
		t.Error("in_degree given for an undirected graph")
	}
	for _, key := range []string{"min", "max", "mean", "median", "p99", "zero", "top_1pct_edge_share", "top_5pct_edge_share", "top_10pct_edge_share"} {
		if _, ok := obj["degree"].(map[string]any)[key]; !ok {
			t.Errorf("JSON degree lacks %s", key)
		}
	}

	// The same statistics, the slow way from the loaded graph.
	g, err := LoadGraph(dir)
	if err != nil {
		t.Fatal(err)
	}
	deg := make([]int, g.Meta.NumNodes)
	sum := 0
	for v := range deg {
		deg[v] = int(g.Degree(int64(v)))
		sum += deg[v]
	}
	sort.Sort(sort.Reverse(sort.IntSlice(deg)))
	d := info.Degree
	if sum != 10556 || d.Mean != float64(sum)/2708 {
		t.Errorf("mean degree %v, want %v", d.Mean, float64(sum)/2708)
	}
	// Every Cora paper cites or is cited (LINQS README): none is isolated.
	if d.Zero != 0 || info.IsolatedVertices != 0 || d.Min < 1 || d.Max != int64(deg[0]) || d.Min != int64(deg[len(deg)-1]) {
		t.Errorf("degree min %d max %d zero %d isolated %d, want %d %d 0 0", d.Min, d.Max, d.Zero, info.IsolatedVertices, deg[len(deg)-1], deg[0])
	}
	// 2708 is even: the median is the mean of the 1354th and 1355th.
	if want := float64(deg[1353]+deg[1354]) / 2; d.Median != want {
		t.Errorf("median %v, want %v", d.Median, want)
	}
	if d.P99 < float64(deg[28]) || d.P99 > float64(deg[27]) {
		t.Errorf("p99 %v outside [%d, %d], the degrees around rank 99%%", d.P99, deg[28], deg[27])
	}
	for _, c := range []struct {
		got float64
		k   int
	}{{d.Top1PctShare, 28}, {d.Top5PctShare, 136}, {d.Top10PctShare, 271}} { // ceil(2708 p)
		top := 0
		for _, x := range deg[:c.k] {
			top += x
		}
		if want := float64(top) / float64(sum); math.Abs(c.got-want) > 1e-12 {
			t.Errorf("top %d vertices hold %v of the edges, want %v", c.k, c.got, want)
		}
	}
	if !(d.Top1PctShare < d.Top5PctShare && d.Top5PctShare < d.Top10PctShare && d.Top10PctShare < 1) {
		t.Errorf("skew not increasing: %v %v %v", d.Top1PctShare, d.Top5PctShare, d.Top10PctShare)
	}
	st, _ := os.Stat(filepath.Join(dir, FeaturesFile))
	if info.FeatureBytes != st.Size() || info.FeatureBytes < 2708*1433*4 {
		t.Errorf("feature bytes %d, want features.npy's size %d", info.FeatureBytes, st.Size())
	}
	if want := int64(2709*8 + 10556*4); info.TopologyBytes < want || info.TopologyBytes > want+256 {
		t.Errorf("topology bytes %d, want about %d", info.TopologyBytes, want)
	}
}

func TestInfoDirectedGivesInDegree(t *testing.T) {
	dir := importShared(t, "snap", "snap-email-Eu-core/email-Eu-core.txt", ImportOptions{})
	info, err := InfoOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	if info.Undirected || info.InDegree == nil {
		t.Fatalf("directed graph: undirected %v, in-degree %v", info.Undirected, info.InDegree)
	}
	if in, out := info.InDegree.Mean, info.Degree.Mean; in != out {
		t.Errorf("mean in-degree %v != mean out-degree %v", in, out)
	}
	// email-Eu-core: 1005 nodes, 986 of them on an edge that is not a
	// self-loop; the other 19 are left isolated once self-loops go.
	if info.IsolatedVertices != 19 {
		t.Errorf("isolated vertices %d, want 19", info.IsolatedVertices)
	}
	if info.FeatureDim != 0 || info.NumClasses != 0 {
		t.Errorf("feature_dim %d classes %d, want 0 0", info.FeatureDim, info.NumClasses)
	}
}

func TestInfoFacebookHub(t *testing.T) {
	dir := importShared(t, "snap", "snap-ego-facebook/facebook_combined.txt", ImportOptions{Undirected: true})
	info, err := InfoOf(dir)
	if err != nil {
		t.Fatal(err)
	}
	// SOURCES.md: max degree 1045, a strong hub.
	if info.Degree.Max != 1045 || info.IsolatedVertices != 0 {
		t.Errorf("max degree %d isolated %d, want 1045 0", info.Degree.Max, info.IsolatedVertices)
	}
}

func TestDegreeStatsSmall(t *testing.T) {
	cases := []struct {
		name string
		deg  []int64
		want DegreeStats
	}{
		{"one vertex holds every edge", []int64{0, 0, 0, 4}, DegreeStats{Min: 0, Max: 4, Mean: 1, Median: 0, P75: 1, P90: 4 - 0.3*4, P99: 4 - 0.03*4, P999: 4 - 0.003*4, Zero: 3,
			Top1PctShare: 1, Top5PctShare: 1, Top10PctShare: 1}},
		{"even spread", []int64{2, 2}, DegreeStats{Min: 2, Max: 2, Mean: 2, P10: 2, P25: 2, Median: 2, P75: 2, P90: 2, P99: 2, P999: 2, Top1PctShare: 0.5, Top5PctShare: 0.5, Top10PctShare: 0.5}},
		{"a star's hub beyond the dense range", []int64{1, 1, 1, 1 << 20, 3}, DegreeStats{Min: 1, Max: 1 << 20, Mean: float64(1<<20+6) / 5, P10: 1, P25: 1, Median: 1, P75: 3,
			P90: 3 + 0.6*(1<<20-3), P99: 3 + 0.96*(1<<20-3), P999: 3 + 0.996*(1<<20-3), Top1PctShare: float64(1<<20) / float64(1<<20+6), Top5PctShare: float64(1<<20) / float64(1<<20+6), Top10PctShare: float64(1<<20) / float64(1<<20+6)}},
		{"no edges", []int64{0, 0, 0}, DegreeStats{Zero: 3}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			h := newDegreeHistogram()
			for _, d := range tc.deg {
				h.add(d)
			}
			got := h.stats()
			for _, p := range []struct {
				name      string
				got, want *float64
			}{{"p10", &got.P10, &tc.want.P10}, {"p25", &got.P25, &tc.want.P25}, {"p75", &got.P75, &tc.want.P75}, {"p90", &got.P90, &tc.want.P90},
				{"p99", &got.P99, &tc.want.P99}, {"p99.9", &got.P999, &tc.want.P999}, {"mean", &got.Mean, &tc.want.Mean}, {"top 1%", &got.Top1PctShare, &tc.want.Top1PctShare}} {
				if math.Abs(*p.got-*p.want) > 1e-6*max(1, math.Abs(*p.want)) {
					t.Errorf("%s %v, want %v", p.name, *p.got, *p.want)
				}
				*p.got = *p.want
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestInfoBadDir(t *testing.T) {
	if _, err := InfoOf(t.TempDir()); err == nil {
		t.Fatal("a directory without meta.json accepted")
	}
}
