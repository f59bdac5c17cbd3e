package inputerr

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"
)

func TestErrorLine(t *testing.T) {
	for _, c := range []struct {
		err  *Error
		want string
	}{
		{&Error{Path: "m.json", Line: 3, Field: "nodes[2].lanes", Msg: "33 (valid: 0 to 32)"}, "m.json:3: nodes[2].lanes: 33 (valid: 0 to 32)"},
		{&Error{Field: "--budget", Msg: "-1 (want a budget in USD > 0)"}, "--budget: -1 (want a budget in USD > 0)"},
		{&Error{Path: "plan.json", Err: fs.ErrNotExist}, "plan.json: file does not exist"},
		{&Error{Path: "d", Msg: "cannot read", Err: fs.ErrPermission}, "d: cannot read: permission denied"},
		{Errorf("x.npy", "", "%d rows", 3), "x.npy: 3 rows"},
	} {
		if got := c.err.Error(); got != c.want {
			t.Errorf("%#v: %q, want %q", c.err, got, c.want)
		}
	}
}

func TestIsSeesWrappedErrors(t *testing.T) {
	e := &Error{Path: "p", Msg: "bad", Err: fs.ErrNotExist}
	for _, c := range []struct {
		err  error
		want bool
	}{
		{e, true},
		{fmt.Errorf("loading: %w", e), true},
		{errors.New("disk on fire"), false},
		{nil, false},
	} {
		if got := Is(c.err); got != c.want {
			t.Errorf("Is(%v) = %v, want %v", c.err, got, c.want)
		}
	}
	if !errors.Is(e, fs.ErrNotExist) {
		t.Error("the underlying error is not unwrapped")
	}
}
