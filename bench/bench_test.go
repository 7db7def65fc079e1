package bench

import (
	"math"
	"reflect"
	"testing"
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
