package dae

import (
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
)

// TestSplitParts splits batches of 2 images in 3 parts, as a 3-process run of -batch 2
// does: the MLP and a localized DAE without position factors get one image on each of
// the first two parts and an empty part of weight 0; a localized DAE whose kernel has
// position factors (window) is not split: part 0 is the whole batch, the others empty.
func TestSplitParts(t *testing.T) {
	window := layers.MustParseKernelSpec("gaussian * window(2)")
	gauss := layers.MustParseKernelSpec("gaussian")
	for name, tc := range map[string]struct {
		cfg  Config
		want []float64 // the weights of the 3 parts
	}{
		"dae":         {Config{Kind: KindMLP, In: 6, Hidden: []int{4}, Noise: NoiseGaussian, Sigma: 0.3}, []float64{1, 1, 0}},
		"ldae":        {Config{Kind: KindLocalized, In: 6, Levels: 1, Prototypes: 3, Heads: 1, Width: 4, Kernel: &gauss, InitBandwidth: 1, Noise: NoiseGaussian, Sigma: 0.3}, []float64{1, 1, 0}},
		"ldae-window": {Config{Kind: KindLocalized, In: 6, Levels: 1, Prototypes: 3, Heads: 1, Width: 4, Kernel: &window, InitBandwidth: 1, Noise: NoiseGaussian, Sigma: 0.3}, []float64{2, 0, 0}},
	} {
		t.Run(name, func(t *testing.T) {
			ps, _ := autodiff.NewParams(autodiff.Float32, 1)
			m, err := New(tc.cfg, ps)
			if err != nil {
				t.Fatal(err)
			}
			d, err := NewData(m, smallImages(5), 2, 1)
			if err != nil {
				t.Fatal(err)
			}
			b, err := d.Next()
			if err != nil {
				t.Fatal(err)
			}
			for part, want := range tc.want {
				p, w, err := d.Split(b, part, 3)
				if err != nil {
					t.Fatalf("part %d of 3: %v", part, err)
				}
				if w != want || p.Items != int(want) {
					t.Errorf("part %d of 3 of 2 images: weight %v, %d items; want %v", part, w, p.Items, want)
				}
				if x := p.Inputs["noisy"]; want > 0 && (x == nil || x.Shape()[0] != int(want)) {
					t.Errorf("part %d of 3: noisy input %v, want %v images", part, x, want)
				}
			}
		})
	}
}
