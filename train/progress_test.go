package train

import (
	"bytes"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// TestProgressBarFitsEveryWidth lays out the bar of a long resumed run, with six-digit
// counts, every field set and hours of elapsed time, for terminals of 40 to 160
// columns: each line fits one column short of the terminal and shows the count and the
// times; the bar is hidden below barColumns columns and drawn from 80 on.
func TestProgressBarFitsEveryWidth(t *testing.T) {
	var out bytes.Buffer
	l := &Loop{Out: &out, Steps: 200000, step: 12000, Best: "val_loss", ItemsName: "tokens"}
	p := newBarPrinter(l)
	pr := Progress{Step: 150000, Steps: 200000, Loss: 0.123456, LR: 3e-4, ItemsPerSec: 1.23e6,
		Eval: Metrics{MetricLoss: 0.234567}, Elapsed: 3*time.Hour + 7*time.Minute}
	for cols := 40; cols <= 160; cols++ {
		p.fit(pr, cols-1)
		p.bar.Set(pr.Step - p.start)
		line := strings.TrimSuffix(strings.TrimPrefix(p.bar.String(), "\r"), "\x1b[0K") // ANSI: erase the rest
		if n := utf8.RuneCountInString(line); n > cols-1 {
			t.Errorf("%d columns: a %d-column line %q", cols, n, line)
		}
		if drawn := strings.Contains(line, "|"); drawn && cols < barColumns || !drawn && cols >= 80 {
			t.Errorf("%d columns: bar drawn %v in %q", cols, drawn, line)
		}
		if !strings.Contains(line, "(138000/188000) [") {
			t.Errorf("%d columns: %q lacks the count and the times", cols, line)
		}
	}
}
