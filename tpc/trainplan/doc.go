// Package trainplan connects a plan to a training run on this machine:
// the trainer's settings merged from the model's paper defaults, the
// plan's workload and the user's flags (Settings); the epoch predicted
// from a probe of the run's own batches, Hyperion's TPC profiler feeding
// tpc's model (Predict); the report that sets each epoch beside that
// prediction and the plan's (NewReport); and a CPU plan of this machine
// from its measured rates (ThisMachine). Errors in what the user gave
// are inputerr errors naming the flag.
package trainplan
