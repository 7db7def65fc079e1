package methods

import (
	"math"
	"testing"

	"github.com/locusml/locus/layers"
)

func TestMeanShiftBlobs(t *testing.T) {
	centres := [][]float64{{0, 0}, {6, 6}, {-6, 5}, {1, -7}}
	pts, truth := blobs(newRNG(5), centres, 40, 0.6)
	for _, kern := range []layers.Kernel{nil, layers.Gaussian{}} {
		name := "flat"
		opts := MeanShiftOptions{Kernel: kern, Quantile: 0.2} // 0.2·160 = 32 < 40 neighbours: within a blob
		if kern != nil {
			name = kern.Name()
			opts.Bandwidth = 1
		}
		res, err := MeanShift(pts, opts)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(res.Centers) != len(centres) {
			t.Fatalf("%s: %d clusters (bandwidth %v), want %d", name, len(res.Centers), res.Bandwidth, len(centres))
		}
		if !samePartition(res.Labels, truth) {
			t.Errorf("%s: labels do not match the blobs", name)
		}
		for _, c := range res.Centers {
			near := math.Inf(1)
			for _, ctr := range centres {
				near = math.Min(near, math.Sqrt(sqDist(c, ctr)))
			}
			if near > 0.4 {
				t.Errorf("%s: centre %v is %.2f from every true centre", name, c, near)
			}
		}
	}
}

func TestEstimateBandwidthHand(t *testing.T) {
	// k = int(3·0.67) = 2: the 2nd nearest counting the point itself.
	got, err := EstimateBandwidth([][]float64{{0}, {1}, {3}}, 0.67)
	if err != nil {
		t.Fatal(err)
	}
	if want := (1 + 1 + 2) / 3.0; math.Abs(got-want) > 1e-15 {
		t.Errorf("EstimateBandwidth = %v, want %v", got, want)
	}
	if _, err := EstimateBandwidth([][]float64{{0}}, 1.5); err == nil {
		t.Error("quantile > 1: no error")
	}
}

func TestMeanShiftErrors(t *testing.T) {
	if _, err := MeanShift(nil, MeanShiftOptions{}); err == nil {
		t.Error("no points: no error")
	}
	if _, err := MeanShift([][]float64{{1}, {2}}, MeanShiftOptions{Bandwidth: -1}); err == nil {
		t.Error("negative bandwidth: no error")
	}
	if _, err := MeanShift([][]float64{{1}, {1}}, MeanShiftOptions{}); err == nil {
		t.Error("zero estimated bandwidth: no error")
	}
}

func TestFlatKernel(t *testing.T) {
	if got := (Flat{}).LogK([]float64{0, 0}, []float64{3, 4}, 5); got != 0 {
		t.Errorf("on the boundary: %v, want 0", got)
	}
	if got := (Flat{}).LogK([]float64{0, 0}, []float64{3, 4.01}, 5); !math.IsInf(got, -1) {
		t.Errorf("outside: %v, want -Inf", got)
	}
}
