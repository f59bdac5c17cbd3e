package ioread_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/gnnplan/gnnplan/trainer/ioread"
)

// Three 16-byte rows read from a file in one batch, in the order asked,
// each into its own buffer (the pread engine, through the page cache).
func ExampleReader_Read() {
	dir, err := os.MkdirTemp("", "ioread")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "rows.bin")
	data := make([]byte, 8*16)
	for i := range data {
		data[i] = byte('a' + i/16) // row r is 16 copies of the r-th letter
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		log.Fatal(err)
	}
	r, err := ioread.Open([]string{path}, ioread.Options{QueueDepth: 2, Engine: ioread.EnginePread})
	if err != nil {
		log.Fatal(err)
	}
	defer r.Close()
	var reqs []ioread.Request
	for _, row := range []int64{5, 0, 2} {
		reqs = append(reqs, ioread.Request{File: 0, Offset: 16 * row, Length: 16, Dst: make([]byte, 16)})
	}
	st, err := r.Read(context.Background(), reqs)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range reqs {
		fmt.Printf("row %d: %s\n", q.Offset/16, q.Dst)
	}
	fmt.Printf("%d requests, %d useful bytes\n", st.Requests, st.UsefulBytes)
	// Output:
	// row 5: ffffffffffffffff
	// row 0: aaaaaaaaaaaaaaaa
	// row 2: cccccccccccccccc
	// 3 requests, 48 useful bytes
}
