package methods

import (
	"errors"
	"math"
	"testing"

	"github.com/locusml/locus/layers"
)

func TestNadarayaWatsonHand(t *testing.T) {
	x := [][]float64{{0}, {1}, {2}}
	y := [][]float64{{0}, {1}, {4}}
	got, err := NadarayaWatson(x, y, [][]float64{{1}}, LocalMeanOptions{Bandwidth: 1})
	if err != nil {
		t.Fatal(err)
	}
	e := math.Exp(-0.5) // Gaussian weight at distance 1, h = 1
	want := (0*e + 1*1 + 4*e) / (e + 1 + e)
	assertClose(t, "nw", got[0], []float64{want}, 1e-15)
}

// TestNadarayaWatsonDirect compares with a direct evaluation (plain exp, no
// log-sum-exp) for every kernel, on multi-output data.
func TestNadarayaWatsonDirect(t *testing.T) {
	rng := newRNG(1)
	x, _ := blobs(rng, [][]float64{{0, 0}, {1, 2}}, 15, 0.7)
	y := make([][]float64, len(x))
	for i, p := range x {
		y[i] = []float64{math.Sin(p[0]) + p[1], p[0] * p[1]}
	}
	queries, _ := blobs(rng, [][]float64{{0.5, 1}}, 10, 1)
	for _, kern := range []layers.Kernel{layers.Gaussian{}, layers.Laplacian{}, layers.Cauchy{}, layers.Epanechnikov{}, layers.Exponential{}} {
		h := 1.5
		if kern.Name() == "epanechnikov" {
			h = 4 // every query has support
		}
		got, err := NadarayaWatson(x, y, queries, LocalMeanOptions{Kernel: kern, Bandwidth: h})
		if err != nil {
			t.Fatal(err)
		}
		for qi, q := range queries {
			var sw float64
			want := make([]float64, 2)
			for i, p := range x {
				d2 := (q[0]-p[0])*(q[0]-p[0]) + (q[1]-p[1])*(q[1]-p[1])
				var w float64
				switch kern.Name() {
				case "gaussian":
					w = math.Exp(-d2 / (2 * h * h))
				case "laplacian":
					w = math.Exp(-math.Sqrt(d2) / h)
				case "cauchy":
					w = 1 / (1 + d2/(h*h))
				case "epanechnikov":
					w = math.Max(0, 1-d2/(h*h))
				case "exponential":
					w = math.Exp((q[0]*p[0] + q[1]*p[1]) / h)
				}
				sw += w
				want[0] += w * y[i][0]
				want[1] += w * y[i][1]
			}
			want[0] /= sw
			want[1] /= sw
			assertClose(t, kern.Name(), got[qi], want, 1e-12)
		}
	}
}

func TestNadarayaWatsonFarQueryNoUnderflow(t *testing.T) {
	x := [][]float64{{0}, {1}}
	y := [][]float64{{0}, {10}}
	// exp(-99²/0.02) underflows to 0 for both keys; the log-sum-exp does not.
	got, err := NadarayaWatson(x, y, [][]float64{{100}}, LocalMeanOptions{Bandwidth: 0.1})
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "far", got[0], []float64{10}, 1e-12)
}

func TestNadarayaWatsonEmptyRows(t *testing.T) {
	x := [][]float64{{0}, {1}}
	y := [][]float64{{3}, {5}}
	q := [][]float64{{0.5}, {10}}
	opts := LocalMeanOptions{Kernel: layers.Epanechnikov{}, Bandwidth: 1}
	got, err := NadarayaWatson(x, y, q, opts)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "supported", got[0], []float64{4}, 1e-15)
	assertClose(t, "empty", got[1], []float64{0}, 0)
	opts.Empty = EmptyError
	if _, err := NadarayaWatson(x, y, q, opts); !errors.Is(err, ErrZeroWeights) {
		t.Errorf("EmptyError: err = %v, want ErrZeroWeights", err)
	}
}

func TestNadarayaWatsonErrors(t *testing.T) {
	x := [][]float64{{0}, {1}}
	y := [][]float64{{3}, {5}}
	cases := map[string]func() error{
		"negative bandwidth": func() error {
			_, err := NadarayaWatson(x, y, x, LocalMeanOptions{Bandwidth: -1})
			return err
		},
		"NaN bandwidth": func() error {
			_, err := NadarayaWatson(x, y, x, LocalMeanOptions{Bandwidth: math.NaN()})
			return err
		},
		"row mismatch": func() error {
			_, err := NadarayaWatson(x, y[:1], x, LocalMeanOptions{})
			return err
		},
		"empty": func() error {
			_, err := NadarayaWatson(nil, nil, x, LocalMeanOptions{})
			return err
		},
		"ragged": func() error {
			_, err := NadarayaWatson([][]float64{{0}, {1, 2}}, y, x, LocalMeanOptions{})
			return err
		},
		"query dims": func() error {
			_, err := NadarayaWatson(x, y, [][]float64{{1, 2}}, LocalMeanOptions{})
			return err
		},
		"NaN point": func() error {
			_, err := NadarayaWatson([][]float64{{0}, {math.NaN()}}, y, x, LocalMeanOptions{})
			return err
		},
	}
	for name, f := range cases {
		if f() == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDefaultBandwidth(t *testing.T) {
	// Column sds 1 and 2 (population), n = 4, d = 2: h = 1.5 · 4^(-1/6).
	x := [][]float64{{-1, -2}, {1, 2}, {-1, 2}, {1, -2}}
	want := 1.5 * math.Pow(4, -1.0/6)
	if got := DefaultBandwidth(x); math.Abs(got-want) > 1e-15 {
		t.Errorf("DefaultBandwidth = %v, want %v", got, want)
	}
}

func TestLocalModeHand(t *testing.T) {
	x := [][]float64{{0}, {0.1}, {1}, {5}}
	labels := []int{0, 0, 1, 2}
	classes, probs, err := LocalMode(x, labels, [][]float64{{0.2}, {4}}, LocalMeanOptions{Bandwidth: 0.5})
	if err != nil {
		t.Fatal(err)
	}
	if classes[0] != 0 || classes[1] != 2 {
		t.Errorf("classes = %v, want [0 2]", classes)
	}
	g := func(d float64) float64 { return math.Exp(-d * d / 0.5) }
	w := []float64{g(0.2), g(0.1), g(0.8), g(4.8)}
	s := w[0] + w[1] + w[2] + w[3]
	assertClose(t, "probs", probs[0], []float64{(w[0] + w[1]) / s, w[2] / s, w[3] / s}, 1e-15)
}
