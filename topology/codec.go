package topology

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/gnnplan/gnnplan/internal/fsutil"
)

// Encode writes the machine as indented
// JSON with a trailing newline. Decoding the output gives an equal Machine.
func Encode(w io.Writer, m *Machine) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(m); err != nil {
		return fmt.Errorf("encode machine %q: %w", m.Name, err)
	}
	return nil
}

// Decode reads a machine JSON document. Unknown fields are refused (a
// misspelt "gbps" must not silently become a zero capacity), and the result
// is validated. Errors are *InputError naming path and, for syntax errors,
// the line.
func Decode(path string, data []byte) (*Machine, error) {
	var probe struct {
		SchemaVersion *int `json:"schema_version"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return nil, jsonError(path, data, err)
	}
	if probe.SchemaVersion == nil {
		return nil, inputErrorf(path, "schema_version", "missing: this is not a gnnplan machine file (want a JSON object with \"schema_version\": %d, as `gnnplan discover --save` writes)", SchemaVersion)
	}
	if *probe.SchemaVersion != SchemaVersion {
		return nil, inputErrorf(path, "schema_version", "%d is not supported (this gnnplan reads version %d)", *probe.SchemaVersion, SchemaVersion)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var m Machine
	if err := dec.Decode(&m); err != nil {
		return nil, jsonError(path, data, err)
	}
	if dec.More() {
		return nil, inputErrorf(path, "", "trailing data after the machine object")
	}
	if m.Nodes == nil {
		m.Nodes = []Node{}
	}
	if m.Links == nil {
		m.Links = []Link{}
	}
	if err := m.validateInput(); err != nil {
		return nil, &InputError{Path: path, Msg: err.Error()}
	}
	return &m, nil
}

// Load reads and decodes a machine JSON file.
func Load(path string) (*Machine, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &InputError{Path: path, Msg: "cannot read machine file", Err: err}
	}
	return Decode(path, data)
}

// Save writes the machine as JSON to path atomically.
func Save(path string, m *Machine) error {
	var buf bytes.Buffer
	if err := Encode(&buf, m); err != nil {
		return err
	}
	return fsutil.WriteFileAtomic(path, buf.Bytes())
}

// jsonError turns a decoding error into an InputError with a line number.
func jsonError(path string, data []byte, err error) error {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn):
		return &InputError{Path: path, Line: lineOf(data, syn.Offset), Msg: "malformed JSON: " + syn.Error()}
	case errors.As(err, &typ):
		return &InputError{Path: path, Line: lineOf(data, typ.Offset), Field: typ.Field,
			Msg: fmt.Sprintf("has a JSON %s where a %s is expected", typ.Value, typ.Type)}
	case errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF):
		return &InputError{Path: path, Msg: "truncated JSON (the document ends early)"}
	case strings.HasPrefix(err.Error(), "json: unknown field"):
		f := strings.TrimPrefix(err.Error(), "json: unknown field ")
		return &InputError{Path: path, Field: strings.Trim(f, `"`),
			Msg: "unknown field (check the spelling and units: capacities are \"GBps\", memory \"memory_GiB\")"}
	}
	return &InputError{Path: path, Msg: "malformed JSON", Err: err}
}

func lineOf(data []byte, offset int64) int {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset < 0 {
		offset = 0
	}
	return bytes.Count(data[:offset], []byte("\n")) + 1
}
