package layers

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

// runValues runs build once in float64 evaluation mode and returns its named outputs.
func runValues(t *testing.T, ps *autodiff.Params, inputs map[string]*tensor.Dense, build func(g *autodiff.Graph) map[string]*autodiff.Node) map[string][]float64 {
	t.Helper()
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		return autodiff.Outputs{Values: build(g)}, g.Err()
	}, 0)
	res, err := m.Forward(inputs)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]float64{}
	for k, v := range res.Values {
		out[k] = float64sOf(v)
	}
	return out
}

func paramMatrix(p *autodiff.Param) (rows, cols int, at func(i, j int) float64) {
	s := p.Shape()
	return s[0], s[1], func(i, j int) float64 { return p.At(i*s[1] + j) }
}

// linearRef applies l to the row x with plain loops.
func linearRef(l *Linear, x []float64) []float64 {
	out := make([]float64, l.Out)
	_, _, w := paramMatrix(l.Weight)
	for o := range out {
		if l.Bias != nil {
			out[o] = l.Bias.At(o)
		}
		for i, v := range x {
			out[o] += w(o, i) * v
		}
	}
	return out
}

// TestScoresMatchLogK checks every kernel's graph scores against its plain-vector LogK,
// with a constant and with a per-query bandwidth.
func TestScoresMatchLogK(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	const n, tq, tk, d = 2, 3, 4, 3
	q, k := randDense(rng, 0.7, n, tq, d), randDense(rng, 0.7, n, tk, d)
	hq := make([]float64, n*tq)
	for i := range hq {
		hq[i] = 1 + rng.Float64()
	}
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	mix, err := Mixture{Kernels: []ContentKernel{Gaussian{}, Epanechnikov{}, Exponential{}}}.Bind(ps.Scope("mix"), 1)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range []float64{0.3, -1, 0.5} {
		ps.Get("mix.logits").SetAt(i, v)
	}
	kernels := []ContentKernel{Exponential{}, Gaussian{}, Laplacian{}, Cauchy{}, Epanechnikov{}, mix}
	for _, kern := range kernels {
		hIn := tensor.New(tensor.WithShape(n, tq), tensor.WithBacking(hq))
		out := runValues(t, ps, map[string]*tensor.Dense{"q": q, "k": k, "h": hIn}, func(g *autodiff.Graph) map[string]*autodiff.Node {
			return map[string]*autodiff.Node{
				"fixed": kern.Scores(g, g.Input("q"), g.Input("k"), Fixed(1.3)),
				"query": kern.Scores(g, g.Input("q"), g.Input("k"), Width{Node: g.Input("h")}),
			}
		})
		qd, kd := q.Data().([]float64), k.Data().([]float64)
		for p := range n {
			for i := range tq {
				for j := range tk {
					qv, kv := qd[(p*tq+i)*d:(p*tq+i+1)*d], kd[(p*tk+j)*d:(p*tk+j+1)*d]
					idx := (p*tq+i)*tk + j
					for mode, h := range map[string]float64{"fixed": 1.3, "query": hq[p*tq+i]} {
						want, got := kern.LogK(qv, kv, h), out[mode][idx]
						if math.IsInf(want, -1) != math.IsInf(got, -1) || (!math.IsInf(want, -1) && math.Abs(got-want) > 1e-12) {
							t.Errorf("%s %s [%d,%d,%d]: score %v, LogK %v", kern.Name(), mode, p, i, j, got, want)
						}
					}
				}
			}
		}
	}
}

// TestAttentionMatchesReference compares KernelAttention with a plain-loop local mean
// (THEORY.md §2) over LogK: cross-attention with key padding and a window, every kernel.
func TestAttentionMatchesReference(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const b, tq, tk, dim, kv, heads = 2, 3, 5, 4, 3, 2
	x, mem := randDense(rng, 1, b, tq, dim), randDense(rng, 1, b, tk, kv)
	pad := []float64{1, 1, 1, 1, 0, 1, 1, 0, 0, 0}
	for _, kern := range []ContentKernel{Exponential{}, Gaussian{}, Laplacian{}, Cauchy{}, Epanechnikov{}} {
		ps, _ := autodiff.NewParams(autodiff.Float64, 4)
		a, err := NewKernelAttention(ps.Root(), AttentionConfig{Dim: dim, Heads: heads, KVDim: kv, Kernel: kern, Window: 3,
			Bandwidth: BandwidthConfig{Init: 1.5}})
		if err != nil {
			t.Fatal(err)
		}
		out := runValues(t, ps, map[string]*tensor.Dense{"x": x, "mem": mem}, func(g *autodiff.Graph) map[string]*autodiff.Node {
			return map[string]*autodiff.Node{"y": a.Attend(g, g.Input("x"), g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{b, tk}, pad), Offset: 1})}
		})["y"]
		xd, md := x.Data().([]float64), mem.Data().([]float64)
		dh := dim / heads
		for bi := range b {
			keys := make([][]float64, tk)
			vals := make([][]float64, tk)
			for s := range tk {
				keys[s] = linearRef(a.K, md[(bi*tk+s)*kv:(bi*tk+s+1)*kv])
				vals[s] = linearRef(a.V, md[(bi*tk+s)*kv:(bi*tk+s+1)*kv])
			}
			for tt := range tq {
				q := linearRef(a.Q, xd[(bi*tq+tt)*dim:(bi*tq+tt+1)*dim])
				ctx := make([]float64, dim)
				for h := range heads {
					cols := func(v []float64) []float64 { return v[h*dh : (h+1)*dh] }
					var w []float64
					var total float64
					for s := range tk {
						pos := tt + 1
						ok := pad[bi*tk+s] != 0 && abs(pos-s) < 3
						wt := 0.0
						if ok {
							wt = math.Exp(kern.LogK(cols(q), cols(keys[s]), 1.5))
						}
						w = append(w, wt)
						total += wt
					}
					for s := range tk {
						if total > 0 {
							for c := range dh {
								ctx[h*dh+c] += w[s] / total * vals[s][h*dh+c]
							}
						}
					}
				}
				want := linearRef(a.O, ctx)
				for c, wv := range want {
					if got := out[(bi*tq+tt)*dim+c]; math.Abs(got-wv) > 1e-10 {
						t.Fatalf("%s: y[%d,%d,%d] = %.12g, want %.12g", kern.Name(), bi, tt, c, got, wv)
					}
				}
			}
		}
	}
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// TestKVCacheDecoding checks that attending from the last token over cached keys and
// values (AttendKV with Offset) equals the last row of full causal self-attention.
func TestKVCacheDecoding(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	const b, T, dim = 2, 5, 4
	x := randDense(rng, 1, b, T, dim)
	for _, cfg := range []AttentionConfig{
		{Dim: dim, Heads: 2, Causal: true},
		{Dim: dim, Heads: 2, Causal: true, Rotary: true, Kernel: Product{Content: Gaussian{}, Position: RelativeBias{MaxDistance: 2}},
			Bandwidth: BandwidthConfig{Mode: BandwidthKNN, K: 2}},
	} {
		ps, _ := autodiff.NewParams(autodiff.Float64, 5)
		a, err := NewKernelAttention(ps.Root(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range ps.List() {
			for i := range p.Size() {
				p.SetAt(i, p.At(i)+0.2*rng.NormFloat64())
			}
		}
		last := tensor.New(tensor.WithShape(b, 1, dim), tensor.WithBacking(make([]float64, b*dim)))
		for bi := range b {
			copy(last.Data().([]float64)[bi*dim:], x.Data().([]float64)[(bi*T+T-1)*dim:(bi*T+T)*dim])
		}
		out := runValues(t, ps, map[string]*tensor.Dense{"x": x, "last": last}, func(g *autodiff.Graph) map[string]*autodiff.Node {
			k, v := a.KeysValues(g, g.Input("x"), 0)
			return map[string]*autodiff.Node{
				"full": a.Forward(g, g.Input("x")),
				"step": a.AttendKV(g, g.Input("last"), k, v, AttendOptions{Offset: T - 1}),
			}
		})
		for bi := range b {
			for c := range dim {
				full, step := out["full"][(bi*T+T-1)*dim+c], out["step"][bi*dim+c]
				if math.Abs(full-step) > 1e-12 {
					t.Fatalf("%s: cached step %g, full %g", a.Kernel.Name(), step, full)
				}
			}
		}
	}
}

func TestBandwidths(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	mk := func(name string, bw BandwidthConfig) *KernelAttention {
		a, err := NewKernelAttention(ps.Scope(name), AttentionConfig{Dim: 8, Heads: 2, Kernel: Gaussian{}, Bandwidth: bw})
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	fixed := mk("fixed", BandwidthConfig{})
	layer := mk("layer", BandwidthConfig{Mode: BandwidthLayer, Init: 3})
	head := mk("head", BandwidthConfig{Mode: BandwidthHead, Init: 0.5, Min: 0.1})
	query := mk("query", BandwidthConfig{Mode: BandwidthQuery})
	knn := mk("knn", BandwidthConfig{Mode: BandwidthKNN})
	check := func(a *KernelAttention, key string, want ...float64) {
		t.Helper()
		got := a.Bandwidths()[key]
		if len(got) != len(want) {
			t.Fatalf("%s: bandwidths %v, want %v", key, a.Bandwidths(), want)
		}
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-12 {
				t.Errorf("%s: bandwidths %v, want %v", key, got, want)
			}
		}
	}
	check(fixed, "fixed.bandwidth", 2)
	check(layer, "layer.bandwidth", 3)
	check(head, "head.bandwidth", 0.5, 0.5)
	check(query, "query.bandwidth", 2, 2)
	if len(knn.Bandwidths()) != 0 {
		t.Errorf("knn: %v, want none", knn.Bandwidths())
	}
	// Learned values are read from the parameters: h = softplus(ρ) + h_min.
	ps.Get("head.bandwidth.rho").SetAt(1, -30)
	ps.Get("layer.bandwidth.rho").SetAt(0, 2)
	check(head, "head.bandwidth", 0.5, 0.1+math.Log1p(math.Exp(-30)))
	check(layer, "layer.bandwidth", 2+math.Log1p(math.Exp(-2))+defaultMinBandwidth)
	for _, name := range []string{"layer.bandwidth.rho", "head.bandwidth.rho", "query.bandwidth.weight", "query.bandwidth.bias"} {
		if ps.Get(name) == nil {
			t.Errorf("missing parameter %s (have %v)", name, ps.Names())
		}
	}
}

func TestBlockParameterNames(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float32, 0)
	_, err := NewBlock(ps.Scope("blocks").Sub("0"), BlockConfig{Dim: 8, Heads: 2, Init: InitGPT,
		Attention: AttentionConfig{Kernel: Product{Content: Mixture{Kernels: []ContentKernel{Gaussian{}, Cauchy{}}}, Position: RelativeBias{MaxDistance: 4}},
			Bandwidth: BandwidthConfig{Mode: BandwidthHead}}})
	if err != nil {
		t.Fatal(err)
	}
	want := "blocks.0.ln1.weight blocks.0.ln1.bias " +
		"blocks.0.attn.q.weight blocks.0.attn.q.bias blocks.0.attn.k.weight blocks.0.attn.k.bias " +
		"blocks.0.attn.v.weight blocks.0.attn.v.bias blocks.0.attn.o.weight blocks.0.attn.o.bias " +
		"blocks.0.attn.kernel.content.logits blocks.0.attn.kernel.position.weight blocks.0.attn.bandwidth.rho " +
		"blocks.0.ln2.weight blocks.0.ln2.bias " +
		"blocks.0.ffn.fc1.weight blocks.0.ffn.fc1.bias blocks.0.ffn.fc2.weight blocks.0.ffn.fc2.bias"
	if got := strings.Join(ps.Names(), " "); got != want {
		t.Errorf("names\n got  %s\n want %s", got, want)
	}
	if s := ps.Get("blocks.0.ffn.fc1.weight").Shape(); s[0] != 32 || s[1] != 8 {
		t.Errorf("fc1.weight shape %v, want [32 8] ([out, in])", s)
	}
	if s := ps.Get("blocks.0.attn.kernel.position.weight").Shape(); s[0] != 2 || s[1] != 9 {
		t.Errorf("relative bias shape %v, want [2 9]", s)
	}
}

func TestGPTInit(t *testing.T) {
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	l, _ := NewLinear(ps.Scope("l"), LinearConfig{In: 200, Out: 100, Init: InitGPT})
	var s, s2 float64
	for i := range l.Weight.Size() {
		s += l.Weight.At(i)
		s2 += l.Weight.At(i) * l.Weight.At(i)
	}
	n := float64(l.Weight.Size())
	if std := math.Sqrt(s2/n - (s/n)*(s/n)); math.Abs(std-0.02) > 0.001 {
		t.Errorf("gpt init std %g, want 0.02", std)
	}
	for i := range l.Bias.Size() {
		if l.Bias.At(i) != 0 {
			t.Fatal("gpt init: nonzero bias")
		}
	}
	lt, _ := NewLinear(ps.Scope("t"), LinearConfig{In: 16, Out: 100})
	for i := range lt.Weight.Size() {
		if math.Abs(lt.Weight.At(i)) > 0.25 {
			t.Fatalf("torch init: |w| = %g > 1/√16", lt.Weight.At(i))
		}
	}
}
