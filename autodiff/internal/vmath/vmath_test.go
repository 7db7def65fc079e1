package vmath

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestExpShift(t *testing.T) {
	for _, n := range []int{1, 7, 8, 9, 1000, 1003} {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(i%400)/4 - 95 // [-95, 5)
		}
		want := make([]float64, n)
		for i, v := range x {
			want[i] = math.Exp(float64(v) - 2)
		}
		ExpShift(x, 2)
		for i, v := range x {
			if w := want[i]; w > 1e-37 && math.Abs(float64(v)-w) > 3e-7*w {
				t.Fatalf("n=%d: exp(%v) = %v, want %v", n, float32(i%400)/4-97, v, w)
			}
		}
	}
	var worst float64
	for i := -870000; i <= 880000; i++ {
		x := float32(float64(i) / 10000)
		worst = max(worst, math.Abs(float64(Exp32(x))-math.Exp(float64(x)))/math.Exp(float64(x)))
	}
	if worst > 3e-7 {
		t.Fatalf("Exp32: max relative error %g", worst)
	}
}

func TestGELUTanh(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	for _, n := range []int{3, 8, 1001} {
		x, s, y := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(4 * rng.NormFloat64())
		}
		x[0] = -60
		GELUTanh(x, s, y)
		for i, v := range x {
			xv := float64(v)
			ws := 1 / (1 + math.Exp(-2*sqrt2OverPi*(xv+cubic*xv*xv*xv))) // = 0.5(1 + tanh u), without cancellation
			wy := xv * ws
			// exp's argument −2u is rounded to float32, so the relative error grows with it.
			tol := 1e-6 * (1 + 2*math.Abs(sqrt2OverPi*(xv+cubic*xv*xv*xv)))
			if math.Abs(float64(y[i])-wy) > tol*math.Abs(wy) && math.Abs(float64(y[i])-wy) > 1e-30 {
				t.Fatalf("n=%d: gelu(%v) = %v, want %v", n, v, y[i], wy)
			}
			if math.Abs(float64(s[i])-ws) > tol*ws && math.Abs(float64(s[i])-ws) > 1e-30 {
				t.Fatalf("n=%d: s(%v) = %v, want %v", n, v, s[i], ws)
			}
		}
	}
}

func BenchmarkGELUTanh(b *testing.B) {
	x, s, y := make([]float32, 1<<16), make([]float32, 1<<16), make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(i%1000)/100 - 5
	}
	for b.Loop() {
		GELUTanh(x, s, y)
	}
}

func TestSigmoid(t *testing.T) {
	for _, n := range []int{5, 8, 1001} {
		x, y := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(i%200)/5 - 20
		}
		Sigmoid(x, y)
		for i, v := range x {
			w := 1 / (1 + math.Exp(-float64(v)))
			if math.Abs(float64(y[i])-w) > 1e-6*w*(1+math.Abs(float64(v))) {
				t.Fatalf("sigmoid(%v) = %v, want %v", v, y[i], w)
			}
		}
	}
}
