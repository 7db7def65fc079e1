package methods

import (
	"errors"
	"strings"
	"testing"

	"github.com/locusml/locus/layers"
)

// TestPositionKernelsRefused: every method that takes a kernel refuses one with
// position factors (every such form of the spec language), naming it, rather than weigh
// all points alike; content kernels pass.
func TestPositionKernelsRefused(t *testing.T) {
	x := [][]float64{{0, 0}, {0.1, 0.2}, {0.3, 0.1}, {5, 5}, {5.2, 5.1}, {5.1, 5.3}}
	y := [][]float64{{0}, {0}, {0}, {1}, {1}, {1}}
	labels := []int{0, 0, 0, 1, 1, 1}
	img := [][]float64{{0, 1, 0}, {1, 0, 1}, {0, 1, 0}}
	found := 0
	for _, f := range layers.KernelForms() {
		k, err := layers.ParseKernel(f.Example)
		if err != nil {
			t.Fatalf("%s: %v", f.Example, err)
		}
		calls := map[string]func() error{
			"NadarayaWatson": func() error { _, err := NadarayaWatson(x, y, x, LocalMeanOptions{Kernel: k, Bandwidth: 1}); return err },
			"LocalMode": func() error {
				_, _, err := LocalMode(x, labels, x, LocalMeanOptions{Kernel: k, Bandwidth: 1})
				return err
			},
			"LocalLinear": func() error { _, err := LocalLinear(x, y, x, LocalLinearOptions{Kernel: k, Bandwidth: 1}); return err },
			"LabelPropagation": func() error {
				_, err := LabelPropagation(x, labels, LabelPropagationOptions{Kernel: k, Bandwidth: 1})
				return err
			},
			"MeanShift":     func() error { _, err := MeanShift(x, MeanShiftOptions{Kernel: k, Bandwidth: 1}); return err },
			"NonLocalMeans": func() error { _, err := NonLocalMeans(img, NLMeansOptions{Kernel: k, Bandwidth: 1}); return err },
		}
		positions := layers.HasPositions(k)
		if positions {
			found++
		}
		for name, call := range calls {
			err := call()
			switch {
			case positions && (!errors.Is(err, ErrPositionKernel) || !strings.Contains(err.Error(), k.Name())):
				t.Errorf("%s with %s: %v; want ErrPositionKernel naming the kernel", name, f.Example, err)
			case !positions && errors.Is(err, ErrPositionKernel):
				t.Errorf("%s with the content kernel %s: %v", name, f.Example, err)
			}
		}
	}
	if found < 4 {
		t.Fatalf("%d position forms in the spec language; want causal, window, distance, relbias, …", found)
	}
}
