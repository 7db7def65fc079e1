package datasets

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
)

// Points is a set of N points in D dimensions, row-major: coordinate j of
// point i is X[i*D+j], so X can back a gonum mat.NewDense(N, D, X). Labels
// holds one class per point, or is nil for unlabelled data.
type Points struct {
	X      []float64
	Labels []int
	N, D   int
}

// Row returns point i; the slice aliases p.X.
func (p *Points) Row(i int) []float64 { return p.X[i*p.D : (i+1)*p.D] }

func newPoints(n, d int) *Points {
	return &Points{X: make([]float64, n*d), Labels: make([]int, n), N: n, D: d}
}

func pointsRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, streamPts)) }

func checkPoints(what string, n int, noiseName string, noise float64) error {
	if n < 1 {
		return fmt.Errorf("%s: n=%d must be positive", what, n)
	}
	if noise < 0 || math.IsNaN(noise) || math.IsInf(noise, 0) {
		return fmt.Errorf("%s: %s=%v must be finite and non-negative", what, noiseName, noise)
	}
	return nil
}

// Blobs returns n points in d dimensions around k centres drawn uniformly
// from [-10, 10]^d, with isotropic Gaussian spread of standard deviation std.
// Point i belongs to centre i mod k (its label), so the classes are as even
// as n allows. The centres are returned row-major, k×d.
func Blobs(n, d, k int, std float64, seed uint64) (pts *Points, centers []float64, err error) {
	if err := checkPoints("blobs", n, "std", std); err != nil {
		return nil, nil, err
	}
	if d < 1 || k < 1 {
		return nil, nil, fmt.Errorf("blobs: dimension d=%d and centres k=%d must be positive", d, k)
	}
	rng := pointsRand(seed)
	centers = make([]float64, k*d)
	for i := range centers {
		centers[i] = 20*rng.Float64() - 10
	}
	pts = newPoints(n, d)
	for i := range n {
		c := i % k
		pts.Labels[i] = c
		for j := range d {
			pts.X[i*d+j] = centers[c*d+j] + std*rng.NormFloat64()
		}
	}
	return pts, centers, nil
}

// Moons returns two interleaving half circles in 2-D, as in scikit-learn's
// make_moons: the upper moon (label 0) is (cos t, sin t) and the lower one
// (label 1) is (1 - cos t, 0.5 - sin t), t evenly spaced over [0, π], with
// Gaussian noise of standard deviation noise added to each coordinate. The
// first ceil(n/2) points are the upper moon.
func Moons(n int, noise float64, seed uint64) (*Points, error) {
	if err := checkPoints("moons", n, "noise", noise); err != nil {
		return nil, err
	}
	rng := pointsRand(seed)
	pts := newPoints(n, 2)
	nOut := n - n/2
	for i := range n {
		var x, y float64
		if i < nOut {
			t := math.Pi * spaced(i, nOut)
			x, y = math.Cos(t), math.Sin(t)
		} else {
			t := math.Pi * spaced(i-nOut, n-nOut)
			x, y = 1-math.Cos(t), 0.5-math.Sin(t)
			pts.Labels[i] = 1
		}
		pts.X[2*i] = x + noise*rng.NormFloat64()
		pts.X[2*i+1] = y + noise*rng.NormFloat64()
	}
	return pts, nil
}

// spaced returns the i-th of m evenly spaced values in [0, 1], ends included.
func spaced(i, m int) float64 {
	if m == 1 {
		return 0
	}
	return float64(i) / float64(m-1)
}

// Circles returns two concentric circles in 2-D, as in scikit-learn's
// make_circles: the outer one of radius 1 (label 0, the first ceil(n/2)
// points) and the inner one of radius factor (label 1), angles evenly spaced,
// with Gaussian noise of standard deviation noise added to each coordinate.
// factor must be in (0, 1).
func Circles(n int, noise, factor float64, seed uint64) (*Points, error) {
	if err := checkPoints("circles", n, "noise", noise); err != nil {
		return nil, err
	}
	if !(factor > 0 && factor < 1) {
		return nil, fmt.Errorf("circles: factor=%v must be in (0, 1)", factor)
	}
	rng := pointsRand(seed)
	pts := newPoints(n, 2)
	nOut := n - n/2
	for i := range n {
		r, j, m := 1.0, i, nOut
		if i >= nOut {
			r, j, m = factor, i-nOut, n-nOut
			pts.Labels[i] = 1
		}
		a := 2 * math.Pi * float64(j) / float64(m)
		pts.X[2*i] = r*math.Cos(a) + noise*rng.NormFloat64()
		pts.X[2*i+1] = r*math.Sin(a) + noise*rng.NormFloat64()
	}
	return pts, nil
}

// SwissRoll returns n points on the 3-D swiss roll of scikit-learn's
// make_swiss_roll: t uniform in [1.5π, 4.5π], height h uniform in [0, 21],
// point (t cos t, h, t sin t) plus Gaussian noise of standard deviation
// noise. The roll parameter t of each point is returned too (the coordinate
// along the unrolled sheet); Labels is nil.
func SwissRoll(n int, noise float64, seed uint64) (pts *Points, t []float64, err error) {
	if err := checkPoints("swiss roll", n, "noise", noise); err != nil {
		return nil, nil, err
	}
	rng := pointsRand(seed)
	pts = &Points{X: make([]float64, 3*n), N: n, D: 3}
	t = make([]float64, n)
	for i := range n {
		t[i] = 1.5 * math.Pi * (1 + 2*rng.Float64())
		h := 21 * rng.Float64()
		pts.X[3*i] = t[i]*math.Cos(t[i]) + noise*rng.NormFloat64()
		pts.X[3*i+1] = h + noise*rng.NormFloat64()
		pts.X[3*i+2] = t[i]*math.Sin(t[i]) + noise*rng.NormFloat64()
	}
	return pts, t, nil
}

// regressionFuncs are the named curves of Regression, each with its domain.
var regressionFuncs = map[string]struct {
	f      func(float64) float64
	lo, hi float64
}{
	"sin":    {math.Sin, -math.Pi, math.Pi},
	"linear": {func(x float64) float64 { return 0.5*x + 1 }, -3, 3},
	"cubic":  {func(x float64) float64 { return x*x*x - x }, -1.5, 1.5},
	"step":   {func(x float64) float64 { return float64(sign(x)) }, -3, 3},
	"sinc": {func(x float64) float64 {
		if x == 0 {
			return 1
		}
		return math.Sin(math.Pi*x) / (math.Pi * x)
	}, -4, 4},
}

func sign(x float64) int {
	if x < 0 {
		return -1
	}
	return 1
}

// RegressionFuncs returns the names of the curves of Regression, sorted.
func RegressionFuncs() []string {
	names := make([]string, 0, len(regressionFuncs))
	for name := range regressionFuncs {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// RegressionCurve returns the noise-free curve f called name and its domain
// [lo, hi]: "sin" (sin x on [-π, π]), "linear" (x/2+1 on [-3, 3]), "cubic"
// (x³-x on [-1.5, 1.5]), "step" (sign x, 1 at 0, on [-3, 3]) and "sinc"
// (sin(πx)/(πx) on [-4, 4]).
func RegressionCurve(name string) (f func(float64) float64, lo, hi float64, err error) {
	c, ok := regressionFuncs[name]
	if !ok {
		return nil, 0, 0, fmt.Errorf("unknown regression function %q (valid: %s)", name, strings.Join(RegressionFuncs(), ", "))
	}
	return c.f, c.lo, c.hi, nil
}

// Regression returns n samples of y = f(x) + noise for the curve called name
// (see RegressionCurve): x uniform over the curve's domain, sorted ascending,
// and Gaussian noise of standard deviation noise.
func Regression(name string, n int, noise float64, seed uint64) (x, y []float64, err error) {
	f, lo, hi, err := RegressionCurve(name)
	if err != nil {
		return nil, nil, err
	}
	if err := checkPoints("regression", n, "noise", noise); err != nil {
		return nil, nil, err
	}
	rng := pointsRand(seed)
	x = make([]float64, n)
	for i := range x {
		x[i] = lo + (hi-lo)*rng.Float64()
	}
	slices.Sort(x)
	y = make([]float64, n)
	for i := range y {
		y[i] = f(x[i]) + noise*rng.NormFloat64()
	}
	return x, y, nil
}
