package train

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
)

// TestReadMetrics: the whole log, one record per step in step order: a log that goes
// back in steps keeps the later records from that step on, records of one step merge,
// a last line cut short is skipped; a log that is a symlink is refused.
func TestReadMetrics(t *testing.T) {
	dir := t.TempDir()
	log := `{"step":10,"loss":3}
{"step":20,"loss":2}
{"step":30,"loss":1.5}
{"step":20,"loss":2.1}
{"step":30,"loss":1.4}
{"step":30,"val_loss":1.6}
{"step":40,"lo`
	if err := os.WriteFile(filepath.Join(dir, MetricsFile), []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	h, err := ReadMetrics(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range h {
		b, _ := r.MarshalJSON()
		got = append(got, string(b))
	}
	want := `{"step":10,"loss":3} {"step":20,"loss":2.1} {"step":30,"loss":1.4,"val_loss":1.6}`
	if strings.Join(got, " ") != want {
		t.Errorf("ReadMetrics = %s\nwant %s", strings.Join(got, " "), want)
	}
	// Resume reads the log as written, up to its checkpoint's step.
	if raw, err := readHistory(dir, 20); err != nil || len(raw) != 3 {
		t.Errorf("readHistory(20) = %d records, %v; want 3 (10, 20, 20)", len(raw), err)
	}

	secret := filepath.Join(t.TempDir(), "secret.jsonl")
	if err := os.WriteFile(secret, []byte(`{"step":1,"loss":42}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	linked := t.TempDir()
	if err := os.Symlink(secret, filepath.Join(linked, MetricsFile)); err != nil {
		t.Fatal(err)
	}
	if h, err := ReadMetrics(linked); err == nil || !strings.Contains(err.Error(), "symbolic link") || len(h) > 0 {
		t.Errorf("ReadMetrics of a symlinked log = %v, %v; want a symbolic-link error", h, err)
	}
}

// TestChartsRecordWhatTheyDraw: the loss and bandwidth charts name their axes and
// legend entries and draw one point per record; the bandwidth's unit is the caller's.
func TestChartsRecordWhatTheyDraw(t *testing.T) {
	var h []Record
	for s := 1; s <= 90; s++ {
		m := Metrics{MetricLoss: 3 - float64(s)/100}
		if s%9 == 0 {
			m[metricValLoss] = 3.1 - float64(s)/100
			m[BandwidthPrefix+"blocks.0.attn.head0"] = 2 + float64(s)/100
			m[BandwidthPrefix+"blocks.0.attn.head1"] = 2 - float64(s)/100
		}
		h = append(h, Record{Step: s, Metrics: m})
	}
	c, err := LossChart("run: loss", "cross-entropy (nats/token)", h, metricValLoss)
	if err != nil {
		t.Fatal(err)
	}
	if c.Plot.Title.Text != "run: loss" || c.Plot.X.Label.Text != "step (optimizer updates)" || c.Plot.Y.Label.Text != "cross-entropy (nats/token)" {
		t.Errorf("loss chart: title %q, x %q, y %q", c.Plot.Title.Text, c.Plot.X.Label.Text, c.Plot.Y.Label.Text)
	}
	if got := strings.Join(c.Entries, "|"); got != "training (loss), smoothed|validation (loss)" {
		t.Errorf("loss legend %q", got)
	}
	if n, v := len(c.Series["training (loss), smoothed"]), len(c.Series["validation (loss)"]); n != 90 || v != 10 {
		t.Errorf("loss chart draws %d training and %d validation points, want 90 and 10", n, v)
	}
	b, err := BandwidthChart("run: bandwidths", "bandwidth h (units of the distance ‖q − k‖)", h)
	if err != nil {
		t.Fatal(err)
	}
	if b.Plot.Y.Label.Text != "bandwidth h (units of the distance ‖q − k‖)" || strings.Join(b.Entries, "|") != "blocks.0.attn.head0|blocks.0.attn.head1" {
		t.Errorf("bandwidth chart: y %q, legend %q", b.Plot.Y.Label.Text, b.Entries)
	}
	if n := len(b.Series["blocks.0.attn.head1"]); n != 10 {
		t.Errorf("bandwidth chart draws %d points of head 1, want 10", n)
	}
	if _, err := c.PNG(ChartWidth, ChartHeight); err != nil {
		t.Fatal(err)
	}
	if c.Plot.Title.Text != "run: loss" || len(c.Entries) != 2 {
		t.Errorf("drawing changed the chart: title %q, %d entries", c.Plot.Title.Text, len(c.Entries))
	}
	// A Loop without a BandwidthLabel claims no unit.
	dir := t.TempDir()
	if err := PlotBandwidths(filepath.Join(dir, BandwidthPlotFile), "x", h); err != nil {
		t.Fatal(err)
	}
}

// TestWrapText: every line fits the width, no word is lost, newlines break lines.
func TestWrapText(t *testing.T) {
	st := plot.New().Title.TextStyle
	title := "ldae, step 20: mnist, ldae in=784 width=256 levels=2 prototypes=128 heads=4 kernel=gaussian h0=2 h_min=0.05 noise=gaussian(0.3)\ninput: test image 0"
	width := 8 * vg.Centimeter
	lines := WrapText(title, st, width)
	if len(lines) < 4 {
		t.Errorf("%d lines, want the title wrapped: %q", len(lines), lines)
	}
	for _, l := range lines {
		if w := st.Width(l); w > width {
			t.Errorf("line %q is %.1f wide, more than %.1f", l, w, width)
		}
	}
	if got, want := strings.Join(strings.Fields(strings.Join(lines, " ")), " "), strings.Join(strings.Fields(title), " "); got != want {
		t.Errorf("wrapped text %q, want %q", got, want)
	}
	if lines[len(lines)-1] != "input: test image 0" {
		t.Errorf("last line %q, want the title's second line", lines[len(lines)-1])
	}
}
