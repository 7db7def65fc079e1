package train

import (
	"context"
	"maps"
	"math"
	"slices"
	"testing"
)

// The bandwidth metrics keep the names `locus train` has written to metrics.jsonl (so
// that the reports of earlier runs still find them): a layer's one value, a head's value,
// and a per-query distribution's five statistics.
func TestBandwidthMetricNames(t *testing.T) {
	got := BandwidthMetrics(map[string][]float64{
		"blocks.0.attn.bandwidth": {2.5},
		"blocks.1.attn.bandwidth": {1, 3},
	})
	want := Metrics{"bandwidth.blocks.0.attn": 2.5, "bandwidth.blocks.1.attn.head0": 1, "bandwidth.blocks.1.attn.head1": 3}
	if !maps.Equal(got, want) {
		t.Errorf("BandwidthMetrics = %v, want %v", got, want)
	}
	dist := BandwidthDistributionMetrics(map[string][][]float64{"blocks.0.attn": {{4, 1, 3, 2, 5}, {7}}})
	wantDist := Metrics{
		"bandwidth.blocks.0.attn.head0.min": 1, "bandwidth.blocks.0.attn.head0.q1": 2, "bandwidth.blocks.0.attn.head0.median": 3,
		"bandwidth.blocks.0.attn.head0.q3": 4, "bandwidth.blocks.0.attn.head0.max": 5,
		"bandwidth.blocks.0.attn.head1.min": 7, "bandwidth.blocks.0.attn.head1.q1": 7, "bandwidth.blocks.0.attn.head1.median": 7,
		"bandwidth.blocks.0.attn.head1.q3": 7, "bandwidth.blocks.0.attn.head1.max": 7,
	}
	if !maps.Equal(dist, wantDist) {
		t.Errorf("BandwidthDistributionMetrics = %v, want %v", dist, wantDist)
	}
	if q := BandwidthQuantiles([]float64{0, 10}); !slices.Equal(q, []float64{0, 2.5, 5, 7.5, 10}) {
		t.Errorf("BandwidthQuantiles(0, 10) = %v, want [0 2.5 5 7.5 10]", q)
	}
	if q := BandwidthQuantiles(nil); !math.IsNaN(q[2]) {
		t.Errorf("BandwidthQuantiles(nil) = %v, want NaNs", q)
	}
	obs, err := ObserveBandwidths(func() map[string][]float64 { return map[string][]float64{"nw.bandwidth": {0.25}} })(context.Background())
	if err != nil || !maps.Equal(obs, Metrics{"bandwidth.nw": 0.25}) {
		t.Errorf("ObserveBandwidths: %v, %v; want bandwidth.nw = 0.25", obs, err)
	}
}
