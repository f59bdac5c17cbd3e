package textout

import (
	"bytes"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/schollz/progressbar/v3"
)

// TestProgressBarsFitTheTerminal: a phase's bar with a long description
// and large counts, drawn at the width barWidth gives for 100 columns,
// stays within 100 columns (issue 34, finding 7: bars were about 105).
func TestProgressBarsFitTheTerminal(t *testing.T) {
	ansi := regexp.MustCompile("\x1b\\[[0-9;]*[A-Za-z]")
	for _, desc := range []string{"synth: drawing edges into 6 row buckets", "epoch 10/10  loss 0.1234  1234567 samples/s", "x"} {
		var buf bytes.Buffer
		bar := progressbar.NewOptions64(9_999_999, progressbar.OptionSetWriter(&buf), progressbar.OptionSetDescription(desc),
			progressbar.OptionShowCount(), progressbar.OptionSetPredictTime(true), progressbar.OptionSetWidth(BarWidth(100, len(desc))))
		for i := range 5 {
			bar.Add64(1_234_567)
			time.Sleep(time.Duration(i) * 30 * time.Millisecond)
		}
		widest := 0
		for _, line := range strings.Split(strings.ReplaceAll(buf.String(), "\r", "\n"), "\n") {
			widest = max(widest, len([]rune(strings.TrimRight(ansi.ReplaceAllString(line, ""), " "))))
		}
		if widest > 100 || widest == 0 {
			t.Errorf("%q: widest line %d columns, want at most 100", desc, widest)
		}
	}
}
