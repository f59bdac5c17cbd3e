package main

import (
	"bufio"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// benchOutput is what one `go test -bench` run printed, parsed: each
// benchmark's metrics over the repetitions, in the order they first
// appeared, and what it logged or why it was skipped.
type benchOutput struct {
	Names   []string                        // benchmark names, first appearance order, "Benchmark" and -GOMAXPROCS dropped
	Units   map[string][]string             // per name, the metric units in reported order
	Values  map[string]map[string][]float64 // name -> unit -> one value per repetition
	Skips   map[string]string               // name -> reason
	Logs    []string                        // every indented log line, "Name: text"
	Failed  []string                        // FAIL lines and panics
	Package []string                        // "pkg:" lines
}

var (
	// A result line: name, iterations, then value-unit pairs.
	resultLine = regexp.MustCompile(`^(Benchmark\S+)\s+(\d+)\s+(.+)$`)
	procSuffix = regexp.MustCompile(`-\d+$`)
	headerLine = regexp.MustCompile(`^--- (SKIP|BENCH|FAIL): (Benchmark\S+)`)
)

// shortName drops "Benchmark" and the -GOMAXPROCS suffix go test adds.
func shortName(s string) string {
	return strings.TrimPrefix(procSuffix.ReplaceAllString(s, ""), "Benchmark")
}

// parseBenchOutput reads `go test -bench` output (any number of packages
// and repetitions, in any order).
func parseBenchOutput(out string) *benchOutput {
	p := &benchOutput{Units: map[string][]string{}, Values: map[string]map[string][]float64{}, Skips: map[string]string{}}
	seen := map[string]bool{}
	var header, headerKind string
	sc := bufio.NewScanner(strings.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		line := sc.Text()
		if m := headerLine.FindStringSubmatch(line); m != nil {
			headerKind, header = m[1], shortName(m[2])
			if headerKind == "FAIL" {
				p.Failed = append(p.Failed, strings.TrimSpace(line))
			}
			continue
		}
		if strings.HasPrefix(line, "    ") && header != "" {
			text := strings.TrimSpace(line)
			// "file_test.go:123: message" loses its position.
			if i := strings.Index(text, ": "); i > 0 && strings.Contains(text[:i], ".go:") {
				text = text[i+2:]
			}
			switch headerKind {
			case "SKIP":
				if p.Skips[header] == "" {
					p.Skips[header] = text
				} else {
					p.Skips[header] += " " + text
				}
			case "FAIL":
				p.Failed = append(p.Failed, header+": "+text)
			default:
				p.Logs = append(p.Logs, header+": "+text)
			}
			continue
		}
		header = ""
		switch {
		case strings.HasPrefix(line, "pkg: "):
			p.Package = append(p.Package, strings.TrimPrefix(line, "pkg: "))
		case strings.HasPrefix(line, "FAIL") || strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "# "):
			p.Failed = append(p.Failed, strings.TrimSpace(line))
		}
		m := resultLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		name := shortName(m[1])
		f := strings.Fields(m[3])
		if len(f)%2 != 0 {
			continue
		}
		if !seen[name] {
			seen[name] = true
			p.Names = append(p.Names, name)
			p.Values[name] = map[string][]float64{}
		}
		for i := 0; i < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			unit := f[i+1]
			if _, ok := p.Values[name][unit]; !ok {
				p.Units[name] = append(p.Units[name], unit)
			}
			p.Values[name][unit] = append(p.Values[name][unit], v)
		}
	}
	return p
}

// stat is a metric over repetitions: its median and range.
type stat struct {
	N                int
	Median, Min, Max float64
}

func summarize(v []float64) stat {
	if len(v) == 0 {
		return stat{}
	}
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	med := s[n/2]
	if n%2 == 0 {
		med = (s[n/2-1] + s[n/2]) / 2
	}
	return stat{N: n, Median: med, Min: s[0], Max: s[n-1]}
}
