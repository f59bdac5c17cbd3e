package npy

import (
	"bytes"
	"strings"
	"testing"
)

// TestEncodeAsNumPyWrites: the header numpy.save writes for these arrays
// (version 1.0, 64-byte aligned), decoded back to what was encoded.
func TestEncodeAsNumPyWrites(t *testing.T) {
	for _, c := range []struct {
		dtype string
		shape []int64
		dict  string
	}{
		{"<u4", []int64{3}, "{'descr': '<u4', 'fortran_order': False, 'shape': (3,), }"},
		{"<f4", []int64{2708, 1433}, "{'descr': '<f4', 'fortran_order': False, 'shape': (2708, 1433), }"},
		{"|u1", []int64{0}, "{'descr': '|u1', 'fortran_order': False, 'shape': (0,), }"},
	} {
		h := Encode(c.dtype, c.shape, 0)
		if len(h)%64 != 0 || !bytes.HasPrefix(h, []byte("\x93NUMPY\x01\x00")) || h[len(h)-1] != '\n' {
			t.Errorf("%s %v: header of %d bytes %q, want a 64-aligned version 1.0 header", c.dtype, c.shape, len(h), h)
		}
		if got := strings.TrimRight(string(h[10:]), " \n"); got != c.dict {
			t.Errorf("dict %q, want numpy's %q", got, c.dict)
		}
		d, err := Decode(bytes.NewReader(h))
		if err != nil || d.DType != c.dtype || d.Fortran || len(d.Shape) != len(c.shape) || d.DataOffset != int64(len(h)) {
			t.Fatalf("decoded %+v (%v)", d, err)
		}
		for i := range c.shape {
			if d.Shape[i] != c.shape[i] {
				t.Errorf("shape %v, want %v", d.Shape, c.shape)
			}
		}
	}
	if h := Encode("<i8", []int64{7}, 256); len(h) != 256 || h[255] != '\n' {
		t.Errorf("padded to 256: %d bytes", len(h))
	}
}

// raw is a version 1.0 header around dict, as written.
func raw(dict string) []byte {
	return append([]byte{0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, byte(len(dict)), byte(len(dict) >> 8)}, dict...)
}

func TestDecodeRefusesDamagedHeaders(t *testing.T) {
	good := Encode("<i8", []int64{5}, 0)
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty", nil, "short header"},
		{"not npy", []byte("PK\x03\x04 a zip file"), "bad magic"},
		{"cut in the dict", good[:30], "short header"},
		{"version 9", append([]byte("\x93NUMPY\x09\x00"), good[8:]...), "unsupported version"},
		{"huge length", []byte("\x93NUMPY\x02\x00\xff\xff\xff\x7f"), "header of"},
		{"no shape", raw("{'descr': '<i8', 'fortran_order': False}"), "no shape"},
		{"negative dim", raw("{'descr': '<i8', 'fortran_order': False, 'shape': (-1,), }"), "bad shape"},
		{"no descr", raw("{'fortran_order': False, 'shape': (1,), }"), "no descr"},
		{"not a dict", raw("descr <i8"), "not a dictionary"},
	} {
		if _, err := Decode(bytes.NewReader(c.data)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error saying %q", c.name, err, c.want)
		}
	}
}
