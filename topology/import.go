package topology

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"os"
)

// Import reads a machine description from a file, recognising its format
// by content: gnnplan machine JSON, NCCL/RCCL topology XML (<system>), or
// hwloc XML (<topology>). An NCCL graph file (<graphs>) is refused: it holds
// ring/tree channels, not the hardware.
func Import(path string) (*Machine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{Path: path, Field: "--from", Msg: "cannot read file", Err: err}
	}
	return ImportBytes(path, data)
}

// ImportBytes is Import for data already in memory; path names it in errors.
func ImportBytes(path string, data []byte) (*Machine, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) == 0 {
		return nil, inputErrorf(path, "", "empty file (want machine JSON, NCCL/RCCL topology XML or hwloc XML)")
	}
	if trimmed[0] == '{' {
		return Decode(path, data)
	}
	root, line, err := xmlRoot(data)
	if err != nil {
		return nil, &InputError{Path: path, Line: line, Msg: "neither JSON nor well-formed XML (want machine JSON, NCCL/RCCL topology XML or hwloc XML)", Err: err}
	}
	switch root {
	case "system":
		return parseNCCLXML(path, data)
	case "topology":
		return parseHwlocXML(path, data)
	case "graphs", "graph":
		return nil, &InputError{Path: path, Line: line, Field: "<" + root + ">",
			Msg: "this is an NCCL channel graph (ring/tree channels, NCCL_GRAPH_FILE), not a topology: give the NCCL topology file (<system>, NCCL_TOPO_FILE or NCCL_TOPO_DUMP_FILE) instead"}
	}
	return nil, &InputError{Path: path, Line: line, Field: "<" + root + ">",
		Msg: "unknown XML document (want NCCL/RCCL <system> or hwloc <topology>)"}
}

// xmlRoot returns the name of the first element and its line.
func xmlRoot(data []byte) (string, int, error) {
	dec := xml.NewDecoder(bytes.NewReader(data))
	for {
		tok, err := dec.Token()
		line, _ := dec.InputPos()
		if err != nil {
			if errors.Is(err, io.EOF) {
				return "", line, errors.New("no root element")
			}
			return "", line, err
		}
		if se, ok := tok.(xml.StartElement); ok {
			return se.Name.Local, line, nil
		}
	}
}
