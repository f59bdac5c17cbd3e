package dataset

import (
	"context"
	"fmt"
	"io"
)

// Importer is the signature the importers share.
type Importer func(ctx context.Context, src, out string, opt ImportOptions) (*ImportSummary, error)

// ImportFormats lists the formats Importers holds, in the order help
// shows them.
func ImportFormats() []string { return []string{"linqs", "snap", "geomgcn", "planetoid", "ogb"} }

// Importers maps each format to its importer.
func Importers() map[string]Importer {
	return map[string]Importer{"linqs": ImportLINQS, "snap": ImportSNAP, "geomgcn": ImportGeomGCN, "planetoid": ImportPlanetoid, "ogb": ImportOGB}
}

// CheckImportFlags refuses options format does not take; given says
// which of the flags --split, --split-id, --labels, --undirected,
// --header and --no-header were given. Errors name the flag.
func CheckImportFlags(format string, given func(flag string) bool) error {
	bad := func(format string, args ...any) error { return fmt.Errorf(format, args...) }
	if given("header") && given("no-header") {
		return bad("--header and --no-header: give one")
	}
	if (given("header") || given("no-header")) && format != "snap" {
		return bad("--header/--no-header: only for --format snap (edge lists)")
	}
	switch {
	case format == "snap" && given("split"):
		return bad("--split: SNAP edge lists have no split")
	case format == "snap" && given("split-id"):
		return bad("--split-id: SNAP edge lists have no split")
	case format == "snap":
		return nil
	case given("labels"):
		return bad("--labels: only for --format snap (%s files carry their labels)", format)
	case given("undirected") && format != "ogb":
		return bad("--undirected: only for --format snap or ogb (%s graphs are always undirected)", format)
	case format == "planetoid" && (given("split") || given("split-id")):
		return bad("--split: planetoid files imply their split (train = y's rows, val = the next 500, test = test.index)")
	case format == "ogb" && given("split-id"):
		return bad("--split-id: OGB splits are chosen by name with --split")
	case given("split-id") && !given("split"):
		return bad("--split-id: needs --split")
	}
	return nil
}

// WriteText prints one "key: value" line per fact of an import into out,
// stable for scripts and readable for people, then its notes.
func (s *ImportSummary) WriteText(w io.Writer, out string) error {
	lines := []struct {
		key string
		val any
	}{
		{"format", s.Format}, {"out", out}, {"nodes", s.Nodes}, {"edges (CSR entries)", s.Edges},
		{"undirected edges", s.UndirectedEdges}, {"features", s.Features}, {"classes", s.Classes},
		{"dropped edges (unknown vertex)", s.DroppedEdges}, {"self-loops dropped", s.SelfLoops},
		{"duplicate edges merged", s.Duplicates}, {"train", s.Train}, {"val", s.Val}, {"test", s.Test},
	}
	for _, l := range lines {
		if _, err := fmt.Fprintf(w, "%s: %v\n", l.key, l.val); err != nil {
			return err
		}
	}
	for _, n := range s.Notes {
		if _, err := fmt.Fprintf(w, "note: %s\n", n); err != nil {
			return err
		}
	}
	return nil
}

// Rows are the info as property and value, the way `dataset info` shows
// them.
func (info *Info) Rows() [][2]string {
	rows := [][2]string{
		{"name", info.Name},
		{"source", info.Source},
		{"nodes", fmt.Sprint(info.NumNodes)},
		{"edges (CSR entries)", fmt.Sprint(info.NumEdges)},
		{"undirected", fmt.Sprint(info.Undirected)},
		{"feature dim", fmt.Sprint(info.FeatureDim)},
		{"classes", fmt.Sprint(info.NumClasses)},
		{"labeled nodes", fmt.Sprint(info.NumLabeled)},
		{"train / val / test", fmt.Sprintf("%d / %d / %d", info.NumTrain, info.NumVal, info.NumTest)},
		{"isolated vertices", fmt.Sprintf("%d (%.2f%%)", info.IsolatedVertices, 100*info.IsolatedShare)},
	}
	if info.InDegree == nil {
		rows = append(rows, degreeRows("degree", info.Degree)...)
	} else {
		rows = append(rows, degreeRows("out-degree", info.Degree)...)
		rows = append(rows, degreeRows("in-degree", *info.InDegree)...)
	}
	return append(rows, [2]string{"feature bytes", FormatBytes(info.FeatureBytes)}, [2]string{"topology bytes", FormatBytes(info.TopologyBytes)})
}

func degreeRows(what string, s DegreeStats) [][2]string {
	return [][2]string{
		{what + " min / max", fmt.Sprintf("%d / %d", s.Min, s.Max)},
		{what + " mean", fmt.Sprintf("%.2f", s.Mean)},
		{what + " p10 / p25 / median / p75 / p90", fmt.Sprintf("%.1f / %.1f / %.1f / %.1f / %.1f", s.P10, s.P25, s.Median, s.P75, s.P90)},
		{what + " p99 / p99.9", fmt.Sprintf("%.1f / %.1f", s.P99, s.P999)},
		{what + " 0 (vertices)", fmt.Sprint(s.Zero)},
		{what + " skew: top 1% / 5% / 10% hold", fmt.Sprintf("%.1f%% / %.1f%% / %.1f%% of edges", 100*s.Top1PctShare, 100*s.Top5PctShare, 100*s.Top10PctShare)},
	}
}

// FormatBytes gives exact bytes and a binary-prefixed size.
func FormatBytes(n int64) string {
	v, u := float64(n), ""
	for _, name := range []string{"KiB", "MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, u = v/1024, name
	}
	if u == "" {
		return fmt.Sprintf("%d B", n)
	}
	return fmt.Sprintf("%d B (%.1f %s)", n, v, u)
}
