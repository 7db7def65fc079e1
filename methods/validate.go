package methods

import (
	"errors"
	"fmt"
	"math"
	"slices"

	"github.com/locusml/locus/layers"
)

// ErrZeroWeights is returned (wrapped, with the query's index) when every
// kernel weight of a local mean is zero and the caller asked for an error
// instead of the zero fallback (see EmptyPolicy).
var ErrZeroWeights = errors.New("all kernel weights are zero")

// checkPoints checks that pts is a non-empty n×d matrix (d >= 1) of finite
// numbers and returns d.
func checkPoints(name string, pts [][]float64) (int, error) {
	if len(pts) == 0 {
		return 0, fmt.Errorf("%s: no points", name)
	}
	d := len(pts[0])
	if d == 0 {
		return 0, fmt.Errorf("%s: row 0 has no columns", name)
	}
	for i, p := range pts {
		if len(p) != d {
			return 0, fmt.Errorf("%s: row %d has %d columns, expected %d", name, i, len(p), d)
		}
		for j, v := range p {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return 0, fmt.Errorf("%s: row %d column %d is %v", name, i, j, v)
			}
		}
	}
	return d, nil
}

// checkPair checks x (n×d) and y (n×m) and returns d and m.
func checkPair(x, y [][]float64) (d, m int, err error) {
	if d, err = checkPoints("x", x); err != nil {
		return 0, 0, err
	}
	if m, err = checkPoints("y", y); err != nil {
		return 0, 0, err
	}
	if len(x) != len(y) {
		return 0, 0, fmt.Errorf("x has %d rows but y has %d", len(x), len(y))
	}
	return d, m, nil
}

// checkQueries checks that queries is a (possibly empty) matrix with d columns.
func checkQueries(queries [][]float64, d int) error {
	if len(queries) == 0 {
		return nil
	}
	qd, err := checkPoints("queries", queries)
	if err != nil {
		return err
	}
	if qd != d {
		return fmt.Errorf("queries have %d columns, points have %d", qd, d)
	}
	return nil
}

// ErrPositionKernel is returned (wrapped, naming the kernel) for a kernel with position
// factors (causal, window, distance, relbias, …; layers.HasPositions): they weigh where
// a query and a key stand in a sequence, and the points of these methods have no
// positions, so such a kernel would weigh every point alike.
var ErrPositionKernel = errors.New("the kernel has position factors, which points have none of")

// checkKernel refuses a kernel with position factors.
func checkKernel(k layers.Kernel) error {
	if ck, ok := k.(layers.ContentKernel); ok && layers.HasPositions(ck) {
		return fmt.Errorf("kernel %q: %w (use a content kernel, e.g. gaussian)", k.Name(), ErrPositionKernel)
	}
	return nil
}

func checkBandwidth(h float64) error {
	if !(h > 0) || math.IsInf(h, 1) {
		return fmt.Errorf("bandwidth must be a positive finite number, got %v", h)
	}
	return nil
}

// denseLabels checks that labels has n entries >= 0 (or -1 where allowUnlabelled) and
// maps them to dense class indices: classes lists the distinct labels in increasing
// order and dense[i] is the index of labels[i] in classes (-1 for unlabelled), so that
// memory grows with the number of classes, not with the largest label.
func denseLabels(labels []int, n int, allowUnlabelled bool) (dense, classes []int, err error) {
	if len(labels) != n {
		return nil, nil, fmt.Errorf("%d labels for %d points", len(labels), n)
	}
	for i, l := range labels {
		if l < 0 && !(allowUnlabelled && l == -1) {
			return nil, nil, fmt.Errorf("label %d is %d", i, l)
		}
		if l >= 0 {
			classes = append(classes, l)
		}
	}
	if len(classes) == 0 {
		return nil, nil, errors.New("no labelled points")
	}
	slices.Sort(classes)
	classes = slices.Compact(classes)
	dense = make([]int, n)
	for i, l := range labels {
		dense[i] = -1
		if l >= 0 {
			dense[i], _ = slices.BinarySearch(classes, l)
		}
	}
	return dense, classes, nil
}

// scaledSqDist is ‖(a − b)/s‖², divided before squaring so that points and bandwidths
// near the smallest floats compare right (as the kernels compute their scores).
func scaledSqDist(a, b []float64, s float64) float64 {
	var sum float64
	for i, v := range a {
		d := (v - b[i]) / s
		sum += d * d
	}
	return sum
}

func sqDist(a, b []float64) float64 {
	var s float64
	for i, v := range a {
		d := v - b[i]
		s += d * d
	}
	return s
}
