// Package validate checks the planning model of package tpc against every
// measurement that gives enough detail to model it: epoch times and
// throughputs the papers gnnplan comes from published (Moment, Hyperion),
// and trainings measured on the machine that made docs/benchmarks.md.
//
// Each case names its source, where in it the figure is and how it was
// read (a number stated in the text, a label printed on a figure, a value
// read off a plot), the configuration, and the inputs the source itself
// measured (a device's read rate, a cache size it set). Every case is
// predicted by the same code recommend plans with (tpc.PredictSetup,
// tpc.PredictCPU) and the same constants (tpc.DefaultAssumptions): a
// case that misses points at a term of the model, never at a constant of
// its own.
//
// Run returns each case beside its prediction, each group's order (the
// configurations a source compared, fastest first, as measured and as
// predicted) and the median and worst |error| of the published cases.
package validate
