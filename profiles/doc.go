// Package profiles holds gnnplan's embedded descriptions of machines people
// plan for without owning them: Moment's machines A and B (SC'25 section
// 2.3, Table 3) and Hyperion's machine A (Table I). Each profile is a
// topology.Machine with its empty slots, so placement search can move
// devices between them; every figure the papers leave open is written down
// as a note on the machine.
//
// Units follow package topology: GB/s (decimal) for links, GiB for memory.
package profiles
