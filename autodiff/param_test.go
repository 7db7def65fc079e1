package autodiff

import (
	"math"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

func TestParamNamesAndLookup(t *testing.T) {
	ps, err := NewParams(Float32, 1)
	if err != nil {
		t.Fatal(err)
	}
	blk := ps.Scope("blocks").Sub("0").Sub("attn")
	q, err := blk.Sub("q").New("weight", []int{4, 3}, Zeros())
	if err != nil {
		t.Fatal(err)
	}
	if q.Name() != "blocks.0.attn.q.weight" || ps.Get("blocks.0.attn.q.weight") != q {
		t.Fatalf("name %q, lookup %v", q.Name(), ps.Get("blocks.0.attn.q.weight"))
	}
	if _, err := blk.Sub("q").New("weight", []int{4, 3}, Zeros()); err == nil || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("duplicate name: %v", err)
	}
	for _, bad := range []string{"", "a..b", "a b", "x/y"} {
		if _, err := ps.Root().New(bad, []int{1}, Zeros()); err == nil {
			t.Errorf("name %q accepted", bad)
		}
	}
	if _, err := ps.Root().New("neg", []int{2, 0}, Zeros()); err == nil {
		t.Error("shape [2 0] accepted")
	}
	if err := q.Set(tensor.New(tensor.WithShape(3, 4), tensor.Of(Float32))); err == nil || !strings.Contains(err.Error(), "(3, 4)") {
		t.Errorf("Set with the wrong shape: %v", err)
	}
	if _, err := ps.Root().New("bad", []int{3}, TorchLinear(0)); err == nil {
		t.Error("TorchLinear(0) accepted")
	}
	if _, err := NewParams(tensor.Int, 0); err == nil {
		t.Error("int params accepted")
	}
}

// TestInitialisers checks each initialiser's mean and standard deviation on 40000 draws
// and that equal seeds give equal values.
func TestInitialisers(t *testing.T) {
	const n = 40000
	for _, tc := range []struct {
		name      string
		init      Init
		mean, std float64
	}{
		{"zeros", Zeros(), 0, 0},
		{"ones", Ones(), 1, 0},
		{"normal", Normal(0.5, 0.02), 0.5, 0.02},
		{"uniform", Uniform(-1, 3), 1, 4 / math.Sqrt(12)},
		{"xavier uniform", XavierUniform(100, 300), 0, math.Sqrt(2.0 / 400)},
		{"xavier normal", XavierNormal(100, 300), 0, math.Sqrt(2.0 / 400)},
		{"kaiming uniform", KaimingUniform(50), 0, math.Sqrt(2.0 / 50)},
		{"kaiming normal", KaimingNormal(50), 0, math.Sqrt(2.0 / 50)},
		{"torch linear", TorchLinear(64), 0, 1 / math.Sqrt(64) / math.Sqrt(3)},
	} {
		var vals [2][]float64
		for run := range 2 {
			ps, _ := NewParams(Float64, 42)
			p, err := ps.Root().New("w", []int{n}, tc.init)
			if err != nil {
				t.Fatal(err)
			}
			vals[run] = p.Float64s()
		}
		var sum, sq float64
		for i, v := range vals[0] {
			if v != vals[1][i] {
				t.Fatalf("%s: same seed, different values", tc.name)
			}
			sum += v
			sq += v * v
		}
		mean := sum / n
		std := math.Sqrt(sq/n - mean*mean)
		if math.Abs(mean-tc.mean) > 0.03*tc.std+1e-12 || math.Abs(std-tc.std) > 0.03*tc.std+1e-12 {
			t.Errorf("%s: mean %.4g std %.4g, want %.4g and %.4g", tc.name, mean, std, tc.mean, tc.std)
		}
	}
}
