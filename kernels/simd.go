package kernels

import "github.com/gnnplan/gnnplan/kernels/internal/vec"

// The inner loops the graph kernels spend their time in (package vec).

func addTo(dst, src []float32)                           { vec.Add(dst, src) }
func add4To(dst, a, b, c, d []float32)                   { vec.Add4(dst, a, b, c, d) }
func axpyTo(dst []float32, alpha float32, src []float32) { vec.Axpy(dst, alpha, src) }
func prefetchRow(x []float32)                            { vec.Prefetch(x) }
