package methods

import (
	"math"
	"testing"
)

// twoMoons returns n points on each of two interleaving half circles (as
// scikit-learn's make_moons) with Gaussian noise, and their moon index.
func twoMoons(n int, noise float64, seed uint64) ([][]float64, []int) {
	rng := newRNG(seed)
	var pts [][]float64
	var truth []int
	for i := 0; i < n; i++ {
		a := math.Pi * float64(i) / float64(n-1)
		pts = append(pts, []float64{math.Cos(a) + noise*rng.NormFloat64(), math.Sin(a) + noise*rng.NormFloat64()})
		truth = append(truth, 0)
	}
	for i := 0; i < n; i++ {
		a := math.Pi * float64(i) / float64(n-1)
		pts = append(pts, []float64{1 - math.Cos(a) + noise*rng.NormFloat64(), 0.5 - math.Sin(a) + noise*rng.NormFloat64()})
		truth = append(truth, 1)
	}
	return pts, truth
}

func TestLabelPropagationTwoMoons(t *testing.T) {
	pts, truth := twoMoons(100, 0.05, 9)
	labels := make([]int, len(pts))
	for i := range labels {
		labels[i] = -1
	}
	// One labelled point per moon, at the far end of each.
	labels[0], labels[199] = 0, 1
	res, err := LabelPropagation(pts, labels, LabelPropagationOptions{Bandwidth: 0.1, MaxIter: 10000})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("converged %v after %d sweeps", res.Converged, res.Iterations)
	wrong := 0
	for i := range truth {
		if res.Labels[i] != truth[i] {
			wrong++
		}
	}
	if wrong > 0 {
		t.Errorf("%d of %d points mislabelled (converged %v after %d sweeps)", wrong, len(pts), res.Converged, res.Iterations)
	}
	if res.Labels[0] != 0 || res.Probs[0][0] != 1 {
		t.Errorf("labelled point not clamped: %v", res.Probs[0])
	}
}

func TestLabelPropagationErrors(t *testing.T) {
	pts := [][]float64{{0}, {1}}
	if _, err := LabelPropagation(pts, []int{-1, -1}, LabelPropagationOptions{Bandwidth: 1}); err == nil {
		t.Error("no labels: no error")
	}
	if _, err := LabelPropagation(pts, []int{0, -2}, LabelPropagationOptions{Bandwidth: 1}); err == nil {
		t.Error("label -2: no error")
	}
}
