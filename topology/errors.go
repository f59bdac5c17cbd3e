package topology

import "github.com/gnnplan/gnnplan/internal/inputerr"

// InputError is a problem with what the user gave that the user can fix
// (package inputerr); commands map it to exit code 2.
type InputError = inputerr.Error

// IsBadInput reports whether err, or an error it wraps, is a bad-input
// error (inputerr.Is).
func IsBadInput(err error) bool { return inputerr.Is(err) }

func inputErrorf(path, field, format string, args ...any) *InputError {
	return inputerr.Errorf(path, field, format, args...)
}
