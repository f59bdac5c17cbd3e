// Package spans cuts a batch's rows into contiguous ranges and works on
// them at once: the gather stage's copies (store) and row scaling
// (trainer), each range on a goroutine of its own, so the result is the
// same bits as one goroutine's whatever the count.
package spans

import "sync"

// Span is a range [Lo, Hi) of rows.
type Span struct{ Lo, Hi int }

// Cut cuts n rows into at most threads spans of at least minRows each,
// in order; one span when threads is 0 or 1 or n is small.
func Cut(n, threads, minRows int) []Span {
	k := max(1, min(threads, n/max(minRows, 1)))
	out := make([]Span, k)
	for i := range out {
		out[i] = Span{Lo: i * n / k, Hi: (i + 1) * n / k}
	}
	return out
}

// Run runs f on every span at once, the first on the calling goroutine,
// and returns the error of the lowest span that failed.
func Run(spans []Span, f func(i int, sp Span) error) error {
	if len(spans) == 1 {
		return f(0, spans[0])
	}
	errs := make([]error, len(spans))
	var wg sync.WaitGroup
	for i := 1; i < len(spans); i++ {
		wg.Go(func() { errs[i] = f(i, spans[i]) })
	}
	errs[0] = f(0, spans[0])
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
