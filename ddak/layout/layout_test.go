package layout

import (
	"bytes"
	"testing"
)

// FuzzReadNpyHeader: no header, however malformed, makes the parser panic.
func FuzzReadNpyHeader(f *testing.F) {
	var buf bytes.Buffer
	writeNpy(&buf, "<u4", []uint32{1, 2, 3})
	f.Add(buf.Bytes())
	buf.Reset()
	writeNpy(&buf, "|u1", []uint8{1})
	f.Add(buf.Bytes())
	f.Add([]byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<u4'}"))
	f.Add([]byte("\x93NUMPY\x02\x00\x05\x00\x00\x00{'shape': ((,}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := readNpyHeader(bytes.NewReader(data))
		if err == nil {
			for _, d := range h.shape {
				if d < 0 {
					t.Errorf("negative dimension %d accepted", d)
				}
			}
		}
	})
}
