package layers

import (
	"encoding/binary"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/nlpodyssey/safetensors"
	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// loadFixture reads testdata/parity/block.safetensors (see its README.md) into float64
// slices with their shapes.
func loadFixture(t *testing.T) (map[string][]float64, map[string][]int) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "parity", "block.safetensors"))
	if err != nil {
		t.Fatalf("read fixture: %v", err)
	}
	st, err := safetensors.Deserialize(raw)
	if err != nil {
		t.Fatalf("parse fixture: %v", err)
	}
	vals, shapes := map[string][]float64{}, map[string][]int{}
	for _, nt := range st.Tensors() {
		tv := nt.TensorView
		if tv.DType() != safetensors.F32 {
			t.Fatalf("fixture %s: dtype %v, want F32", nt.Name, tv.DType())
		}
		data := tv.Data()
		v := make([]float64, len(data)/4)
		for i := range v {
			v[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:])))
		}
		sh := make([]int, len(tv.Shape()))
		for i, d := range tv.Shape() {
			sh[i] = int(d)
		}
		vals[nt.Name], shapes[nt.Name] = v, sh
	}
	return vals, shapes
}

func denseOf(dt autodiff.Dtype, shape []int, v []float64) *tensor.Dense {
	if dt == autodiff.Float64 {
		return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(append([]float64(nil), v...)))
	}
	f := make([]float32, len(v))
	for i, x := range v {
		f[i] = float32(x)
	}
	return tensor.New(tensor.WithShape(shape...), tensor.WithBacking(f))
}

func float64sOf(t *tensor.Dense) []float64 {
	switch d := t.Data().(type) {
	case []float32:
		out := make([]float64, len(d))
		for i, v := range d {
			out[i] = float64(v)
		}
		return out
	case []float64:
		return append([]float64(nil), d...)
	}
	return nil
}

// TestBlockParity checks the pre-LN block with the exponential kernel at bandwidth
// √d_head against PyTorch (testdata/parity): output, loss = Σ output², and the gradients
// of the loss with respect to the input and all 16 parameters, per element
// |go − ref| <= atol + rtol·|ref| (PARITY.md).
func TestBlockParity(t *testing.T) {
	ref, shapes := loadFixture(t)
	for _, dt := range []autodiff.Dtype{autodiff.Float32, autodiff.Float64} {
		t.Run(dt.String(), func(t *testing.T) {
			ps, err := autodiff.NewParams(dt, 0)
			if err != nil {
				t.Fatal(err)
			}
			blk, err := NewBlock(ps.Root(), BlockConfig{Dim: 64, Heads: 4, Hidden: 256, Attention: AttentionConfig{Causal: true}})
			if err != nil {
				t.Fatal(err)
			}
			var want []string
			for name := range ref {
				if !strings.HasPrefix(name, "grad.") && !strings.HasPrefix(name, "act.") && name != "input" && name != "output" {
					want = append(want, name)
				}
			}
			sort.Strings(want)
			if got := ps.SortedNames(); strings.Join(got, " ") != strings.Join(want, " ") {
				t.Fatalf("parameter names\n got  %v\n want %v", got, want)
			}
			for _, p := range ps.List() {
				if err := p.Set(denseOf(dt, shapes[p.Name()], ref[p.Name()])); err != nil {
					t.Fatal(err)
				}
			}
			m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
				out := blk.Forward(g, g.Input("input"))
				return autodiff.Outputs{Loss: g.Sum(g.Square(out)), Values: map[string]*autodiff.Node{"output": out}}, g.Err()
			}, 0)
			res, err := m.Run(map[string]*tensor.Dense{"input": denseOf(dt, shapes["input"], ref["input"])},
				autodiff.RunMode{Backward: true, InputGrads: true})
			if err != nil {
				t.Fatal(err)
			}
			atol, rtol := 1e-5, 1e-4
			if dt == autodiff.Float64 {
				// The fixture is float32, so a float64 run differs from it by the reference's
				// own rounding (PyTorch's float32-vs-float64 gap is below 6e-6 absolute).
				rtol = 1e-6
			}
			if d := math.Abs(res.Loss - 2083.24609); d > 2e-3 {
				t.Errorf("loss %.6f, want 2083.24609 (PyTorch float64)", res.Loss)
			}
			got := map[string][]float64{
				"output":     float64sOf(res.Values["output"]),
				"grad.input": float64sOf(res.InputGrads["input"]),
			}
			for _, p := range ps.List() {
				g := make([]float64, p.Size())
				for i := range g {
					g[i] = p.GradAt(i)
				}
				got["grad."+p.Name()] = g
			}
			names := make([]string, 0, len(got))
			for n := range got {
				names = append(names, n)
			}
			sort.Strings(names)
			for _, name := range names {
				r, g := ref[name], got[name]
				if len(r) != len(g) {
					t.Errorf("%s: %d values, want %d", name, len(g), len(r))
					continue
				}
				rt := rtol
				if name == "grad.attn.k.bias" {
					rt = 0 // analytically zero: absolute tolerance only
				}
				var worst float64
				bad := -1
				for i := range r {
					d := math.Abs(g[i] - r[i])
					worst = math.Max(worst, d)
					if bad < 0 && !(d <= atol+rt*math.Abs(r[i])) {
						bad = i
					}
				}
				t.Logf("%-22s max abs err %.3g", name, worst)
				if bad >= 0 {
					t.Errorf("%s[%d] = %.8g, want %.8g", name, bad, g[bad], r[bad])
				}
			}
		})
	}
}
