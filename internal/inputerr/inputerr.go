// Package inputerr is the error gnnplan returns for what the user gave
// (a file, a directory, a flag value) and can fix: commands print it as
// one line and exit 2. Every package that reads user input returns it,
// so it sits below all of them.
package inputerr

import (
	"errors"
	"fmt"
)

// Error is a problem with what the user gave, with where it is.
type Error struct {
	Path  string // file or directory, if any
	Line  int    // 1-based line, when known
	Field string // JSON field, XML element or flag, when known
	Msg   string // what is wrong and what would be valid
	Err   error  // underlying error, if any
}

// Error writes "path:line: field: msg: err", leaving out what is empty.
func (e *Error) Error() string {
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

func (e *Error) Unwrap() error { return e.Err }

// BadInput marks the error as the user's to fix (exit code 2).
func (e *Error) BadInput() bool { return true }

// Errorf is an Error for path and field with a formatted message.
func Errorf(path, field, format string, args ...any) *Error {
	return &Error{Path: path, Field: field, Msg: fmt.Sprintf(format, args...)}
}

// Is reports whether err, or an error it wraps, is a bad-input error:
// one that has a BadInput() bool method returning true.
func Is(err error) bool {
	var b interface{ BadInput() bool }
	return errors.As(err, &b) && b.BadInput()
}
