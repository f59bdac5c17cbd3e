package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// goTestOutput is `go test -bench -count 3` output as go test prints it:
// two packages, sub-benchmarks, a custom metric, a log and a skip.
const goTestOutput = `goos: linux
goarch: amd64
pkg: github.com/gnnplan/gnnplan/ddak
cpu: AMD EPYC
BenchmarkDDAK100M-2   	       1	 300000000 ns/op	         9.020 heap-B/vertex
BenchmarkDDAK100M-2   	       1	 100000000 ns/op	         9.000 heap-B/vertex
BenchmarkDDAK100M-2   	       1	 200000000 ns/op	         9.010 heap-B/vertex
BenchmarkRandRead4K/io_uring/qd=1-2         	   50000	     40000 ns/op	     24800 IOPS
--- BENCH: BenchmarkRandRead4K/io_uring/qd=1-2
    bench_test.go:201: fio not available: fio not found and not root to apt-get install it
BenchmarkRandRead4K/io_uring/qd=1-2         	   50000	     44000 ns/op	     22000 IOPS
--- SKIP: BenchmarkGemmVsNumpy
    gemm_bench_test.go:165: numpy not available to /usr/bin/python3
PASS
ok  	github.com/gnnplan/gnnplan/ddak	12.3s
pkg: github.com/gnnplan/gnnplan/kernels
BenchmarkDDAK100M-2   	       1	 250000000 ns/op	         9.030 heap-B/vertex
`

func TestParseBenchOutput(t *testing.T) {
	p := parseBenchOutput(goTestOutput)
	if got, want := strings.Join(p.Names, ","), "DDAK100M,RandRead4K/io_uring/qd=1"; got != want {
		t.Fatalf("names %q, want %q (the -GOMAXPROCS suffix and Benchmark prefix dropped, first appearance order)", got, want)
	}
	for _, tc := range []struct {
		name, bench, unit string
		want              stat
	}{
		{"even count takes the middle two's mean", "DDAK100M", "ns/op", stat{N: 4, Median: 225e6, Min: 100e6, Max: 300e6}},
		{"custom metric kept per repetition", "DDAK100M", "heap-B/vertex", stat{N: 4, Median: 9.015, Min: 9.0, Max: 9.03}},
		{"sub-benchmark with a log between repetitions", "RandRead4K/io_uring/qd=1", "IOPS", stat{N: 2, Median: 23400, Min: 22000, Max: 24800}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := summarize(p.Values[tc.bench][tc.unit])
			if got.N != tc.want.N || !near(got.Median, tc.want.Median) || !near(got.Min, tc.want.Min) || !near(got.Max, tc.want.Max) {
				t.Errorf("%s %s: %+v, want %+v", tc.bench, tc.unit, got, tc.want)
			}
		})
	}
	if got := p.Skips["GemmVsNumpy"]; got != "numpy not available to /usr/bin/python3" {
		t.Errorf("skip reason %q", got)
	}
	if len(p.Logs) != 1 || !strings.Contains(p.Logs[0], "fio not available") {
		t.Errorf("logs %q, want the one fio line", p.Logs)
	}
	if len(p.Failed) != 0 {
		t.Errorf("failed %q, want none", p.Failed)
	}
}

func near(a, b float64) bool { return a-b < 1e-9*max(1, b) && b-a < 1e-9*max(1, b) }

func TestSummarizeOddCount(t *testing.T) {
	if got := summarize([]float64{5, 1, 3}); got != (stat{N: 3, Median: 3, Min: 1, Max: 5}) {
		t.Errorf("got %+v", got)
	}
	if got := summarize(nil); got != (stat{}) {
		t.Errorf("empty: got %+v", got)
	}
}

func TestFormatStat(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    stat
		unit string
		want string
	}{
		{"time in the median's unit with its range", stat{N: 3, Median: 2.25e8, Min: 1e8, Max: 3e8}, "ns/op", "225 [100-300] ms"},
		{"one repetition has no range", stat{N: 1, Median: 1.5e9, Min: 1.5e9, Max: 1.5e9}, "ns/op", "1.50 s"},
		{"range equal once rounded is left out", stat{N: 3, Median: 14.7e6, Min: 14.71e6, Max: 14.73e6}, "B/op", "14.7 MB"},
		{"large counts in k", stat{N: 2, Median: 23400, Min: 22000, Max: 24800}, "IOPS", "23.4 [22.0-24.8]k"},
		{"small ratios keep three digits", stat{N: 3, Median: 0.934, Min: 0.9, Max: 1.02}, "vs-fio", "0.934 [0.9-1.02]"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := formatStat(tc.s, tc.unit); got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRenderSection(t *testing.T) {
	savedSections := sections
	defer func() { sections = savedSections }()
	sections = []section{{
		ID: "io", Title: "Reads", Issues: "issue 6", Measures: "Random reads.", Target: "0.9x fio.",
		Runs: []run{
			{ID: "rr", Benchmarks: []string{"BenchmarkRandRead4K"}, Metrics: []string{"IOPS", "fio-IOPS"},
				Anchors: []anchor{{Name: "fio", Metric: "fio-IOPS", Log: "fio"}}},
			{ID: "big", Benchmarks: []string{"BenchmarkDDAK1B"}, Full: true, Why: "10 GB"},
			{ID: "old", CLI: "bin/gnnplan validate", Repeat: true, MaxLines: 1},
		},
		Recorded: "gpu.md",
	}}
	now := machine{CPU: "AMD EPYC", CPUs: 2, Date: "2026-11-28 01:00 UTC", GoVersion: "go1.26.8"}
	before := machine{CPU: "Intel Xeon", CPUs: 2, Date: "2026-11-20 09:00 UTC"}
	res := &results{SchemaVersion: schemaVersion, Machine: now, Runs: []runResult{
		{ID: "io/rr", Command: "go test -bench RandRead4K ./trainer/ioread", Machine: now, Output: goTestOutput, Seconds: 60},
		{ID: "io/old", Command: "bin/gnnplan validate", Machine: before, Output: "line one\nline two\n", WallSeconds: []float64{0.3, 0.5, 0.4}},
	}}
	rec, err := parseRecorded("gpu.md", "title: On a GPU\ndate: 2026-11-27\nmachine: one H200\ncommand: .ci/gpu-check.sh\n---\n| gemm | 39.7 TFLOP/s |\n")
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	render(&b, res, map[string]recorded{"gpu.md": rec})
	doc := b.String()
	for _, want := range []string{
		"## Reads (issue 6)",
		"**Target:** 0.9x fio.",
		"| `RandRead4K/io_uring/qd=1` | 2 | 23.4 [22.0-24.8]k |",
		"Anchor: fio was not measured in this run, so there is no ratio to it here (RandRead4K/io_uring/qd=1:\nfio not available",
		"Not run: `make bench BENCH_FULL=1` runs it (10 GB).",
		"Carried from the run of 2026-11-20 09:00 UTC on Intel Xeon, 2 CPUs",
		"Wall time over 3 runs: 0.4 s median [0.3-0.5].",
		"```text\nline one\n```\n(1 more line in",
		"### Recorded: On a GPU\n\nMeasured 2026-11-27 on one H200.",
		"| gemm | 39.7 TFLOP/s |",
		"Its runs took 60 s.",
	} {
		if !strings.Contains(doc, want) {
			t.Errorf("rendered section lacks %q:\n%s", want, doc)
		}
	}
	if strings.Contains(doc, "fio-IOPS") {
		t.Errorf("a metric no benchmark reported got a column:\n%s", doc)
	}
	if strings.Contains(doc, "`DDAK100M`") {
		t.Errorf("a benchmark with none of the run's metrics got a row:\n%s", doc)
	}
}

func TestParseRecordedRequiresItsHeader(t *testing.T) {
	for _, tc := range []struct{ name, text string }{
		{"no separator", "date: 2026-11-27\nmachine: x\ncommand: y\n| a |\n"},
		{"no machine", "date: 2026-11-27\ncommand: y\n---\nbody\n"},
		{"unknown key", "date: d\nmachine: m\ncommand: c\nwhen: w\n---\nbody\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if _, err := parseRecorded("x.md", tc.text); err == nil {
				t.Error("accepted")
			}
		})
	}
}

// TestSpecResolves checks every benchmark the sections name exists in some
// package, and that their IDs are unique: a renamed or moved benchmark
// fails here, not an hour into make bench.
func TestSpecResolves(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(root)
	pkgs, err := benchmarkPackages(".")
	if err != nil {
		t.Fatal(err)
	}
	ids := map[string]bool{}
	for _, s := range sections {
		if ids[s.ID] {
			t.Errorf("section ID %q twice", s.ID)
		}
		ids[s.ID] = true
		if s.Recorded != "" {
			if _, err := os.Stat(filepath.Join("docs/bench/recorded", s.Recorded)); err != nil {
				t.Errorf("section %s: %v", s.ID, err)
			}
		}
		runs := map[string]bool{}
		for _, r := range s.Runs {
			if runs[r.ID] {
				t.Errorf("run ID %s/%s twice", s.ID, r.ID)
			}
			runs[r.ID] = true
			cmd, err := r.command(pkgs, 3)
			if err != nil {
				t.Errorf("section %s run %s: %v", s.ID, r.ID, err)
				continue
			}
			if r.CLI == "" && !strings.Contains(cmd, "go test -ldflags=-checklinkname=0 -run '^$' -bench '^Benchmark") {
				t.Errorf("section %s run %s: command %q", s.ID, r.ID, cmd)
			}
		}
	}
}

func TestRunAllKeepsWhatItDoesNotRun(t *testing.T) {
	savedSections := sections
	defer func() { sections = savedSections }()
	sections = []section{{ID: "a", Runs: []run{
		{ID: "quick", CLI: "echo hi"},
		{ID: "long", CLI: "echo long", Full: true},
	}}}
	old := machine{Date: "2026-11-20 09:00 UTC"}
	prev := &results{SchemaVersion: schemaVersion, Runs: []runResult{
		{ID: "a/long", Command: "echo long", Machine: old, Output: "long\n"},
		{ID: "gone/x", Command: "echo gone", Machine: old},
	}}
	now := machine{Date: time.Now().UTC().Format("2006-01-02 15:04 UTC")}
	var saved []int
	save := func(r *results) error { saved = append(saved, len(r.Runs)); return nil }
	res, err := runAll(t.Context(), prev, now, runOptions{count: 2, save: save}, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Runs) != 2 {
		t.Fatalf("runs %+v, want the quick one run and the long one carried", res.Runs)
	}
	if len(saved) != 1 || saved[0] != 2 {
		t.Errorf("saved %v, want once after the quick run, with the long one's previous result", saved)
	}
	if r := res.Runs[0]; r.ID != "a/quick" || r.Output != "hi\n" || r.Machine != now || r.ExitCode != 0 {
		t.Errorf("quick: %+v", r)
	}
	if r := res.Runs[1]; r.ID != "a/long" || r.Machine != old {
		t.Errorf("long: %+v, want carried from the previous results", r)
	}
}

// FuzzParseBenchOutput: any text parses without panicking, and every
// metric's median lies within its range.
func FuzzParseBenchOutput(f *testing.F) {
	f.Add(goTestOutput)
	f.Add("BenchmarkX-2 1 NaN ns/op\n--- SKIP: BenchmarkY\n")
	f.Fuzz(func(t *testing.T, out string) {
		p := parseBenchOutput(out)
		for _, n := range p.Names {
			for u, v := range p.Values[n] {
				s := summarize(v)
				if s.N != len(v) || s.Min > s.Median || s.Median > s.Max {
					t.Errorf("%s %s: %+v from %v", n, u, s, v)
				}
			}
		}
	})
}
