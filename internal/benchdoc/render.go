package main

import (
	"fmt"
	"io"
	"math"
	"regexp"
	"strings"
)

// render writes docs/benchmarks.md from the saved results and the recorded
// files. Every figure in it comes from res or rec.
func render(w io.Writer, res *results, rec map[string]recorded) {
	byID := map[string]runResult{}
	var latest float64
	for _, r := range res.Runs {
		byID[r.ID] = r
		if r.Machine.Date == res.Machine.Date {
			latest += r.Seconds
		}
	}
	m := res.Machine
	carried := carriedRun(res)
	fmt.Fprint(w, `# Benchmarks

What each of gnnplan's benchmarks measures, the command a reader runs, the target the issues set
and the figures of the latest run. Timing targets are checked here, never by unit tests.

This file is generated: `+"`make bench`"+` runs the benchmarks and rewrites it, `+"`make bench-doc`"+`
renders it again from the raw output saved in docs/bench/results.json. Edit the sections in
internal/benchdoc/spec.go, or the recorded runs in docs/bench/recorded/, not this file. The
dated re-measurements that led to the current code are in git history
(`+"`git log -p -- docs/benchmarks.md`"+`).

`)
	fmt.Fprintf(w, "```\n%s\n```\n\n", strings.Join([]string{
		"make bench                        # the default runs, BENCH_COUNT=3 repetitions each",
		"make bench BENCH_FULL=1           # also the billion-vertex DDAK runs, gonum on 1M edges, GAT, out of core",
		"make bench BENCH_ONLY=ddak,gemm   # only these sections; the others keep their saved figures",
		"make bench-doc                    # render again from docs/bench/results.json, running nothing",
		"make bench-deps                   # the anchors: numpy and PyTorch (fio: the ioread benchmark installs it as root)",
	}, "\n"))
	core := "unset"
	if m.OpenBLASCore != "" {
		core = "`" + m.OpenBLASCore + "`"
	}
	fmt.Fprintf(w, "%s\n", wrap(fmt.Sprintf("Latest run: %s, `%s` (lscpu), %d CPUs, %d GiB, Linux %s, %s, revision %s; "+
		"load average %s at its start; `OPENBLAS_CORETYPE` %s. Its runs took %s. A table cell is the median over "+
		"the run's repetitions (n) with their range in brackets. The machine is a shared VM whose speed drifts "+
		"by 10-40%% over minutes, so ratios measured within one run compare better than figures across runs.",
		m.Date, orUnknown(m.CPU), m.CPUs, m.MemoryGiB, orUnknown(m.Kernel), orUnknown(m.GoVersion), orUnknown(m.Revision),
		orUnknown(m.LoadAverage), core, duration(latest)), 100))
	if carried.Date != "" {
		fmt.Fprintf(w, "%s\n", wrap(fmt.Sprintf("Runs it left out carry the run of %s (%s, %d CPUs) unless they say.",
			carried.Date, orUnknown(carried.CPU), carried.CPUs), 100))
	}

	for _, s := range sections {
		fmt.Fprintf(w, "\n## %s (%s)\n\n", s.Title, s.Issues)
		fmt.Fprintf(w, "%s\n\n", wrap(s.Measures, 100))
		fmt.Fprintf(w, "%s\n", wrap("**Target:** "+s.Target, 100))
		if s.Recorded != "" {
			renderRecorded(w, s.Recorded, rec)
		}
		for _, r := range s.Runs {
			rr, ok := byID[s.ID+"/"+r.ID]
			renderRun(w, r, rr, ok, res.Machine, carried)
		}
	}
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

func duration(sec float64) string {
	if sec < 90 {
		return fmt.Sprintf("%.0f s", sec)
	}
	return fmt.Sprintf("%.0f minutes", sec/60)
}

func renderRecorded(w io.Writer, file string, rec map[string]recorded) {
	r, ok := rec[file]
	if !ok {
		fmt.Fprintf(w, "\nThe recorded results (docs/bench/recorded/%s) are missing.\n", file)
		return
	}
	title := r.Title
	if title == "" {
		title = "Recorded run"
	}
	fmt.Fprintf(w, "\n### Recorded: %s\n\n", title)
	why := r.Why
	if why == "" {
		why = "this machine lacks the hardware"
	}
	fmt.Fprintf(w, "%s\n\n", wrap(fmt.Sprintf("Measured %s on %s. Not re-run by `make bench` (%s): carried verbatim "+
		"from docs/bench/recorded/%s. Command: `%s`.", r.Date, r.Machine, why, r.File, r.Command), 100))
	fmt.Fprintf(w, "%s\n", r.Body)
}

// carriedRun is the machine of the run most of the runs the latest left
// out come from (zero when fewer than minCarriedRuns were): the header
// names it once, so a partial run does not add a line to every section.
func carriedRun(res *results) machine {
	count := map[string]int{}
	var best machine
	for _, r := range res.Runs {
		if d := r.Machine.Date; d != res.Machine.Date {
			count[d]++
			if count[d] > count[best.Date] {
				best = r.Machine
			}
		}
	}
	// A run or two left out say so themselves.
	if count[best.Date] < minCarriedRuns {
		return machine{}
	}
	return best
}

// minCarriedRuns is how many runs of one earlier run the header names
// instead of each run.
const minCarriedRuns = 3

func renderRun(w io.Writer, r run, rr runResult, ok bool, latest, carried machine) {
	fmt.Fprintln(w)
	if !ok {
		if r.Full {
			fmt.Fprintf(w, "Not run: `make bench BENCH_FULL=1` runs it (%s).\n", r.Why)
		} else {
			fmt.Fprintf(w, "No saved result for run %q yet: `make bench` runs it.\n", r.ID)
		}
		return
	}
	fmt.Fprintf(w, "```\n%s\n```\n\n", rr.Command)
	if rr.Machine.Date != latest.Date && (r.Full || rr.Machine.Date != carried.Date) {
		how := "left out of the latest run"
		if r.Full {
			how = "a BENCH_FULL=1 run, left out of the latest"
		}
		fmt.Fprintf(w, "Carried from the run of %s on %s, %d CPUs (%s).\n\n", rr.Machine.Date, orUnknown(rr.Machine.CPU), rr.Machine.CPUs, how)
	}
	if r.CLI != "" {
		renderCLI(w, r, rr)
	} else {
		renderBench(w, r, rr)
	}
	if r.Note != "" {
		fmt.Fprintf(w, "\n%s\n", wrap(r.Note, 100))
	}
}

func renderCLI(w io.Writer, r run, rr runResult) {
	if rr.ExitCode != 0 {
		fmt.Fprintf(w, "It failed (exit %d):\n\n```\n%s\n```\n", rr.ExitCode, rr.Stderr)
	}
	if len(rr.WallSeconds) > 1 {
		s := summarize(rr.WallSeconds)
		fmt.Fprintf(w, "Wall time over %d runs: %s s median [%s-%s].\n\n", s.N, num(s.Median), num(s.Min), num(s.Max))
	} else if len(rr.WallSeconds) == 1 {
		fmt.Fprintf(w, "Wall time: %s s.\n\n", num(rr.WallSeconds[0]))
	}
	out := strings.TrimRight(rr.Output, "\n")
	if out == "" {
		fmt.Fprintln(w, "It printed nothing.")
		return
	}
	lines := strings.Split(out, "\n")
	more := 0
	if r.MaxLines > 0 && len(lines) > r.MaxLines {
		more = len(lines) - r.MaxLines
		lines = lines[:r.MaxLines]
	}
	fmt.Fprintf(w, "```text\n%s\n```\n", strings.Join(lines, "\n"))
	if more > 0 {
		unit := "lines"
		if more == 1 {
			unit = "line"
		}
		fmt.Fprintf(w, "(%d more %s in docs/bench/results.json.)\n", more, unit)
	}
}

func renderBench(w io.Writer, r run, rr runResult) {
	p := parseBenchOutput(rr.Output)
	if rr.ExitCode != 0 || len(p.Failed) > 0 {
		fmt.Fprintf(w, "The run failed (exit %d):\n\n```\n%s\n```\n\n", rr.ExitCode, tail(strings.Join(p.Failed, "\n"), 12))
	}
	if len(p.Names) > 0 {
		benchTable(w, p, r.Metrics)
	} else if len(p.Skips) == 0 {
		fmt.Fprintln(w, "It reported no figures.")
	}
	for _, n := range sortedKeys(p.Skips) {
		fmt.Fprintf(w, "\n%s\n", wrap(fmt.Sprintf("`%s` skipped itself: %s", n, p.Skips[n]), 100))
	}
	for _, a := range r.Anchors {
		if hasMetric(p, a.Metric) {
			fmt.Fprintf(w, "\nAnchor: %s, measured in the same run (`%s`).\n", a.Name, a.Metric)
			continue
		}
		why := "the benchmark did not say why"
		re := regexp.MustCompile(a.Log)
		for _, l := range p.Logs {
			if re.MatchString(l) {
				why = l
				break
			}
		}
		for _, reason := range p.Skips {
			if re.MatchString(reason) {
				why = reason
				break
			}
		}
		fmt.Fprintf(w, "\n%s\n", wrap(fmt.Sprintf("Anchor: %s was not measured in this run, so there is no ratio to it here (%s).", a.Name, why), 100))
	}
}

func hasMetric(p *benchOutput, unit string) bool {
	for _, n := range p.Names {
		if _, ok := p.Values[n][unit]; ok {
			return true
		}
	}
	return false
}

func sortedKeys(m map[string]string) []string {
	var k []string
	for x := range m {
		k = append(k, x)
	}
	for i := 1; i < len(k); i++ {
		for j := i; j > 0 && k[j] < k[j-1]; j-- {
			k[j], k[j-1] = k[j-1], k[j]
		}
	}
	return k
}

// benchTable writes one row per benchmark and one column per metric, or,
// for a few benchmarks with many metrics, one row per metric.
func benchTable(w io.Writer, p *benchOutput, want []string) {
	var units []string
	if want != nil {
		for _, u := range want {
			if hasMetric(p, u) {
				units = append(units, u)
			}
		}
	} else {
		for _, n := range p.Names {
			for _, u := range p.Units[n] {
				if !contains(units, u) {
					units = append(units, u)
				}
			}
		}
	}
	// A metric reported as 0 everywhere hides the default ns/op.
	var kept []string
	for _, u := range units {
		zero := true
		for _, n := range p.Names {
			for _, v := range p.Values[n][u] {
				if v != 0 {
					zero = false
				}
			}
		}
		if !zero {
			kept = append(kept, u)
		}
	}
	units = kept
	// A benchmark that reported none of the columns (one the pattern
	// matched for another's sake) gets no row.
	var names []string
	for _, n := range p.Names {
		for _, u := range units {
			if _, ok := p.Values[n][u]; ok {
				names = append(names, n)
				break
			}
		}
	}
	p = &benchOutput{Names: names, Units: p.Units, Values: p.Values}
	cell := func(n, u string) string {
		v, ok := p.Values[n][u]
		if !ok {
			return ""
		}
		return formatStat(summarize(v), u)
	}
	reps := func(n string) int {
		most := 0
		for _, v := range p.Values[n] {
			most = max(most, len(v))
		}
		return most
	}
	if len(units) > 6 && len(p.Names) <= 4 {
		fmt.Fprintf(w, "| metric | %s |\n|---|%s\n", strings.Join(quoted(p.Names), " | "), strings.Repeat("---|", len(p.Names)))
		var ns []string
		for _, n := range p.Names {
			ns = append(ns, fmt.Sprint(reps(n)))
		}
		fmt.Fprintf(w, "| n | %s |\n", strings.Join(ns, " | "))
		for _, u := range units {
			var cells []string
			for _, n := range p.Names {
				cells = append(cells, cell(n, u))
			}
			fmt.Fprintf(w, "| %s | %s |\n", unitName(u), strings.Join(cells, " | "))
		}
		return
	}
	var head []string
	for _, u := range units {
		head = append(head, unitName(u))
	}
	fmt.Fprintf(w, "| benchmark | n | %s |\n|---|---|%s\n", strings.Join(head, " | "), strings.Repeat("---|", len(units)))
	for _, n := range p.Names {
		var cells []string
		for _, u := range units {
			cells = append(cells, cell(n, u))
		}
		fmt.Fprintf(w, "| `%s` | %d | %s |\n", n, reps(n), strings.Join(cells, " | "))
	}
}

func quoted(names []string) []string {
	var q []string
	for _, n := range names {
		q = append(q, "`"+n+"`")
	}
	return q
}

func unitName(u string) string {
	switch u {
	case "ns/op":
		return "time/op"
	case "B/op":
		return "memory/op"
	}
	return u
}

// decimalScale is the power of 1000 (1e9, 1e6, 1e3 or 1) v reads best
// in, and that scale's suffix among suffixes.
func decimalScale(v float64, suffixes [4]string) (float64, string) {
	for i, p := range []float64{1e9, 1e6, 1e3} {
		if math.Abs(v) >= p {
			return p, suffixes[i]
		}
	}
	return 1, suffixes[3]
}

// formatStat writes "median [min-max] unit" in the unit the median reads
// best in; the range is left out when every repetition gave the same value.
func formatStat(s stat, unit string) string {
	scale, suffix := 1.0, ""
	switch unit {
	case "ns/op":
		scale, suffix = decimalScale(s.Median, [4]string{" s", " ms", " µs", " ns"})
	case "B/op":
		scale, suffix = decimalScale(s.Median, [4]string{" GB", " MB", " kB", " B"})
	default:
		switch a := math.Abs(s.Median); {
		case a >= 1e9:
			scale, suffix = 1e9, "G"
		case a >= 1e6:
			scale, suffix = 1e6, "M"
		case a >= 1e4:
			scale, suffix = 1e3, "k"
		}
	}
	if s.N < 2 || num(s.Min/scale) == num(s.Max/scale) {
		return num(s.Median/scale) + suffix
	}
	return fmt.Sprintf("%s [%s-%s]%s", num(s.Median/scale), num(s.Min/scale), num(s.Max/scale), suffix)
}

// num writes three significant digits, never in exponent form above 0.001.
func num(v float64) string {
	a := math.Abs(v)
	switch {
	case a >= 100:
		return fmt.Sprintf("%.0f", v)
	case a >= 10:
		return fmt.Sprintf("%.1f", v)
	case a >= 1:
		return fmt.Sprintf("%.2f", v)
	case a >= 0.001:
		return fmt.Sprintf("%.3g", v)
	case a == 0:
		return "0"
	}
	return fmt.Sprintf("%.2e", v)
}

// wrap fills text into lines of at most width characters (a word longer
// than width stands alone).
func wrap(text string, width int) string {
	var b strings.Builder
	n := 0
	for _, word := range strings.Fields(text) {
		if n > 0 && n+1+len(word) > width {
			b.WriteByte('\n')
			n = 0
		} else if n > 0 {
			b.WriteByte(' ')
			n++
		}
		b.WriteString(word)
		n += len(word)
	}
	return b.String()
}
