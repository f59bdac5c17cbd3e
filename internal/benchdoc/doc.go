// Command benchdoc runs gnnplan's benchmarks and renders docs/benchmarks.md,
// the reference of what each benchmark measures, the command a reader runs,
// the target it is held to and the figures of the latest run (`make bench`).
//
// The sections are the table in spec.go. A section's figures come from
// `go test -bench` runs (parsed into medians and min-max spreads over
// -count repetitions) or from gnnplan commands whose output is quoted, or,
// for hardware this machine lacks, from a recorded-results file under
// docs/bench/recorded included verbatim. Every run's raw output is kept in
// docs/bench/results.json, so the document can be rendered again without
// running anything (`make bench-doc`); runs not repeated (the billion-vertex
// ones without -full, or sections left out with -only) keep their previous
// output, and the document says from when and where it is carried.
//
// Both files are written to path.tmp, synced and renamed.
package main
