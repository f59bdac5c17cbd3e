package main

import (
	"strings"
	"testing"
)

// TestUnknownCommandExitsTwo: an unknown command is a usage error like an
// unknown flag: exit 2 and one line naming the valid commands, with a
// suggestion for a near miss; no command prints the help and exits 0
// (issue 34, finding 7).
func TestUnknownCommandExitsTwo(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"foo"}, `unknown command "foo": valid: catalog, completion, dataset, discover`},
		{[]string{"recomend"}, "did you mean recommend?"},
		{[]string{"recommend", "--nosuchflag"}, "unknown flag: --nosuchflag"},
	} {
		code, _, errOut := runCLI(t, tc.args...)
		if code != 2 || !strings.Contains(errOut, tc.want) || strings.Count(strings.TrimSpace(errOut), "\n") != 0 {
			t.Errorf("gnnplan %s: exit %d, %q; want exit 2 and one line saying %q", strings.Join(tc.args, " "), code, errOut, tc.want)
		}
	}
	if code, out, _ := runCLI(t); code != 0 || !strings.Contains(out, "Available Commands") {
		t.Errorf("gnnplan alone: exit %d, want the help and 0", code)
	}
}
