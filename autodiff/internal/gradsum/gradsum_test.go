package gradsum

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestAddScaled2MatchesGoLoop compares the vector loop with the plain Go loop bit for
// bit, on lengths around the vector widths, with values of mixed magnitude, signed
// zeros, infinities and NaN.
func TestAddScaled2MatchesGoLoop(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	special := []float32{0, float32(math.Copysign(0, -1)), float32(math.Inf(1)), float32(math.NaN()), 1e-40, 3e38}
	for _, n := range []int{0, 1, 7, 8, 9, 31, 32, 33, 40, 63, 64, 65, 1000, 4099} {
		a, b, d := make([]float32, n), make([]float32, n), make([]float32, n)
		for i := range a {
			a[i] = float32(rng.NormFloat64() * math.Exp(4*rng.NormFloat64()))
			b[i] = float32(rng.NormFloat64())
			d[i] = float32(rng.NormFloat64())
			if rng.IntN(10) == 0 {
				a[i] = special[rng.IntN(len(special))]
			}
		}
		for _, c := range [][2]float32{{0.5, 0.5}, {0.3, 0.7}, {1, 1}, {0, 1}} {
			want := append([]float32(nil), d...)
			addScaled2(want, a, b, c[0], c[1])
			got := append([]float32(nil), d...)
			AddScaled2(got, a, b, c[0], c[1])
			for i := range got {
				if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
					t.Fatalf("n=%d coef=%v: element %d is %v (%#x), the Go loop gives %v (%#x)", n, c, i, got[i], math.Float32bits(got[i]), want[i], math.Float32bits(want[i]))
				}
			}
			// The Go loop itself: element 0 checked by hand.
			if n > 0 && !math.IsNaN(float64(want[0])) {
				if w := d[0] + (float32(c[0]*a[0]) + float32(c[1]*b[0])); w != want[0] {
					t.Fatalf("n=%d: Go loop gives %v at 0, want %v", n, want[0], w)
				}
			}
		}
	}
}

func BenchmarkAddScaled2(b *testing.B) {
	const n = 200704 // dae's 784×256 weight
	x, y, d := make([]float32, n), make([]float32, n), make([]float32, n)
	b.SetBytes(4 * 4 * n)
	for b.Loop() {
		AddScaled2(d, x, y, 0.5, 0.5)
	}
}

func BenchmarkAddScaled2Go(b *testing.B) {
	const n = 200704
	x, y, d := make([]float32, n), make([]float32, n), make([]float32, n)
	b.SetBytes(4 * 4 * n)
	for b.Loop() {
		addScaled2(d, x, y, 0.5, 0.5)
	}
}
