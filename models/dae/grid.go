package dae

import (
	"fmt"
	"image"
	"image/color"
	"image/png"
	"io"
	"math"

	"github.com/locusml/locus/internal/regularfile"
)

// gridScale is the size in pixels of one image pixel in WriteGrid's output.
const gridScale = 2

// WriteGrid writes a PNG of clean, noisy and denoised images side by side, for looking at
// a denoiser. The three slices hold the same number of square grey-scale images (values
// in [0, 1], clipped; 784 values make 28×28). The images are laid out in rows bands;
// each band is three lines, the clean images, their noisy versions and the denoised
// outputs, so each column shows one digit three times. Pixels are drawn 2×2.
func WriteGrid(path string, clean, noisy, denoised [][]float32, rows int) error {
	n := len(clean)
	if n == 0 || len(noisy) != n || len(denoised) != n {
		return fmt.Errorf("dae: grid: %d clean, %d noisy, %d denoised images", len(clean), len(noisy), len(denoised))
	}
	if rows < 1 || rows > n {
		return fmt.Errorf("dae: grid: rows=%d for %d images", rows, n)
	}
	side := int(math.Round(math.Sqrt(float64(len(clean[0])))))
	if side*side != len(clean[0]) {
		return fmt.Errorf("dae: grid: images of %d pixels are not square", len(clean[0]))
	}
	for _, set := range [][][]float32{clean, noisy, denoised} {
		for _, im := range set {
			if len(im) != side*side {
				return fmt.Errorf("dae: grid: images have %d and %d pixels", side*side, len(im))
			}
		}
	}
	const pad, bandGap = 2, 6
	cols := (n + rows - 1) / rows
	cell := side*gridScale + pad
	width := cols*cell + pad
	bandH := 3*cell + bandGap
	img := image.NewGray(image.Rect(0, 0, width, rows*bandH+pad))
	for i := range img.Pix {
		img.Pix[i] = 96 // grey frame between images
	}
	for k := range n {
		band, col := k/cols, k%cols
		for line, im := range [][]float32{clean[k], noisy[k], denoised[k]} {
			x0 := pad + col*cell
			y0 := pad + band*bandH + line*cell
			for r := range side {
				for c := range side {
					v := min(max(im[r*side+c], 0), 1)
					g := color.Gray{Y: uint8(math.Round(float64(v) * 255))}
					for dy := range gridScale {
						for dx := range gridScale {
							img.SetGray(x0+c*gridScale+dx, y0+r*gridScale+dy, g)
						}
					}
				}
			}
		}
	}
	if err := regularfile.WriteFile(path, func(w io.Writer) error { return png.Encode(w, img) }); err != nil {
		return fmt.Errorf("dae: grid: %w", err)
	}
	return nil
}
