//go:build cgo

package kernels

// EmulatedDeviceBytes returns the bytes of device memory g's live
// allocations hold, for a GPU emulated on the CPU (NewEmulatedGPU): what
// a run really allocated, to hold a model of it to. ok is false for a
// real GPU, whose driver counts its own memory.
func EmulatedDeviceBytes(g *GPU) (bytes int64, ok bool) {
	d, ok := g.dev.(*emuDevice)
	if !ok {
		return 0, false
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.liveBytes, true
}
