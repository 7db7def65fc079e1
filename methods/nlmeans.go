package methods

import (
	"errors"
	"fmt"

	"github.com/locusml/locus/layers"
)

// NLMeansOptions configures NonLocalMeans.
type NLMeansOptions struct {
	// Bandwidth h > 0 of the kernel on patches. Required. Patch vectors are
	// scaled so that their squared distance is the mean squared pixel
	// difference; with the Gaussian kernel, h near the noise standard
	// deviation is a good start.
	Bandwidth float64
	// Kernel is the kernel on patch vectors; nil means layers.Gaussian{}.
	Kernel layers.Kernel
	// PatchRadius r gives (2r+1)×(2r+1) patches; 0 means 1 (3×3), and a
	// negative value means r = 0 (single pixels: a bilateral-like filter).
	PatchRadius int
	// SearchRadius s restricts the candidates of a pixel to the
	// (2s+1)×(2s+1) window around it, clipped to the image; 0 means 5, and a
	// negative value means the whole image.
	SearchRadius int
}

// NonLocalMeans denoises a grey image (rows×cols, row-major: img[row][col])
// by non-local means: each pixel becomes the local mean of the pixels in
// its search window, with a kernel on the similarity of the patches around
// them instead of the pixels' positions,
//
//	u(p) = Σ_q K(P(p), P(q)) v(q) / Σ_q K(P(p), P(q)).
//
// Patches reaching past the border are filled by mirror reflection (…, 2,
// 1, 0, 1, 2, …). It returns a new image; a pixel whose weights are all zero
// (possible only with a compact kernel) keeps its value.
func NonLocalMeans(img [][]float64, opts NLMeansOptions) ([][]float64, error) {
	if _, err := checkPoints("image", img); err != nil {
		return nil, fmt.Errorf("nl-means: %w", err)
	}
	if opts.Bandwidth == 0 {
		return nil, errors.New("nl-means: Bandwidth is required")
	}
	if err := checkBandwidth(opts.Bandwidth); err != nil {
		return nil, fmt.Errorf("nl-means: %w", err)
	}
	kern := opts.Kernel
	if kern == nil {
		kern = layers.Gaussian{}
	}
	if err := checkKernel(kern); err != nil {
		return nil, fmt.Errorf("nl-means: %w", err)
	}
	pr, sr := opts.PatchRadius, opts.SearchRadius
	switch {
	case pr == 0:
		pr = 1
	case pr < 0:
		pr = 0
	}
	if sr == 0 {
		sr = 5
	}
	rows, cols := len(img), len(img[0])
	if sr < 0 {
		sr = max(rows, cols)
	}

	side := 2*pr + 1
	scale := 1 / float64(side)
	patches := make([][]float64, rows*cols)
	flat := make([]float64, rows*cols*side*side)
	for r := 0; r < rows; r++ {
		for c := 0; c < cols; c++ {
			p := flat[(r*cols+c)*side*side : (r*cols+c+1)*side*side]
			for dr := -pr; dr <= pr; dr++ {
				for dc := -pr; dc <= pr; dc++ {
					p[(dr+pr)*side+dc+pr] = scale * img[reflect(r+dr, rows)][reflect(c+dc, cols)]
				}
			}
			patches[r*cols+c] = p
		}
	}

	win := (2*sr + 1) * (2*sr + 1)
	keys := make([][]float64, 0, win)
	vals := make([][]float64, 0, win)
	w := make([]float64, win)
	out := make([][]float64, rows)
	val := []float64{0}
	for r := 0; r < rows; r++ {
		out[r] = make([]float64, cols)
		for c := 0; c < cols; c++ {
			keys, vals = keys[:0], vals[:0]
			for qr := max(0, r-sr); qr <= min(rows-1, r+sr); qr++ {
				for qc := max(0, c-sr); qc <= min(cols-1, c+sr); qc++ {
					keys = append(keys, patches[qr*cols+qc])
					vals = append(vals, img[qr][qc:qc+1])
				}
			}
			if err := normalizedWeights(kern, opts.Bandwidth, patches[r*cols+c], keys, w[:len(keys)]); err != nil {
				if errors.Is(err, ErrNaNScore) {
					return nil, fmt.Errorf("nl-means: pixel (%d, %d): %w", r, c, err)
				}
				out[r][c] = img[r][c]
				continue
			}
			weightedMean(w[:len(keys)], vals, val)
			out[r][c] = val[0]
		}
	}
	return out, nil
}

// reflect maps an index outside [0, n) into it by mirror reflection about
// the first and last pixel.
func reflect(i, n int) int {
	if n == 1 {
		return 0
	}
	period := 2 * (n - 1)
	i = ((i % period) + period) % period
	if i >= n {
		i = period - i
	}
	return i
}

// MSE returns the mean squared difference of two images of the same shape.
func MSE(a, b [][]float64) (float64, error) {
	if len(a) != len(b) {
		return 0, fmt.Errorf("mse: %d rows vs %d", len(a), len(b))
	}
	var s float64
	var count int
	for i := range a {
		if len(a[i]) != len(b[i]) {
			return 0, fmt.Errorf("mse: row %d has %d vs %d columns", i, len(a[i]), len(b[i]))
		}
		s += sqDist(a[i], b[i])
		count += len(a[i])
	}
	if count == 0 {
		return 0, errors.New("mse: empty images")
	}
	return s / float64(count), nil
}
