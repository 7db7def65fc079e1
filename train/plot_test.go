package train

import (
	"image/png"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// TestNiceTicks: enough labelled ticks to read a value, at round numbers, inside the range.
func TestNiceTicks(t *testing.T) {
	for _, r := range [][2]float64{{0, 1000}, {10, 1000}, {0.031, 0.19}, {2.3, 4.6}, {0, 1}, {1.2e-4, 3.1e-4}} {
		var labels []float64
		for _, tk := range (NiceTicks{}).Ticks(r[0], r[1]) {
			if tk.Value < r[0]-1e-12 || tk.Value > r[1]+1e-12 {
				t.Errorf("%v: tick %g outside the range", r, tk.Value)
			}
			if tk.Label != "" {
				labels = append(labels, tk.Value)
			}
		}
		if len(labels) < 5 || len(labels) > 11 {
			t.Errorf("%v: %d labelled ticks %v, want 5..11", r, len(labels), labels)
		}
	}
	for _, tc := range []struct {
		v, step float64
		want    string
	}{{0.25, 0.05, "0.25"}, {7.5, 2.5, "7.5"}, {10, 2.5, "10.0"}, {20, 5, "20"}, {0.3, 0.1, "0.3"}, {250, 25, "250"}} {
		if got := formatTick(tc.v, tc.step); got != tc.want {
			t.Errorf("formatTick(%g, %g) = %q, want %q", tc.v, tc.step, got, tc.want)
		}
	}
}

// TestLogTicks: a log axis over 1 to 4 decades has at least 3 labels, at 1, 2, 5 × 10^k
// over up to 2.5 decades.
func TestLogTicks(t *testing.T) {
	for _, r := range [][2]float64{{0.0005, 2.2}, {0.01, 0.9}, {0.2, 1.9}} {
		var labels []string
		for _, tk := range (LogTicks{}).Ticks(r[0], r[1]) {
			if tk.Label != "" {
				labels = append(labels, tk.Label)
			}
		}
		if len(labels) < 3 {
			t.Errorf("%v: labels %v, want at least 3", r, labels)
		}
	}
}

// TestPlotLossLongRunAndBandwidths draws a long run (smoothed) with a validation metric
// other than the loss, and bandwidths with per-query quartiles.
func TestPlotLossLongRunAndBandwidths(t *testing.T) {
	var h []Record
	for s := 10; s <= 2000; s += 10 {
		m := Metrics{MetricLoss: 2*math.Exp(-float64(s)/300) + 0.01*math.Sin(float64(s))}
		if s%200 == 0 {
			m[ValPrefix+"mse_clean"] = math.Exp(-float64(s) / 300)
			m[BandwidthPrefix+"blocks.0.attn.head0"] = 4 - float64(s)/1000
			for i, st := range BandwidthStats {
				m[BandwidthPrefix+"blocks.1.attn.head1."+st] = 2 + float64(i)/4
			}
		}
		h = append(h, Record{Step: s, Metrics: m})
	}
	dir := t.TempDir()
	if err := PlotLoss(filepath.Join(dir, PlotFile), "run: loss", "MSE", h, ValPrefix+"mse_clean"); err != nil {
		t.Fatal(err)
	}
	if err := PlotBandwidths(filepath.Join(dir, BandwidthPlotFile), "run: bandwidths", h); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{PlotFile, BandwidthPlotFile} {
		r, err := os.Open(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(r); err != nil {
			t.Errorf("%s: %v", f, err)
		}
		r.Close()
	}
	if err := PlotBandwidths(filepath.Join(dir, "none.png"), "x", h[:1]); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dir, "none.png")); !os.IsNotExist(err) {
		t.Error("a history without bandwidths drew a plot")
	}
}
