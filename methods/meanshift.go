package methods

import (
	"fmt"
	"math"
	"sort"

	"github.com/locusml/locus/layers"
)

// Flat is the flat (uniform) kernel of MeanShift, 1 inside the closed ball
// ‖q − k‖ <= h and 0 outside: log K is 0 or -Inf. It is the box kernel of
// THEORY.md §1 on distances, and the kernel of scikit-learn's MeanShift.
type Flat struct{}

// Name returns "flat".
func (Flat) Name() string { return "flat" }

// LogK returns 0 where ‖q − k‖ <= h and math.Inf(-1) elsewhere.
func (Flat) LogK(q, k []float64, h float64) float64 {
	var u float64 // ‖q − k‖² / h², per coordinate so that h·h cannot underflow
	for i, v := range q {
		d := (v - k[i]) / h
		u += d * d
	}
	if u <= 1 {
		return 0
	}
	return math.Inf(-1)
}

// MeanShiftOptions configures MeanShift.
type MeanShiftOptions struct {
	// Kernel is the localization kernel; nil means Flat{} (as scikit-learn).
	// layers.Gaussian{} gives Gaussian mean shift.
	Kernel layers.Kernel
	// Bandwidth h > 0; 0 means EstimateBandwidth(points, Quantile).
	Bandwidth float64
	// Quantile for the bandwidth estimate; 0 means 0.3.
	Quantile float64
	// MaxIter bounds the mean-shift steps per point; 0 means 300.
	MaxIter int
	// Tol stops a point once a step moves it by less than Tol; 0 means 1e-3·h.
	Tol float64
	// MergeTol: modes closer than this are one cluster; 0 means h.
	MergeTol float64
}

// MeanShiftResult is a MeanShift clustering.
type MeanShiftResult struct {
	// Centers are the distinct modes, densest first.
	Centers [][]float64
	// Labels[i] is the index in Centers of the mode nearest to point i.
	Labels []int
	// Bandwidth is the bandwidth used (estimated if the option was 0).
	Bandwidth float64
}

// MeanShift clusters points (n×d) by mean shift: starting from every point,
// it iterates the self-local mean x ← Σ K(x, x_i) x_i / Σ K(x, x_i) until a
// step is shorter than Tol (or MaxIter steps). A mode's intensity is the
// kernel mass Σ_i K(x, x_i) at the position x its last step started from
// (for the flat kernel, the number of points within h); modes are visited
// densest first (ties: lexicographically largest first) and a mode within
// MergeTol of a kept one is merged into it. Each
// point is labelled with its nearest kept mode. With the defaults (flat
// kernel, MergeTol = h) this is scikit-learn's MeanShift without bin seeding.
func MeanShift(points [][]float64, opts MeanShiftOptions) (*MeanShiftResult, error) {
	if _, err := checkPoints("points", points); err != nil {
		return nil, fmt.Errorf("meanshift: %w", err)
	}
	kern := opts.Kernel
	if kern == nil {
		kern = Flat{}
	}
	if err := checkKernel(kern); err != nil {
		return nil, fmt.Errorf("meanshift: %w", err)
	}
	h := opts.Bandwidth
	if h == 0 {
		var err error
		if h, err = EstimateBandwidth(points, opts.Quantile); err != nil {
			return nil, fmt.Errorf("meanshift: %w", err)
		}
		if h == 0 {
			q := opts.Quantile
			if q == 0 {
				q = 0.3
			}
			if n := len(points); int(float64(n)*q) < 2 {
				return nil, fmt.Errorf("meanshift: cannot estimate a bandwidth from %d points with quantile %g (each point's nearest neighbour would be itself; need at least %d points); set Bandwidth", n, q, int(math.Ceil(2/q)))
			}
			return nil, fmt.Errorf("meanshift: estimated bandwidth is 0 (too many duplicate points); set Bandwidth")
		}
	}
	if err := checkBandwidth(h); err != nil {
		return nil, fmt.Errorf("meanshift: %w", err)
	}
	maxIter, tol, mergeTol := opts.MaxIter, opts.Tol, opts.MergeTol
	if maxIter == 0 {
		maxIter = 300
	}
	if tol == 0 {
		tol = 1e-3 * h
	}
	if mergeTol == 0 {
		mergeTol = h
	}
	if maxIter < 0 || !(tol > 0) || !(mergeTol > 0) {
		return nil, fmt.Errorf("meanshift: invalid MaxIter %d, Tol %v or MergeTol %v", maxIter, tol, mergeTol)
	}

	d := len(points[0])
	w := make([]float64, len(points))
	type mode struct {
		x         []float64
		intensity float64 // log Σ_i K(x', x_i) at the last position x' a step started from
	}
	modes := make([]mode, 0, len(points))
	next := make([]float64, d)
	for _, p := range points {
		x := append([]float64(nil), p...)
		intensity := math.Inf(-1)
		for it := 0; it < maxIter; it++ {
			intensity = logNormalize(kern, h, x, points, w)
			if math.IsNaN(intensity) {
				return nil, fmt.Errorf("meanshift: point %d: %w", len(modes), ErrNaNScore)
			}
			if math.IsInf(intensity, -1) {
				break // no point in the kernel's support: x stays put
			}
			weightedMean(w, points, next)
			step := math.Sqrt(scaledSqDist(next, x, h)) // in bandwidths, as tol/h
			copy(x, next)
			if step < tol/h {
				break
			}
		}
		modes = append(modes, mode{x, intensity})
	}
	// Densest first; ties (common with the flat kernel) by coordinates,
	// largest first, as scikit-learn does.
	sort.SliceStable(modes, func(a, b int) bool {
		if modes[a].intensity != modes[b].intensity {
			return modes[a].intensity > modes[b].intensity
		}
		for j := range modes[a].x {
			if modes[a].x[j] != modes[b].x[j] {
				return modes[a].x[j] > modes[b].x[j]
			}
		}
		return false
	})
	res := &MeanShiftResult{Bandwidth: h, Labels: make([]int, len(points))}
	for _, m := range modes {
		merged := false
		for _, c := range res.Centers {
			if scaledSqDist(m.x, c, mergeTol) <= 1 {
				merged = true
				break
			}
		}
		if !merged {
			res.Centers = append(res.Centers, m.x)
		}
	}
	for i, p := range points {
		best := math.Inf(1)
		for c, center := range res.Centers {
			if dd := scaledSqDist(p, center, h); dd < best {
				best, res.Labels[i] = dd, c
			}
		}
	}
	return res, nil
}

// EstimateBandwidth returns a bandwidth for MeanShift: the mean over all
// points of the distance to their k-th nearest neighbour, k =
// max(1, floor(n·quantile)), counting the point itself as its first
// neighbour (as scikit-learn's estimate_bandwidth). quantile is in (0, 1];
// 0 means 0.3.
func EstimateBandwidth(points [][]float64, quantile float64) (float64, error) {
	if _, err := checkPoints("points", points); err != nil {
		return 0, fmt.Errorf("estimate bandwidth: %w", err)
	}
	if quantile == 0 {
		quantile = 0.3
	}
	if !(quantile > 0 && quantile <= 1) {
		return 0, fmt.Errorf("estimate bandwidth: quantile must be in (0, 1], got %v", quantile)
	}
	n := len(points)
	k := max(1, int(float64(n)*quantile))
	idx, dist := make([]int, n), make([]float64, n)
	var sum float64
	for _, p := range points {
		nn := nearest(points, p, k, -1, idx, dist)
		sum += math.Sqrt(dist[nn[k-1]])
	}
	return sum / float64(n), nil
}
