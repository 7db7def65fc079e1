package dae

import (
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/train"
)

// smallImages returns n random 3×2 images.
func smallImages(n int) *datasets.Images {
	rng := rand.New(rand.NewPCG(1, 2))
	px := make([]float32, n*6)
	for i := range px {
		px[i] = rng.Float32()
	}
	return &datasets.Images{Pixels: px, Labels: make([]int, n), N: n, Rows: 3, Cols: 2}
}

func smallModel(t *testing.T) *Model {
	t.Helper()
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	m, err := New(Config{Kind: KindMLP, In: 6, Hidden: []int{4}, Noise: NoiseGaussian, Sigma: 0.3}, ps)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func nextBatches(t *testing.T, d train.Data, n int) [][]any {
	t.Helper()
	var out [][]any
	for range n {
		b, err := d.Next()
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, []any{b.Items, b.Inputs["noisy"].Data(), b.Inputs["clean"].Data()})
	}
	return out
}

// TestDataResume checks that a Data restored from State continues with exactly the
// batches, noise included, that the original draws, across an epoch boundary.
func TestDataResume(t *testing.T) {
	m := smallModel(t)
	imgs := smallImages(10) // batches of 4: 4, 4, 2 per epoch
	d, err := NewData(m, imgs, 4, 3)
	if err != nil {
		t.Fatal(err)
	}
	if n := d.StepsPerEpoch(); n != 3 {
		t.Fatalf("StepsPerEpoch %d, want 3", n)
	}
	first := nextBatches(t, d, 2)
	st, err := d.State()
	if err != nil {
		t.Fatal(err)
	}
	want := nextBatches(t, d, 4)
	if want[0][0] != 2 || want[1][0] != 4 {
		t.Fatalf("batch sizes %v %v, want the short last batch 2 then 4", want[0][0], want[1][0])
	}

	r, _ := NewData(m, imgs, 4, 99) // the seed comes back with the state
	if err := r.Restore(st); err != nil {
		t.Fatal(err)
	}
	if got := nextBatches(t, r, 4); !reflect.DeepEqual(got, want) {
		t.Fatal("restored data draws other batches than the original")
	}
	// A fresh Data with the same seed repeats the run from the start.
	f, _ := NewData(m, imgs, 4, 3)
	if got := nextBatches(t, f, 2); !reflect.DeepEqual(got, first) {
		t.Fatal("equal seeds give different batches")
	}
	// The noise is the model's corruption of the clean batch.
	b := want[1]
	noisy, clean := b[1].([]float32), b[2].([]float32)
	if reflect.DeepEqual(noisy, clean) {
		t.Fatal("noisy equals clean")
	}
	if err := r.Restore([]byte(`{"iterator":{"N":11,"BatchSize":4,"Shuffle":true}}`)); err == nil {
		t.Error("Restore accepted the state of a data set of another size")
	}
}

func TestNewDataErrors(t *testing.T) {
	m := smallModel(t)
	imgs := smallImages(10)
	wrong := *imgs
	wrong.Rows = 2
	for name, f := range map[string]func() (*Data, error){
		"nil images": func() (*Data, error) { return NewData(m, nil, 4, 1) },
		"wrong size": func() (*Data, error) { return NewData(m, &wrong, 4, 1) },
		"zero batch": func() (*Data, error) { return NewData(m, imgs, 0, 1) },
		"nil model":  func() (*Data, error) { return NewData(nil, imgs, 4, 1) },
	} {
		if _, err := f(); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}
