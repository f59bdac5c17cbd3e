// Command loaderbench measures train's loaders out of core side by side
// (docs/loaders.md): rounds of a run in memory and a run with each loader
// from the store, alternating so that a shared machine's drift falls on
// all of them, then one table of each loader's throughput over in
// memory's, the bytes it read an epoch, its read amplification and its
// prediction's error, at the epochs' one disk rate and at each batch's
// own reads.
//
//	go run ./internal/loaderbench -dataset DIR [-rounds 3] [-loaders online,packed,multistage]
//
// The dataset needs a materialized store (`place --materialize`). Each
// run's JSON is kept under -out; a run that fails stops the rounds with
// its error. Bad flags exit 2.
package main
