package npy

import (
	"bytes"
	"testing"
)

// FuzzDecode: no header, however malformed, makes the parser panic.
func FuzzDecode(f *testing.F) {
	var buf bytes.Buffer
	buf.Write(Encode("<u4", []int64{3}, 0))
	f.Add(buf.Bytes())
	buf.Reset()
	buf.Write(Encode("|u1", []int64{1}, 0))
	f.Add(buf.Bytes())
	f.Add([]byte("\x93NUMPY\x01\x00\x10\x00{'descr': '<u4'}"))
	f.Add([]byte("\x93NUMPY\x02\x00\x05\x00\x00\x00{'shape': ((,}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		h, err := Decode(bytes.NewReader(data))
		if err == nil {
			for _, d := range h.Shape {
				if d < 0 {
					t.Errorf("negative dimension %d accepted", d)
				}
			}
		}
	})
}
