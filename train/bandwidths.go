package train

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strings"
)

// BandwidthMetrics returns a model's bandwidths as metrics for Loop.Observe, under the
// names `locus train` writes to MetricsFile and PlotBandwidths draws. bandwidths is what
// the Bandwidths methods of package layers and of the models return: by key
// "<layer>.bandwidth", one value for the layer or one per head. A layer's single value
// is named BandwidthPrefix + "<layer>", head j's BandwidthPrefix + "<layer>.head<j>".
func BandwidthMetrics(bandwidths map[string][]float64) Metrics {
	out := Metrics{}
	for k, hs := range bandwidths {
		layer := strings.TrimSuffix(k, ".bandwidth")
		for j, h := range hs {
			out[bandwidthName(layer, j, len(hs))] = h
		}
	}
	return out
}

// BandwidthDistributionMetrics returns per-query bandwidths as metrics: perQuery holds,
// by layer (as in BandwidthMetrics, with or without the ".bandwidth" suffix), one slice
// per head of its bandwidths over the queries of a batch. Each head's distribution is
// summarised by BandwidthQuantiles, named BandwidthPrefix + "<layer>.head<j>." + the
// statistic (BandwidthStats); a layer of one head has no ".head<j>".
func BandwidthDistributionMetrics(perQuery map[string][][]float64) Metrics {
	out := Metrics{}
	for k, heads := range perQuery {
		layer := strings.TrimSuffix(k, ".bandwidth")
		for j, vals := range heads {
			for i, q := range BandwidthQuantiles(vals) {
				out[bandwidthName(layer, j, len(heads))+"."+BandwidthStats[i]] = q
			}
		}
	}
	return out
}

// BandwidthQuantiles returns the statistics that BandwidthStats names of vals: the
// minimum, the quartiles (linear interpolation) and the maximum; NaN for no values.
func BandwidthQuantiles(vals []float64) []float64 {
	s := append([]float64(nil), vals...)
	sort.Float64s(s)
	q := func(p float64) float64 {
		if len(s) == 0 {
			return math.NaN()
		}
		x := p * float64(len(s)-1)
		i := int(x)
		if i+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[i] + (x-float64(i))*(s[i+1]-s[i])
	}
	return []float64{q(0), q(0.25), q(0.5), q(0.75), q(1)}
}

// ObserveBandwidths returns a Loop.Observe function that records, at every
// evaluation, the bandwidths that f reports (BandwidthMetrics): for instance
// ObserveBandwidths(model.Bandwidths) for a Transformer, or the Bandwidths method of a
// layers.KernelAttention or layers.Bandwidth.
func ObserveBandwidths(f func() map[string][]float64) func(context.Context) (Metrics, error) {
	return func(context.Context) (Metrics, error) { return BandwidthMetrics(f()), nil }
}

// bandwidthName is the metric of head j of layer (of heads heads; one value per layer
// has no head suffix).
func bandwidthName(layer string, j, heads int) string {
	if heads == 1 {
		return BandwidthPrefix + layer
	}
	return fmt.Sprintf("%s%s.head%d", BandwidthPrefix, layer, j)
}
