package layers

import (
	"math"
	"testing"
)

func TestKernelFormulas(t *testing.T) {
	// q − k = (3, 4), ‖q − k‖ = 5, q·k = 1·(-2) + 2·(-2) = -6.
	q := []float64{1, 2}
	k := []float64{-2, -2}
	cases := []struct {
		kern Kernel
		h    float64
		want float64
	}{
		{Exponential{}, 2, -3},               // -6 / 2
		{Gaussian{}, 5, -0.5},                // -25 / 50
		{Gaussian{}, 1, -12.5},               // -25 / 2
		{Laplacian{}, 2, -2.5},               // -5 / 2
		{Cauchy{}, 5, -math.Log(2)},          // -log(1 + 25/25)
		{Cauchy{}, 2.5, -math.Log(5)},        // -log(1 + 25/6.25)
		{Epanechnikov{}, 10, math.Log(0.75)}, // log(1 − 25/100)
		{Epanechnikov{}, 5, math.Inf(-1)},    // boundary: K = 0
		{Epanechnikov{}, 4, math.Inf(-1)},    // outside support
		{Exponential{}, 1, -6},               // q·k
		{Laplacian{}, 0.5, -10},              // -5 / 0.5
		{Epanechnikov{}, math.Sqrt(50), math.Log(0.5)},
	}
	for _, c := range cases {
		got := c.kern.LogK(q, k, c.h)
		if math.IsInf(c.want, -1) {
			if !math.IsInf(got, -1) {
				t.Errorf("%s h=%g: got %v, want -Inf", c.kern.Name(), c.h, got)
			}
			continue
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("%s h=%g: got %.15g, want %.15g", c.kern.Name(), c.h, got, c.want)
		}
	}
}

func TestKernelAtZeroDistance(t *testing.T) {
	x := []float64{0.3, -1.2, 4}
	for _, kern := range []Kernel{Gaussian{}, Laplacian{}, Cauchy{}, Epanechnikov{}} {
		if got := kern.LogK(x, x, 0.7); got != 0 {
			t.Errorf("%s: log K(x, x) = %v, want 0", kern.Name(), got)
		}
	}
}

func TestKernelLengthMismatchPanics(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for mismatched lengths")
		}
	}()
	Gaussian{}.LogK([]float64{1}, []float64{1, 2}, 1)
}
