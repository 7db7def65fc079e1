package layers

import (
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// TestKernelAttentionTaps checks what a kernel attention layer shows when its graph is
// built with taps: weights [B, H, Tq, Tk] whose rows sum to 1 over the visible keys,
// visibility that follows the causal box and the kernel's window, and per-query
// bandwidths for the query mode; on the fused standard path too.
func TestKernelAttentionTaps(t *testing.T) {
	const b, tq, dim, heads = 2, 6, 8, 2
	cases := []struct {
		spec   string
		mode   BandwidthMode
		causal bool
		window int // the visible band, from the spec or the config
	}{
		{"exponential", BandwidthFixed, true, 0},
		{"gaussian * window(2) * relbias(2)", BandwidthHead, false, 2},
		{"mixture(exponential, laplacian)", BandwidthQuery, true, 0},
		{"epanechnikov", BandwidthKNN, false, 0},
	}
	for _, c := range cases {
		ps, _ := autodiff.NewParams(autodiff.Float64, 1)
		a, err := NewKernelAttention(ps.Root().Sub("attn"), AttentionConfig{Dim: dim, Heads: heads, Kernel: MustParseKernelSpec(c.spec).Value(),
			Bandwidth: BandwidthConfig{Mode: c.mode}, Causal: c.causal})
		if err != nil {
			t.Fatal(err)
		}
		build := func(g *autodiff.Graph) (autodiff.Outputs, error) {
			return autodiff.Outputs{Values: map[string]*autodiff.Node{"y": a.Forward(g, g.Input("x"))}}, g.Err()
		}
		x := randDense(rand.New(rand.NewPCG(3, 4)), 1, b, tq, dim)
		res, err := autodiff.NewModel(ps, build, 0).Run(map[string]*tensor.Dense{"x": x}, autodiff.RunMode{Taps: true})
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		w, vis := res.Taps["attn.weights"], res.Taps["attn.visible"]
		if w == nil || vis == nil || !w.Shape().Eq(tensor.Shape{b, heads, tq, tq}) {
			t.Fatalf("%s: taps %v", c.spec, res.Taps)
		}
		wd, vd := w.Float64s(), vis.Float64s()
		for r := range b * heads * tq {
			q := r % tq
			var sum float64
			for s := range tq {
				want := (!c.causal || s <= q) && (c.window == 0 || abs(q-s) < c.window)
				if (vd[r*tq+s] == 1) != want {
					t.Fatalf("%s: visible[row %d, key %d] = %g, want %v", c.spec, r, s, vd[r*tq+s], want)
				}
				if !want && wd[r*tq+s] != 0 {
					t.Fatalf("%s: hidden key has weight %g", c.spec, wd[r*tq+s])
				}
				sum += wd[r*tq+s]
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Fatalf("%s: row %d sums to %g", c.spec, r, sum)
			}
		}
		_, hasBW := res.Taps["attn.bandwidth"]
		if hasBW != (c.mode == BandwidthQuery || c.mode == BandwidthKNN) {
			t.Fatalf("%s: bandwidth tap %v for mode %v", c.spec, hasBW, c.mode)
		}
	}
}
