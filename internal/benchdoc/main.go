package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/gnnplan/gnnplan/internal/fsutil"
)

const schemaVersion = 1

// results is docs/bench/results.json: every run's raw output with the
// machine and time it ran on, so the document renders again without runs.
type results struct {
	SchemaVersion int         `json:"schema_version"`
	Machine       machine     `json:"machine"` // of the latest `make bench`
	Runs          []runResult `json:"runs"`
}

type runResult struct {
	ID          string    `json:"id"` // section/run
	Command     string    `json:"command"`
	Machine     machine   `json:"machine"`
	Started     time.Time `json:"started"`
	Seconds     float64   `json:"seconds"`
	ExitCode    int       `json:"exit_code"`
	WallSeconds []float64 `json:"wall_seconds,omitempty"` // CLI runs: one per repetition
	Output      string    `json:"output"`                 // go test: stdout and stderr; CLI: the last repetition's stdout
	Stderr      string    `json:"stderr,omitempty"`       // CLI: the tail of a failed run's stderr
}

type machine struct {
	CPU          string `json:"cpu"`
	CPUs         int    `json:"cpus"`
	MemoryGiB    int    `json:"memory_gib"`
	Kernel       string `json:"kernel"`
	GoVersion    string `json:"go_version"`
	Date         string `json:"date"` // UTC, to the minute
	LoadAverage  string `json:"load_average"`
	OpenBLASCore string `json:"openblas_coretype"` // OPENBLAS_CORETYPE as the runs saw it; "" when unset
	Revision     string `json:"revision"`
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("benchdoc: ")
	var (
		doRun   = flag.Bool("run", false, "run the benchmarks (without it, only render from -results)")
		full    = flag.Bool("full", false, "with -run: include the billion-vertex and other long runs")
		count   = flag.Int("count", 3, "with -run: repetitions of each benchmark (-count) and each timed command")
		only    = flag.String("only", "", "with -run: comma-separated section IDs to run; the others keep their saved results")
		resPath = flag.String("results", "docs/bench/results.json", "the raw results file (read, and written with -run)")
		recDir  = flag.String("recorded", "docs/bench/recorded", "directory of recorded results for hardware this machine lacks")
		out     = flag.String("out", "docs/benchmarks.md", "the document to write")
		list    = flag.Bool("list", false, "print the section IDs and exit")
	)
	flag.Parse()
	if *list {
		for _, s := range sections {
			fmt.Printf("%-10s %s\n", s.ID, s.Title)
		}
		return
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()

	prev, err := readResults(*resPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Fatal(err)
	}
	rec, err := readRecorded(*recDir)
	if err != nil {
		log.Fatal(err)
	}
	if *doRun {
		if *count < 1 {
			log.Fatalf("-count %d: must be at least 1", *count)
		}
		sel, err := selected(*only)
		if err != nil {
			log.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(*resPath), 0o755); err != nil {
			log.Fatal(err)
		}
		// Saved after every run, so an interrupted or hour-long make bench
		// leaves what it measured, rendered.
		save := func(res *results) error {
			data, err := json.MarshalIndent(res, "", "  ")
			if err != nil {
				return err
			}
			if err := fsutil.WriteFileAtomic(*resPath, append(data, '\n')); err != nil {
				return err
			}
			return writeDoc(*out, res, rec)
		}
		m := thisMachine(ctx)
		res, err := runAll(ctx, prev, m, runOptions{full: *full, count: *count, only: sel, save: save}, os.Stderr)
		if err != nil {
			log.Fatal(err)
		}
		prev = res
	}
	if prev == nil {
		log.Fatalf("%s: no results to render; run with -run (make bench) first", *resPath)
	}
	if err := writeDoc(*out, prev, rec); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "benchdoc: wrote %s from %s\n", *out, *resPath)
}

func writeDoc(path string, res *results, rec map[string]recorded) error {
	var doc bytes.Buffer
	render(&doc, res, rec)
	return fsutil.WriteFileAtomic(path, doc.Bytes())
}

func selected(only string) (map[string]bool, error) {
	if only == "" {
		return nil, nil
	}
	known := map[string]bool{}
	for _, s := range sections {
		known[s.ID] = true
	}
	sel := map[string]bool{}
	for _, id := range strings.Split(only, ",") {
		id = strings.TrimSpace(id)
		if !known[id] {
			return nil, fmt.Errorf("-only %q: no section %q (benchdoc -list names them)", only, id)
		}
		sel[id] = true
	}
	return sel, nil
}

func readResults(path string) (*results, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r results
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	if r.SchemaVersion != schemaVersion {
		return nil, fmt.Errorf("read %s: schema_version %d, want %d", path, r.SchemaVersion, schemaVersion)
	}
	return &r, nil
}

type runOptions struct {
	full  bool
	count int
	only  map[string]bool          // nil: every section
	save  func(res *results) error // called after each run with every result so far; may be nil
}

// runAll runs every selected run in spec order and keeps the previous
// results of the others (and of -full runs on a run without -full).
func runAll(ctx context.Context, prev *results, m machine, o runOptions, progress io.Writer) (*results, error) {
	old := map[string]runResult{}
	if prev != nil {
		for _, r := range prev.Runs {
			old[r.ID] = r
		}
	}
	pkgs, err := benchmarkPackages(".")
	if err != nil {
		return nil, err
	}
	res := &results{SchemaVersion: schemaVersion, Machine: m}
	for _, s := range sections {
		for _, r := range s.Runs {
			id := s.ID + "/" + r.ID
			if (o.only != nil && !o.only[s.ID]) || (r.Full && !o.full) {
				if p, ok := old[id]; ok {
					res.Runs = append(res.Runs, p)
				}
				continue
			}
			cmd, err := r.command(pkgs, o.count)
			if err != nil {
				return nil, fmt.Errorf("section %s: %w", id, err)
			}
			fmt.Fprintf(progress, "benchdoc: %s: %s\n", id, firstLine(cmd))
			rr := execute(ctx, cmd, r, o.count)
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			rr.ID, rr.Machine = id, m
			fmt.Fprintf(progress, "benchdoc: %s: exit %d after %.0f s\n", id, rr.ExitCode, rr.Seconds)
			res.Runs = append(res.Runs, rr)
			if o.save != nil {
				// The runs still to come keep their previous results meanwhile.
				if err := o.save(withPending(res, old, id)); err != nil {
					return nil, err
				}
			}
		}
	}
	return res, nil
}

// withPending is res followed by the previous results of the runs after
// the one just done, in spec order.
func withPending(res *results, old map[string]runResult, done string) *results {
	out := *res
	out.Runs = append([]runResult(nil), res.Runs...)
	after := false
	for _, s := range sections {
		for _, r := range s.Runs {
			id := s.ID + "/" + r.ID
			if after {
				if p, ok := old[id]; ok {
					out.Runs = append(out.Runs, p)
				}
			}
			if id == done {
				after = true
			}
		}
	}
	return &out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i] + " ..."
	}
	return s
}

// benchFunc finds benchmark declarations; their files' packages are where
// go test runs them, wherever packages have moved.
var benchFunc = regexp.MustCompile(`(?m)^func (Benchmark\w+)\(b \*testing\.B\)`)

// benchmarkPackages maps each benchmark function to its package directory
// ("./maxflow"), from the *_test.go files under root (build-tagged files
// included: the CUDA benchmarks resolve too, but no default run names them).
func benchmarkPackages(root string) (map[string]string, error) {
	pkgs := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			n := d.Name()
			if path != root && (strings.HasPrefix(n, ".") || n == "testdata" || n == "vendor" || n == "bin") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range benchFunc.FindAllSubmatch(data, -1) {
			dir := filepath.ToSlash(filepath.Dir(path))
			pkgs[string(m[1])] = "./" + strings.TrimPrefix(dir, "./")
		}
		return nil
	})
	return pkgs, err
}

// command is the shell command a run executes, exactly as the document
// shows it.
func (r run) command(pkgs map[string]string, count int) (string, error) {
	if r.CLI != "" {
		return r.CLI, nil
	}
	if r.Count > 0 {
		count = r.Count
	}
	var dirs []string
	for _, b := range r.Benchmarks {
		d, ok := pkgs[b]
		if !ok {
			return "", fmt.Errorf("%s: no such benchmark in any *_test.go", b)
		}
		if !contains(dirs, d) {
			dirs = append(dirs, d)
		}
	}
	line := func(names []string, dirs []string) string {
		var short []string
		for _, n := range names {
			short = append(short, strings.TrimPrefix(n, "Benchmark"))
		}
		re := "^Benchmark" + short[0] + "$"
		if len(short) > 1 {
			re = "^Benchmark(" + strings.Join(short, "|") + ")$"
		}
		if r.Sub != "" {
			re += "/" + r.Sub
		}
		var b strings.Builder
		if r.Env != "" {
			b.WriteString(r.Env + " ")
		}
		fmt.Fprintf(&b, "go test -ldflags=-checklinkname=0 -run '^$' -bench '%s' -benchmem -count %d", re, count)
		if r.Benchtime != "" {
			b.WriteString(" -benchtime " + r.Benchtime)
		}
		if r.Timeout != "" {
			b.WriteString(" -timeout " + r.Timeout)
		}
		// The test binary's own flags go after the packages: go test
		// takes an unknown flag before them for the end of its own.
		b.WriteString(" " + strings.Join(dirs, " "))
		if r.Flags != "" {
			b.WriteString(" " + r.Flags)
		}
		return b.String()
	}
	if !r.Separate {
		return line(r.Benchmarks, dirs), nil
	}
	var lines []string
	for _, b := range r.Benchmarks {
		lines = append(lines, line([]string{b}, []string{pkgs[b]}))
	}
	return strings.Join(lines, "\n"), nil
}

func contains(s []string, x string) bool {
	for _, v := range s {
		if v == x {
			return true
		}
	}
	return false
}

// execute runs a command with bash from the repository root. A CLI run
// marked Repeat runs count times; its wall times are kept.
func execute(ctx context.Context, command string, r run, count int) runResult {
	start := time.Now()
	rr := runResult{Command: command, Started: start.UTC().Truncate(time.Second)}
	reps := 1
	if r.CLI != "" && r.Repeat {
		reps = count
	}
	for i := 0; i < reps; i++ {
		cmd := exec.CommandContext(ctx, "bash", "-c", command)
		var stdout, stderr bytes.Buffer
		if r.CLI != "" {
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
		} else {
			cmd.Stdout, cmd.Stderr = &stdout, &stdout
		}
		t0 := time.Now()
		err := cmd.Run()
		wall := time.Since(t0).Seconds()
		rr.Output = stdout.String()
		rr.ExitCode = 0
		if err != nil {
			rr.ExitCode = -1
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				rr.ExitCode = ee.ExitCode()
			}
			rr.Stderr = tail(stderr.String(), 20)
			if rr.Stderr == "" {
				rr.Stderr = err.Error()
			}
		}
		if r.CLI != "" {
			rr.WallSeconds = append(rr.WallSeconds, wall)
		}
		if err != nil || ctx.Err() != nil {
			break
		}
	}
	rr.Seconds = time.Since(start).Seconds()
	return rr
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// thisMachine describes where the runs happen: lscpu's model name, the
// CPUs Go sees, memory, kernel, the go command's version, the date.
func thisMachine(ctx context.Context) machine {
	m := machine{
		CPUs:         runtime.NumCPU(),
		Date:         time.Now().UTC().Format("2006-01-02 15:04 UTC"),
		OpenBLASCore: os.Getenv("OPENBLAS_CORETYPE"),
	}
	if out, err := exec.CommandContext(ctx, "lscpu").Output(); err == nil {
		for _, l := range strings.Split(string(out), "\n") {
			if v, ok := strings.CutPrefix(l, "Model name:"); ok && m.CPU == "" {
				m.CPU = strings.TrimSpace(v)
			}
		}
	}
	if data, err := os.ReadFile("/proc/meminfo"); err == nil {
		for _, l := range strings.Split(string(data), "\n") {
			if v, ok := strings.CutPrefix(l, "MemTotal:"); ok {
				kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
				m.MemoryGiB = int((kb + 1<<19) >> 20)
			}
		}
	}
	if data, err := os.ReadFile("/proc/loadavg"); err == nil {
		if f := strings.Fields(string(data)); len(f) >= 3 {
			m.LoadAverage = strings.Join(f[:3], " ")
		}
	}
	if out, err := exec.CommandContext(ctx, "uname", "-r").Output(); err == nil {
		m.Kernel = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "go", "env", "GOVERSION").Output(); err == nil {
		m.GoVersion = strings.TrimSpace(string(out))
	}
	if out, err := exec.CommandContext(ctx, "git", "describe", "--always", "--dirty").Output(); err == nil {
		m.Revision = strings.TrimSpace(string(out))
	}
	return m
}

// recorded is a results file for hardware this machine lacks: a few
// "key: value" lines (title, date, machine, command), a line "---", then
// markdown included as it is.
type recorded struct {
	File                          string
	Title, Date, Machine, Command string
	// Why says why make bench does not run it again (default: the
	// machine lacks the hardware).
	Why  string
	Body string
}

func readRecorded(dir string) (map[string]recorded, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]recorded{}, nil
	}
	if err != nil {
		return nil, err
	}
	out := map[string]recorded{}
	var names []string
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".md") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	for _, n := range names {
		data, err := os.ReadFile(filepath.Join(dir, n))
		if err != nil {
			return nil, err
		}
		rec, err := parseRecorded(n, string(data))
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", filepath.Join(dir, n), err)
		}
		out[n] = rec
	}
	return out, nil
}

func parseRecorded(name, text string) (recorded, error) {
	head, body, ok := strings.Cut(text, "\n---\n")
	if !ok {
		return recorded{}, errors.New(`no "---" line after the header`)
	}
	r := recorded{File: name, Body: strings.TrimSpace(body)}
	for i, l := range strings.Split(head, "\n") {
		k, v, ok := strings.Cut(l, ":")
		if !ok {
			return recorded{}, fmt.Errorf("line %d: want key: value", i+1)
		}
		v = strings.TrimSpace(v)
		switch strings.TrimSpace(k) {
		case "title":
			r.Title = v
		case "date":
			r.Date = v
		case "machine":
			r.Machine = v
		case "command":
			r.Command = v
		case "why":
			r.Why = v
		default:
			return recorded{}, fmt.Errorf("line %d: unknown key %q (valid: title, date, machine, command, why)", i+1, k)
		}
	}
	if r.Date == "" || r.Machine == "" || r.Command == "" {
		return recorded{}, errors.New("date, machine and command are required")
	}
	return r, nil
}
