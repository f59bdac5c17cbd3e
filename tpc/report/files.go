package report

import (
	"bytes"
	"path/filepath"
	"strings"

	"github.com/gnnplan/gnnplan/internal/fsutil"
)

// WriteFile writes the review to path, whole or not at all: one HTML
// file, or (markdown) Markdown with its figures as SVG files beside it,
// named by Figures from path's stem.
func (r *Review) WriteFile(path string, markdown bool) error {
	var buf bytes.Buffer
	if !markdown {
		if err := r.WriteHTML(&buf); err != nil {
			return err
		}
		return fsutil.WriteFileAtomic(path, buf.Bytes())
	}
	stem := strings.TrimSuffix(path, filepath.Ext(path))
	if err := r.WriteMarkdown(&buf, stem); err != nil {
		return err
	}
	topo, ssds, gpus := Figures(stem)
	for _, fig := range []struct {
		path string
		svg  []byte
	}{{topo, r.TopologySVG}, {ssds, r.SSDPlotSVG}, {gpus, r.GPUPlotSVG}} {
		if err := fsutil.WriteFileAtomic(fig.path, fig.svg); err != nil {
			return err
		}
	}
	return fsutil.WriteFileAtomic(path, buf.Bytes())
}
