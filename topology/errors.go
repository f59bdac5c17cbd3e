package topology

import (
	"errors"
	"fmt"
)

// InputError is a problem with what the user gave (a file, a directory, a
// flag value) that the user can fix. Commands map it to exit code 2 and
// print it as one line.
type InputError struct {
	Path  string // file or directory, if any
	Line  int    // 1-based line, when known
	Field string // JSON field, XML element or flag, when known
	Msg   string // what is wrong and what would be valid
	Err   error  // underlying error, if any
}

func (e *InputError) Error() string {
	s := ""
	if e.Path != "" {
		s = e.Path
		if e.Line > 0 {
			s += fmt.Sprintf(":%d", e.Line)
		}
		s += ": "
	}
	if e.Field != "" {
		s += e.Field + ": "
	}
	s += e.Msg
	if e.Err != nil {
		if s != "" && e.Msg != "" {
			s += ": "
		}
		s += e.Err.Error()
	}
	return s
}

func (e *InputError) Unwrap() error { return e.Err }

// BadInput marks the error as the user's to fix (exit code 2).
func (e *InputError) BadInput() bool { return true }

// IsBadInput reports whether err, or an error it wraps, is a bad-input
// error: one that has a BadInput() bool method returning true.
func IsBadInput(err error) bool {
	var b interface{ BadInput() bool }
	return errors.As(err, &b) && b.BadInput()
}

func inputErrorf(path, field, format string, args ...any) *InputError {
	return &InputError{Path: path, Field: field, Msg: fmt.Sprintf(format, args...)}
}
