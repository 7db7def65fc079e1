package methods

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
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

// TestMeanShiftIsScaleFree: 12 clusters found at scale 1 are found alike with the points
// and the bandwidth scaled to 1e-300 and to 1e300: the steps, the merge test and the
// labels compare distances in bandwidths, divided before squaring, so nothing underflows
// (before, 1e-300 points with bandwidth 1e-301 merged into one cluster) or overflows.
func TestMeanShiftIsScaleFree(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var base [][]float64
	for c := range 12 {
		for range 5 {
			base = append(base, []float64{float64(c%4)*10 + rng.Float64(), float64(c/4)*10 + rng.Float64()})
		}
	}
	ref, err := MeanShift(base, MeanShiftOptions{Kernel: layers.Gaussian{}, Bandwidth: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(ref.Centers) != 12 {
		t.Fatalf("scale 1: %d clusters, want 12", len(ref.Centers))
	}
	for _, k := range []layers.Kernel{layers.Gaussian{}, Flat{}} {
		for _, s := range []float64{1e-300, 1e300} {
			pts := make([][]float64, len(base))
			for i, p := range base {
				pts[i] = []float64{p[0] * s, p[1] * s}
			}
			want, err := MeanShift(base, MeanShiftOptions{Kernel: k, Bandwidth: 1})
			if err != nil {
				t.Fatal(err)
			}
			got, err := MeanShift(pts, MeanShiftOptions{Kernel: k, Bandwidth: s})
			if err != nil {
				t.Fatalf("%s at scale %g: %v", k.Name(), s, err)
			}
			if len(got.Centers) != len(want.Centers) || !slices.Equal(got.Labels, want.Labels) {
				t.Errorf("%s at scale %g: %d clusters, labels %v; at scale 1: %d, %v", k.Name(), s, len(got.Centers), got.Labels, len(want.Centers), want.Labels)
			}
		}
	}
}
