package methods

import (
	"math"
	"testing"

	"github.com/locusml/locus/layers"
)

// squares returns a 32×32 piecewise-constant image (three flat regions)
// and a copy with Gaussian noise of standard deviation sigma.
func squares(sigma float64, seed uint64) (clean, noisy [][]float64) {
	rng := newRNG(seed)
	for r := 0; r < 32; r++ {
		c1, n1 := make([]float64, 32), make([]float64, 32)
		for c := range c1 {
			switch {
			case r >= 8 && r < 24 && c >= 8 && c < 24:
				c1[c] = 1
			case c >= 24:
				c1[c] = 0.5
			}
			n1[c] = c1[c] + sigma*rng.NormFloat64()
		}
		clean, noisy = append(clean, c1), append(noisy, n1)
	}
	return clean, noisy
}

func TestNonLocalMeansReducesNoise(t *testing.T) {
	clean, noisy := squares(0.15, 12)
	den, err := NonLocalMeans(noisy, NLMeansOptions{Bandwidth: 0.15, PatchRadius: 2, SearchRadius: 7})
	if err != nil {
		t.Fatal(err)
	}
	before, _ := MSE(noisy, clean)
	after, _ := MSE(den, clean)
	t.Logf("MSE noisy %.5f, denoised %.5f, factor %.1f", before, after, before/after)
	if after > before/5 {
		t.Errorf("MSE %.5f → %.5f: reduced by %.1f×, want >= 5×", before, after, before/after)
	}
}

// naiveNLMeans is an independent, direct implementation: explicit mirror
// padding, plain exp of the mean squared patch difference, no log-sum-exp.
func naiveNLMeans(img [][]float64, h float64, pr, sr int) [][]float64 {
	rows, cols := len(img), len(img[0])
	pad := func(r, c int) float64 {
		for r < 0 || r >= rows {
			if r < 0 {
				r = -r
			}
			if r >= rows {
				r = 2*(rows-1) - r
			}
		}
		for c < 0 || c >= cols {
			if c < 0 {
				c = -c
			}
			if c >= cols {
				c = 2*(cols-1) - c
			}
		}
		return img[r][c]
	}
	side := float64(2*pr + 1)
	out := make([][]float64, rows)
	for r := 0; r < rows; r++ {
		out[r] = make([]float64, cols)
		for c := 0; c < cols; c++ {
			var num, den float64
			for qr := r - sr; qr <= r+sr; qr++ {
				for qc := c - sr; qc <= c+sr; qc++ {
					if qr < 0 || qr >= rows || qc < 0 || qc >= cols {
						continue
					}
					var d2 float64
					for dr := -pr; dr <= pr; dr++ {
						for dc := -pr; dc <= pr; dc++ {
							diff := pad(r+dr, c+dc) - pad(qr+dr, qc+dc)
							d2 += diff * diff
						}
					}
					w := math.Exp(-d2 / (side * side) / (2 * h * h))
					num += w * img[qr][qc]
					den += w
				}
			}
			out[r][c] = num / den
		}
	}
	return out
}

func TestNonLocalMeansMatchesNaive(t *testing.T) {
	rng := newRNG(13)
	img := make([][]float64, 6)
	for r := range img {
		img[r] = make([]float64, 5)
		for c := range img[r] {
			img[r][c] = rng.Float64()
		}
	}
	for _, pr := range []int{1, 2} {
		for _, sr := range []int{1, 3, -1} {
			got, err := NonLocalMeans(img, NLMeansOptions{Bandwidth: 0.3, PatchRadius: pr, SearchRadius: sr})
			if err != nil {
				t.Fatal(err)
			}
			srN := sr
			if sr < 0 {
				srN = 6
			}
			want := naiveNLMeans(img, 0.3, pr, srN)
			for r := range want {
				assertClose(t, "row", got[r], want[r], 1e-12)
			}
		}
	}
}

func TestNonLocalMeansOptions(t *testing.T) {
	img := [][]float64{{0, 1}, {1, 0}}
	if _, err := NonLocalMeans(img, NLMeansOptions{}); err == nil {
		t.Error("no bandwidth: no error")
	}
	// A compact kernel with a tiny bandwidth: only a pixel's own patch has
	// weight, so the image is unchanged.
	got, err := NonLocalMeans(img, NLMeansOptions{Bandwidth: 1e-6, Kernel: layers.Epanechnikov{}})
	if err != nil {
		t.Fatal(err)
	}
	for r := range img {
		assertClose(t, "row", got[r], img[r], 0)
	}
}

func TestReflect(t *testing.T) {
	want := map[int]int{-3: 3, -1: 1, 0: 0, 4: 4, 5: 3, 8: 0, 9: 1}
	for i, w := range want {
		if got := reflect(i, 5); got != w {
			t.Errorf("reflect(%d, 5) = %d, want %d", i, got, w)
		}
	}
	if reflect(-2, 1) != 0 {
		t.Error("reflect in a 1-pixel image")
	}
}
