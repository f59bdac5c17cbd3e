// Package tier names the places feature rows are stored: a GPU's memory,
// a socket's memory, an SSD. The planner's flow model, the layout and the
// trainer's store all speak of them, so the names sit below all three.
package tier

// Kind is a storage tier, as plans and layouts write it.
type Kind string

// The tiers, fastest first.
const (
	GPUMem  Kind = "gpu_memory"
	HostMem Kind = "host_memory"
	SSD     Kind = "ssd"
)
