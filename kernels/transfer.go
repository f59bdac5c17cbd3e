package kernels

import "runtime"

// peerDevice is a device that copies from another device directly: a peer
// copy, over NVLink or PCIe where the topology allows one, which the
// driver stages through host memory where it does not.
type peerDevice interface {
	// peerCopy copies bytes from src's memory at srcPtr to this device's
	// at dst, and reports false when src is not a device it can copy
	// from (another kind of device).
	peerCopy(dst uintptr, src device, srcPtr uintptr, bytes int) bool
}

// Transfer copies src, a matrix on backend sb, into dst on backend db and
// returns stage. dst takes src's shape. On one backend it is a Copy;
// between two GPUs it is one peer copy; otherwise the values go through
// host memory: downloaded into stage (grown when too small), then
// uploaded. Callers keep the returned stage for their next call, so
// moving a model's gradients every step allocates nothing.
func Transfer(db Backend, dst *Mat, sb Backend, src *Mat, stage []float32) []float32 {
	if db == sb {
		db.Resize(dst, src.Rows, src.Cols)
		db.Copy(dst, src)
		return stage
	}
	dg, okd := db.(*GPU)
	sg, oks := sb.(*GPU)
	if okd && oks && src.Contiguous() && src.Len() > 0 {
		if p, ok := dg.dev.(peerDevice); ok {
			dg.Resize(dst, src.Rows, src.Cols)
			if dst.Contiguous() && p.peerCopy(dst.d, sg.dev, src.d, 4*src.Len()) {
				runtime.KeepAlive(src)
				runtime.KeepAlive(dst)
				return stage
			}
		}
	}
	n := src.Len()
	if cap(stage) < n {
		stage = make([]float32, n)
	}
	stage = stage[:n]
	sb.Download(stage, src)
	db.Upload(dst, src.Rows, src.Cols, stage)
	return stage
}
