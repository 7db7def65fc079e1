package main

import (
	"math"
	"testing"

	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/methods"
)

// Gradient descent on the leave-one-out error moves the bandwidth from the
// rule of thumb to one with a lower test error, logged at every evaluation under the
// CLI's metric name; the learned model's test RMSE is that of package methods'
// Nadaraya–Watson (an independent implementation) at the learned bandwidth.
func TestLearnedBandwidth(t *testing.T) {
	r, err := fit(200, 200)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("h %.4f -> %.4f, test RMSE %.4f -> %.4f", r.h0, r.h, r.rmse0, r.rmse)
	if !(r.rmse <= r.rmse0) || r.rmse > 0.1 {
		t.Errorf("learned h = %.4f: test RMSE %.4f; want no worse than the fixed h = %.4f's %.4f, and below 0.1", r.h, r.rmse, r.h0, r.rmse0)
	}
	if len(r.history) != 4 {
		t.Fatalf("%d records, want 4 (every 50 steps)", len(r.history))
	}
	for _, rec := range r.history {
		if h, ok := rec.Metrics["bandwidth.nw"]; !ok || !(h > 0) {
			t.Errorf("step %d: bandwidth.nw = %v (recorded %v), want a positive bandwidth", rec.Step, h, ok)
		}
	}
	if last := r.history[3].Metrics["bandwidth.nw"]; last != r.h {
		t.Errorf("last recorded bandwidth %g, want the learned %g", last, r.h)
	}

	xs, ys, queries := samples(200)
	col := func(v []float64) [][]float64 {
		out := make([][]float64, len(v))
		for i, x := range v {
			out[i] = []float64{x}
		}
		return out
	}
	pred, err := methods.NadarayaWatson(col(xs), col(ys), col(queries), methods.LocalMeanOptions{Kernel: layers.Gaussian{}, Bandwidth: r.h})
	if err != nil {
		t.Fatal(err)
	}
	var s float64
	for i, p := range pred {
		s += (p[0] - f(queries[i])) * (p[0] - f(queries[i]))
	}
	if want := math.Sqrt(s / float64(len(queries))); math.Abs(r.rmse-want) > 1e-9 {
		t.Errorf("test RMSE %.12f, methods.NadarayaWatson at h = %.4f gives %.12f", r.rmse, r.h, want)
	}
}
