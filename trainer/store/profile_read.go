package store

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/gnnplan/gnnplan/internal/inputerr"
)

// ReadProfile reads a profile written by `gnnplan profile --save`; errors
// in the file are inputerr errors naming field (the flag that gave path).
func ReadProfile(path, field string) (*MachineProfile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &inputerr.Error{Path: path, Field: field, Msg: "cannot read profile", Err: err}
	}
	var p MachineProfile
	if err := json.Unmarshal(data, &p); err != nil {
		return nil, &inputerr.Error{Path: path, Field: field, Msg: "malformed profile JSON", Err: err}
	}
	if p.SchemaVersion != ProfileSchemaVersion {
		return nil, &inputerr.Error{Path: path, Field: "schema_version", Msg: fmt.Sprintf("%d (want %d, from gnnplan profile)", p.SchemaVersion, ProfileSchemaVersion)}
	}
	return &p, nil
}
