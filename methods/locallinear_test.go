package methods

import (
	"math"
	"testing"

	"github.com/locusml/locus/layers"
)

func TestLocalLinearReproducesLinear(t *testing.T) {
	rng := newRNG(2)
	x, _ := blobs(rng, [][]float64{{0, 0, 0}}, 40, 1)
	f := func(p []float64) []float64 {
		return []float64{2*p[0] - p[1] + 0.5*p[2] + 3, -p[0] + 4*p[2] - 1}
	}
	y := make([][]float64, len(x))
	for i, p := range x {
		y[i] = f(p)
	}
	queries, _ := blobs(rng, [][]float64{{0.2, -0.1, 0.3}}, 10, 1)
	for _, kern := range []layers.Kernel{layers.Gaussian{}, layers.Epanechnikov{}, layers.Cauchy{}} {
		got, err := LocalLinear(x, y, queries, LocalLinearOptions{Kernel: kern, Bandwidth: 3})
		if err != nil {
			t.Fatalf("%s: %v", kern.Name(), err)
		}
		for qi, q := range queries {
			assertClose(t, kern.Name(), got[qi], f(q), 1e-9)
		}
	}
}

// TestLocalLinearFitHand solves the 1-D ridge problem by Cramer's rule on
// directly computed weights.
func TestLocalLinearFitHand(t *testing.T) {
	x := [][]float64{{0}, {0.5}, {1.2}, {2}, {3.1}}
	y := [][]float64{{1}, {0.2}, {2.5}, {1.9}, {4}}
	q, h, lambda := 1.0, 0.8, 0.05
	for _, ridge := range []float64{0, lambda} {
		theta, err := LocalLinearFit(x, y, []float64{q}, LocalLinearOptions{Bandwidth: h, Ridge: ridge})
		if err != nil {
			t.Fatal(err)
		}
		var sw, sx, sxx, sy, sxy float64
		ws := make([]float64, len(x))
		for i := range x {
			ws[i] = math.Exp(-(x[i][0] - q) * (x[i][0] - q) / (2 * h * h))
			sw += ws[i]
		}
		for i := range x {
			w := ws[i] / sw
			sx += w * x[i][0]
			sxx += w * x[i][0] * x[i][0]
			sy += w * y[i][0]
			sxy += w * x[i][0] * y[i][0]
		}
		// [[sxx+λ, sx], [sx, 1+λ]] [slope, icept] = [sxy, sy]
		a, b, c, d := sxx+ridge, sx, sx, 1+ridge
		det := a*d - b*c
		slope := (sxy*d - b*sy) / det
		icept := (a*sy - c*sxy) / det
		assertClose(t, "theta", []float64{theta.At(0, 0), theta.At(1, 0)}, []float64{slope, icept}, 1e-12)
		pred, err := LocalLinear(x, y, [][]float64{{q}}, LocalLinearOptions{Bandwidth: h, Ridge: ridge})
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "prediction", pred[0], []float64{slope*q + icept}, 1e-12)
	}
}

func TestLocalLinearSingular(t *testing.T) {
	x := [][]float64{{0}, {5}}
	y := [][]float64{{1}, {2}}
	// Only one point in the Epanechnikov support: singular without ridge.
	if _, err := LocalLinear(x, y, [][]float64{{0.1}}, LocalLinearOptions{Kernel: layers.Epanechnikov{}, Bandwidth: 1}); err == nil {
		t.Error("singular system: no error")
	}
	if _, err := LocalLinear(x, y, [][]float64{{0.1}}, LocalLinearOptions{Kernel: layers.Epanechnikov{}, Bandwidth: 1, Ridge: 1e-3}); err != nil {
		t.Errorf("with ridge: %v", err)
	}
	if _, err := LocalLinear(x, y, [][]float64{{0.1}}, LocalLinearOptions{Bandwidth: 1, Ridge: -1}); err == nil {
		t.Error("negative ridge: no error")
	}
}

func squaredLossConstant(x, y, theta []float64) (float64, []float64) {
	var l float64
	g := make([]float64, len(theta))
	for j := range theta {
		r := theta[j] - y[j]
		l += 0.5 * r * r
		g[j] = r
	}
	return l, g
}

func TestLocalFitConstantIsNadarayaWatson(t *testing.T) {
	rng := newRNG(3)
	x, _ := blobs(rng, [][]float64{{0, 0}}, 30, 1)
	y := make([][]float64, len(x))
	for i, p := range x {
		y[i] = []float64{math.Cos(p[0]) * p[1], p[0]}
	}
	for _, kern := range []layers.Kernel{layers.Gaussian{}, layers.Laplacian{}} {
		for _, q := range [][]float64{{0, 0}, {0.7, -1.1}} {
			res, err := LocalFit(x, y, q, squaredLossConstant, LocalFitOptions{Kernel: kern, Bandwidth: 0.6, Init: []float64{0, 0}, LearningRate: 0.5, Tol: 1e-13})
			if err != nil {
				t.Fatal(err)
			}
			if !res.Converged {
				t.Fatalf("not converged after %d steps", res.Iterations)
			}
			nw, err := NadarayaWatson(x, y, [][]float64{q}, LocalMeanOptions{Kernel: kern, Bandwidth: 0.6})
			if err != nil {
				t.Fatal(err)
			}
			assertClose(t, kern.Name(), res.Theta, nw[0], 1e-12)
		}
	}
}

func TestLocalFitLinearIsLocalLinear(t *testing.T) {
	rng := newRNG(4)
	x, _ := blobs(rng, [][]float64{{0}}, 30, 1)
	y := make([][]float64, len(x))
	for i, p := range x {
		y[i] = []float64{math.Sin(2 * p[0])}
	}
	// θ = (slope, intercept), l = ½(slope·x + intercept − y)².
	loss := func(x, y, th []float64) (float64, []float64) {
		r := th[0]*x[0] + th[1] - y[0]
		return 0.5 * r * r, []float64{r * x[0], r}
	}
	q := []float64{0.3}
	res, err := LocalFit(x, y, q, loss, LocalFitOptions{Bandwidth: 0.5, Init: []float64{0, 0}, LearningRate: 1, MaxIter: 100000, Tol: 1e-12})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Converged {
		t.Fatalf("not converged after %d steps", res.Iterations)
	}
	theta, err := LocalLinearFit(x, y, q, LocalLinearOptions{Bandwidth: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "theta", res.Theta, []float64{theta.At(0, 0), theta.At(1, 0)}, 1e-9)
}

func TestLocalFitDiverges(t *testing.T) {
	x := [][]float64{{0}, {1}}
	y := [][]float64{{1}, {2}}
	_, err := LocalFit(x, y, []float64{0}, squaredLossConstant, LocalFitOptions{Bandwidth: 1, Init: []float64{0}, LearningRate: 5})
	if err == nil {
		t.Error("learning rate 5 on a unit-curvature loss: no divergence error")
	}
}
