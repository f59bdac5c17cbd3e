// Package ctxio holds the one io helper topology's importers share: a
// reader that stops once its context is cancelled.
package ctxio

import (
	"context"
	"io"
)

// Reader fails reads once its context is cancelled, so a parser reading
// through it stops within one buffer of the cancel.
type Reader struct {
	Ctx context.Context
	R   io.Reader
}

func (c *Reader) Read(p []byte) (int, error) {
	if err := c.Ctx.Err(); err != nil {
		return 0, err
	}
	return c.R.Read(p)
}
