package cli

import (
	"fmt"
	"image/color"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// renderDenoised draws clean, noisy and denoised images in three labelled rows (bands of
// up to 8 columns), titled with the run and the MSE of what it shows, and returns the PNG.
func renderDenoised(title string, clean, noisy, denoised [][]float32) ([]byte, error) {
	n := len(clean)
	if n == 0 || len(noisy) != n || len(denoised) != n {
		return nil, fmt.Errorf("denoised grid: %d clean, %d noisy, %d denoised images", len(clean), len(noisy), len(denoised))
	}
	var seDen, seNoisy float64
	var count int
	for i := range clean {
		for j, c := range clean[i] {
			seDen += sq(float64(denoised[i][j] - c))
			seNoisy += sq(float64(min(max(noisy[i][j], 0), 1) - c))
			count++
		}
	}
	const cols = 8
	bands := (n + cols - 1) / cols
	const cell, labelW, gap = 1.5 * vg.Centimeter, 2.2 * vg.Centimeter, 0.4 * vg.Centimeter
	w := labelW + cols*cell + 0.3*vg.Centimeter
	sub := fmt.Sprintf("MSE per pixel vs clean, these %d test images: denoised %.5f, noisy input %.5f", n, seDen/float64(count), seNoisy/float64(count))
	hd := newFigureHeader(title, sub, w)
	header := hd.height
	h := header + vg.Length(bands)*(3*cell+gap)
	return drawFigure(w, h, func(dc draw.Canvas) {
		hd.draw(dc)
		st := text.Style{Color: color.Black, Font: plot.DefaultFont, XAlign: draw.XRight, YAlign: draw.YCenter, Handler: plot.DefaultTextHandler}
		st.Font.Size = 10
		top := dc.Max.Y - header
		for k := range n {
			band, col := k/cols, k%cols
			for line, im := range [][]float32{clean[k], noisy[k], denoised[k]} {
				y1 := top - vg.Length(band)*(3*cell+gap) - vg.Length(line)*cell
				x0 := dc.Min.X + labelW + vg.Length(col)*cell
				dc.DrawImage(vg.Rectangle{Min: vg.Point{X: x0 + 1, Y: y1 - cell + 1}, Max: vg.Point{X: x0 + cell - 1, Y: y1 - 1}}, grayImage(im))
				if col == 0 {
					dc.FillText(st, vg.Point{X: dc.Min.X + labelW - 0.2*vg.Centimeter, Y: y1 - cell/2}, []string{"clean", "noisy", "denoised"}[line])
				}
			}
		}
	})
}

func sq(x float64) float64 { return x * x }
