package bench

import (
	"math"
	"reflect"
	"testing"

	"github.com/locusml/locus/layers"
)

// TestDAEWorkload checks that the dae workload is models/dae's reference MLP with the
// peer's parameter count, and that its steps update the parameters.
func TestDAEWorkload(t *testing.T) {
	w, err := New("dae", 0, 4)
	if err != nil {
		t.Fatal(err)
	}
	// 784·256+256 + 256·64+64 + 64·256+256 + 256·784+784, torch_peer.py's n_params.
	if n := w.Params.NumElements(); n != 435536 {
		t.Errorf("%d parameters, want 435536", n)
	}
	if p := w.Params.Get("enc.0.weight"); p == nil || !reflect.DeepEqual(p.Shape(), []int{256, 784}) {
		t.Errorf("no models/dae parameter enc.0.weight [256 784] among %v", w.Params.Names())
	}
	if w.PerStep != 128 {
		t.Errorf("batch %d, want 128", w.PerStep)
	}
	w0 := w.Params.Get("dec.1.weight").At(0)
	res, err := Run(w, 1, 3)
	if err != nil {
		t.Fatal(err)
	}
	if math.IsNaN(res.LossFirst) || math.IsNaN(res.LossLast) {
		t.Errorf("loss %g -> %g", res.LossFirst, res.LossLast)
	}
	if w.Params.Get("dec.1.weight").At(0) == w0 {
		t.Error("four train steps left dec.1.weight[0] unchanged")
	}
}

// TestShapedCharLM checks that -seqlen, -batch, -kernel and -tiling reach the charlm
// workload, and that sizes a workload does not take are refused.
func TestShapedCharLM(t *testing.T) {
	w, err := NewShaped("charlm", 0, 2, Shape{SeqLen: 16, Batch: 2, Kernel: "gaussian * window(4)", Tiling: layers.TilingAlways})
	if err != nil {
		t.Fatal(err)
	}
	if w.PerStep != 32 || w.Config["kernel"] != "gaussian * window(4)" || w.Config["tiling"] != "always" {
		t.Errorf("tokens per step %d, config %v", w.PerStep, w.Config)
	}
	if _, err := Run(w, 1, 1); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name string
		s    Shape
	}{{"dae", Shape{SeqLen: 8}}, {"attn", Shape{Kernel: "gaussian"}}, {"charlm", Shape{Kernel: "gauss"}}, {"charlm", Shape{Batch: -1}}} {
		if _, err := NewShaped(c.name, 0, 1, c.s); err == nil {
			t.Errorf("%s with %+v: no error", c.name, c.s)
		}
	}
}
