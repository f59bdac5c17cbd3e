// Package npy reads and writes the headers of NumPy's .npy files, the
// format gnnplan's datasets, layouts and hotness counts are stored in
// (numpy.org/doc/stable/reference/generated/numpy.lib.format.html). The
// parser takes untrusted files: it bounds what it allocates and returns
// an error, never a panic, on any header.
package npy

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Header is what a .npy header says about the array after it.
type Header struct {
	DType   string // NumPy type string: "<f4", "<i8", "|u1", ...
	Fortran bool   // column-major
	Shape   []int64
	// DataOffset is where the first element starts, in bytes from the
	// start of the file.
	DataOffset int64
}

// MaxHeaderBytes bounds the header Decode reads (NumPy writes a few
// hundred bytes).
const MaxHeaderBytes = 1 << 20

// Encode returns a version 1.0 header for a C-order array of dtype and
// shape: the magic, the version, the header's length and the dict,
// padded with spaces and a newline so the data starts 64-byte aligned,
// or, with padTo > 0, padded to padTo bytes in all (so a header written
// for a larger count can be overwritten in place).
func Encode(dtype string, shape []int64, padTo int) []byte {
	dims := make([]string, len(shape))
	for i, d := range shape {
		dims[i] = strconv.FormatInt(d, 10)
	}
	s := strings.Join(dims, ", ")
	if len(shape) == 1 {
		s += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", dtype, s)
	total := 10 + len(dict) + 1
	if padTo > 0 {
		dict += strings.Repeat(" ", max(0, padTo-total))
	} else {
		dict += strings.Repeat(" ", (64-total%64)%64)
	}
	h := []byte("\x93NUMPY\x01\x00")
	h = binary.LittleEndian.AppendUint16(h, uint16(len(dict)+1))
	h = append(h, dict...)
	return append(h, '\n')
}

// Decode reads a header from r, positioned at the file's start, and
// leaves r at the first element.
func Decode(r io.Reader) (Header, error) {
	var h Header
	var pre [8]byte
	if _, err := io.ReadFull(r, pre[:]); err != nil {
		return h, fmt.Errorf("short header: %w", err)
	}
	if string(pre[:6]) != "\x93NUMPY" {
		return h, errors.New("bad magic")
	}
	var n int
	switch pre[6] {
	case 1:
		var l [2]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return h, fmt.Errorf("short header: %w", err)
		}
		n = int(binary.LittleEndian.Uint16(l[:]))
		h.DataOffset = 10 + int64(n)
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return h, fmt.Errorf("short header: %w", err)
		}
		n = int(binary.LittleEndian.Uint32(l[:]))
		h.DataOffset = 12 + int64(n)
	default:
		return h, fmt.Errorf("unsupported version %d.%d", pre[6], pre[7])
	}
	if n > MaxHeaderBytes {
		return h, fmt.Errorf("header of %d bytes", n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return h, fmt.Errorf("short header: %w", err)
	}
	dict := strings.TrimSpace(string(buf))
	if !strings.HasPrefix(dict, "{") || !strings.HasSuffix(dict, "}") {
		return h, errors.New("header is not a dictionary")
	}
	// value returns the text after 'key': up to the end of the value
	// (a quoted string, a parenthesized tuple or a bare word).
	value := func(key string) (string, bool) {
		i := strings.Index(dict, "'"+key+"'")
		if i < 0 {
			return "", false
		}
		rest := strings.TrimLeft(dict[i+len(key)+2:], " ")
		if !strings.HasPrefix(rest, ":") {
			return "", false
		}
		rest = strings.TrimLeft(rest[1:], " ")
		var end int
		switch {
		case strings.HasPrefix(rest, "'"):
			end = strings.Index(rest[1:], "'") + 2
		case strings.HasPrefix(rest, "("):
			end = strings.Index(rest, ")") + 1
		default:
			end = strings.IndexAny(rest, ",}")
		}
		if end <= 0 {
			return "", false
		}
		return rest[:end], true
	}
	d, ok := value("descr")
	if !ok || len(d) < 2 || d[0] != '\'' {
		return h, errors.New("no descr")
	}
	h.DType = d[1 : len(d)-1]
	fo, ok := value("fortran_order")
	switch {
	case ok && fo == "False":
	case ok && fo == "True":
		h.Fortran = true
	default:
		return h, errors.New("no fortran_order")
	}
	sh, ok := value("shape")
	if !ok || len(sh) < 2 || sh[0] != '(' {
		return h, errors.New("no shape")
	}
	for _, tok := range strings.Split(sh[1:len(sh)-1], ",") {
		tok = strings.TrimSpace(tok)
		if tok == "" {
			continue
		}
		d, err := strconv.ParseInt(strings.TrimSuffix(tok, "L"), 10, 64)
		if err != nil || d < 0 {
			return h, fmt.Errorf("bad shape %s", sh)
		}
		h.Shape = append(h.Shape, d)
	}
	return h, nil
}
