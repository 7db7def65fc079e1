package methods

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/locusml/locus/layers"
)

// TestTinyBandwidthDoesNotUnderflow: below h ≈ 1e-154, h·h underflows to 0; the
// kernels divide before squaring, so each training point still predicts itself.
func TestTinyBandwidthDoesNotUnderflow(t *testing.T) {
	x := [][]float64{{0}, {1}, {2}, {3}}
	y := [][]float64{{0}, {1}, {4}, {9}}
	for _, k := range []layers.Kernel{layers.Gaussian{}, layers.Cauchy{}, layers.Laplacian{}, layers.Epanechnikov{}, layers.Tricube{}, Flat{}} {
		for _, h := range []float64{1e-170, 1e-300, 5e-324} {
			got, err := NadarayaWatson(x, y, x, LocalMeanOptions{Kernel: k, Bandwidth: h, Empty: EmptyError})
			if err != nil {
				t.Fatalf("%s h=%g: %v", k.Name(), h, err)
			}
			for i := range y {
				if got[i][0] != y[i][0] {
					t.Errorf("%s h=%g: prediction at x=%g is %g, want %g", k.Name(), h, x[i][0], got[i][0], y[i][0])
				}
			}
		}
	}
	res, err := MeanShift([][]float64{{0}, {1}, {2}, {3}, {4}, {5}, {6}, {7}}, MeanShiftOptions{Kernel: layers.Gaussian{}, Bandwidth: 1e-170})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Centers) != 8 {
		t.Errorf("meanshift with a tiny bandwidth found %d clusters of 8 distinct points, want 8", len(res.Centers))
	}
}

// nanKernel scores NaN for one key, as a kernel broken by an infinite input would.
type nanKernel struct{}

func (nanKernel) Name() string { return "nan" }
func (nanKernel) LogK(q, k []float64, h float64) float64 {
	if k[0] == 1 {
		return math.NaN()
	}
	return -math.Abs(q[0] - k[0])
}

func TestNaNKernelScoreIsAnError(t *testing.T) {
	x := [][]float64{{0}, {1}, {2}}
	if _, err := NadarayaWatson(x, x, x, LocalMeanOptions{Kernel: nanKernel{}, Bandwidth: 1}); !errors.Is(err, ErrNaNScore) {
		t.Errorf("NadarayaWatson: %v, want ErrNaNScore", err)
	}
	if _, err := MeanShift(x, MeanShiftOptions{Kernel: nanKernel{}, Bandwidth: 1}); !errors.Is(err, ErrNaNScore) {
		t.Errorf("MeanShift: %v, want ErrNaNScore", err)
	}
	if _, err := LocalLinear(x, x, x, LocalLinearOptions{Kernel: nanKernel{}, Bandwidth: 1}); !errors.Is(err, ErrNaNScore) {
		t.Errorf("LocalLinear: %v, want ErrNaNScore", err)
	}
}

// TestHugeClassLabels: memory follows the number of classes, not the largest label.
func TestHugeClassLabels(t *testing.T) {
	x := [][]float64{{0}, {0.1}, {5}, {5.1}}
	labels := []int{7, 7, 1 << 40, 1 << 40}
	q := [][]float64{{0.05}, {5.05}}
	got, err := KNNClassify(x, labels, q, KNNOptions{K: 2})
	if err != nil || got[0] != 7 || got[1] != 1<<40 {
		t.Errorf("KNNClassify = %v, %v", got, err)
	}
	cls, probs, err := LocalMode(x, labels, q, LocalMeanOptions{Bandwidth: 0.5})
	if err != nil || cls[0] != 7 || cls[1] != 1<<40 || len(probs[0]) != 2 {
		t.Errorf("LocalMode = %v, %v, %v", cls, probs, err)
	}
	res, err := LabelPropagation(x, []int{7, -1, 1 << 40, -1}, LabelPropagationOptions{Bandwidth: 0.5})
	if err != nil || res.Labels[1] != 7 || res.Labels[3] != 1<<40 {
		t.Errorf("LabelPropagation = %+v, %v", res, err)
	}
}

func TestMeanShiftFewRowsMessage(t *testing.T) {
	_, err := MeanShift([][]float64{{1}, {1.1}, {5}, {5.1}, {9}}, MeanShiftOptions{})
	if err == nil || !strings.Contains(err.Error(), "from 5 points") || strings.Contains(err.Error(), "duplicate") {
		t.Errorf("MeanShift of 5 rows: %v", err)
	}
}
