package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"gorgonia.org/tensor"
)

// featureCase is one configuration of RandomFeatureAttention under test.
type featureCase struct {
	tq, tk, off int
	causal      bool
	masked      bool
}

var featureCases = []featureCase{
	{4, 4, 0, true, false},
	{2, 5, 3, true, false},
	{3, 5, 1, true, false},
	{3, 4, 0, false, false},
	{3, 4, 0, false, true},
	{4, 4, 0, true, true},
}

func featureOpts(rng *rand.Rand, m, d int) FeatureOptions {
	w := make([]float64, m*d)
	for i := range w {
		w[i] = rng.NormFloat64()
	}
	return FeatureOptions{Features: w, M: m, KeyCoef: -0.5, KeyShift: 0.7, Heads: 2}
}

// TestRandomFeatureAttentionGradients finite-difference-checks the fused op (float64)
// with causal, offset, bidirectional and key-masked calls.
func TestRandomFeatureAttentionGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	const n, m, d, dv = 4, 5, 3, 2
	for _, c := range featureCases {
		opt := featureOpts(rng, m, d)
		opt.Causal, opt.Offset = c.causal, c.off
		p := map[string]*tensor.Dense{
			"q": randTensor(rng, 1, n, c.tq, d),
			"k": randTensor(rng, 1, n, c.tk, d),
			"v": randTensor(rng, 1, n, c.tk, dv),
		}
		in := map[string]*tensor.Dense{}
		if c.masked {
			km := make([]float64, n/2*c.tk)
			for i := range km {
				km[i] = float64(i % 3 % 2) // 0, 1, 0, 0, 1, 0, ...: some keys hidden
			}
			km[0] = 1
			in["km"] = tensor.New(tensor.WithShape(n/2, c.tk), tensor.WithBacking(km))
		}
		checkOp(t, fmt.Sprintf("RandomFeatureAttention%+v", c), p, in, func(g *Graph, p map[string]*Node) *Node {
			o := opt
			if c.masked {
				o.KeyMask = g.Input("km")
			}
			return g.RandomFeatureAttention(p["q"], p["k"], p["v"], o)
		}, GradCheck{ATol: 1e-7, RTol: 1e-5})
	}
}

// featureReference is RandomFeatureAttention written out pair by pair (float64).
func featureReference(q, k, v, km []float64, opt FeatureOptions, n, tq, tk, d, dv int) []float64 {
	m := opt.M
	out := make([]float64, n*tq*dv)
	phi := func(x []float64, key bool) []float64 {
		e := make([]float64, m)
		var n2 float64
		for _, xi := range x {
			n2 += xi * xi
		}
		mx := math.Inf(-1)
		for j := range m {
			for c := range d {
				e[j] += opt.Features[j*d+c] * x[c]
			}
			mx = max(mx, e[j])
		}
		var sum float64
		for j := range e {
			if key {
				e[j] = math.Exp(e[j] + opt.KeyCoef*n2 - opt.KeyShift)
			} else {
				e[j] = math.Exp(e[j] - mx)
				sum += e[j]
			}
		}
		if !key {
			for j := range e {
				e[j] /= sum
			}
		}
		return e
	}
	for i := range n {
		for t := range tq {
			pq := phi(q[(i*tq+t)*d:][:d], false)
			var den float64
			num := make([]float64, dv)
			for s := range tk {
				if opt.Causal && s > t+opt.Offset {
					continue
				}
				pk := phi(k[(i*tk+s)*d:][:d], true)
				var w float64
				for j := range m {
					w += pq[j] * pk[j]
				}
				if km != nil {
					w *= km[(i/opt.Heads)*tk+s]
				}
				den += w
				for c := range dv {
					num[c] += w * v[(i*tk+s)*dv+c]
				}
			}
			for c := range dv {
				out[(i*tq+t)*dv+c] = num[c] / (den + 1e-30)
			}
		}
	}
	return out
}

// TestRandomFeatureAttentionValues compares the op with featureReference (float64) and
// its float32 path with its float64 one.
func TestRandomFeatureAttentionValues(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	const n, m, d, dv = 4, 16, 4, 3
	for _, c := range featureCases {
		opt := featureOpts(rng, m, d)
		opt.Causal, opt.Offset = c.causal, c.off
		q, k, v := f32Round(randTensor(rng, 1, n, c.tq, d)), f32Round(randTensor(rng, 1, n, c.tk, d)), f32Round(randTensor(rng, 1, n, c.tk, dv))
		var km []float64
		if c.masked {
			km = make([]float64, n/2*c.tk)
			for i := range km {
				km[i] = float64((i + 1) % 2)
			}
		}
		run := func(dt Dtype) []float64 {
			ps, _ := NewParams(dt, 0)
			mod := NewModel(ps, func(g *Graph) (Outputs, error) {
				o := opt
				if km != nil {
					o.KeyMask = g.Input("km")
				}
				return Outputs{Values: map[string]*Node{"y": g.RandomFeatureAttention(g.Input("q"), g.Input("k"), g.Input("v"), o)}}, g.Err()
			}, 0)
			in := map[string]*tensor.Dense{"q": castTo(q, dt), "k": castTo(k, dt), "v": castTo(v, dt)}
			if km != nil {
				in["km"] = castTo(tensor.New(tensor.WithShape(n/2, c.tk), tensor.WithBacking(km)), dt)
			}
			res, err := mod.Forward(in)
			if err != nil {
				t.Fatal(err)
			}
			y := res.Values["y"]
			if dt == Float64 {
				return append([]float64(nil), y.Float64s()...)
			}
			out := make([]float64, len(y.Float32s()))
			for i, x := range y.Float32s() {
				out[i] = float64(x)
			}
			return out
		}
		want := featureReference(q.Float64s(), k.Float64s(), v.Float64s(), km, opt, n, c.tq, c.tk, d, dv)
		got64, got32 := run(Float64), run(Float32)
		var d64, d32 float64
		for i := range want {
			d64 = max(d64, math.Abs(got64[i]-want[i]))
			d32 = max(d32, math.Abs(got32[i]-got64[i]))
		}
		t.Logf("%+v: max |Δ| float64 vs reference %.3g, float32 vs float64 %.3g", c, d64, d32)
		if d64 > 1e-12 || d32 > 1e-5 {
			t.Errorf("%+v: max |Δ| float64 vs reference %.3g (want <= 1e-12), float32 vs float64 %.3g (want <= 1e-5)", c, d64, d32)
		}
	}
}

// splitHeadsDense maps [B, T, H·d] to [B·H, T, d].
func splitHeadsDense(x *tensor.Dense, h int) *tensor.Dense {
	s := x.Shape()
	b, t, d := s[0], s[1], s[2]/h
	src, out := x.Float64s(), make([]float64, x.Shape().TotalSize())
	for i := range b {
		for j := range h {
			for r := range t {
				copy(out[((i*h+j)*t+r)*d:][:d], src[(i*t+r)*s[2]+j*d:][:d])
			}
		}
	}
	return tensor.New(tensor.WithShape(b*h, t, d), tensor.WithBacking(out))
}

// TestRandomFeatureAttentionInFeatures checks the [B, T, H·d] layout: gradients by finite
// differences (float64) and values equal to the split-heads layout's.
func TestRandomFeatureAttentionInFeatures(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	const b, h, m, d, dv = 2, 2, 5, 3, 2
	for _, c := range featureCases {
		opt := featureOpts(rng, m, d)
		opt.Causal, opt.Offset, opt.Heads = c.causal, c.off, h
		q, k, v := randTensor(rng, 1, b, c.tq, h*d), randTensor(rng, 1, b, c.tk, h*d), randTensor(rng, 1, b, c.tk, h*dv)
		in := map[string]*tensor.Dense{}
		if c.masked {
			km := make([]float64, b*c.tk)
			for i := range km {
				km[i] = float64((i + 1) % 2)
			}
			in["km"] = tensor.New(tensor.WithShape(b, c.tk), tensor.WithBacking(km))
		}
		op := func(g *Graph, q, k, v *Node, inFeatures bool) *Node {
			o := opt
			o.HeadsInFeatures = inFeatures
			if c.masked {
				o.KeyMask = g.Input("km")
			}
			return g.RandomFeatureAttention(q, k, v, o)
		}
		name := fmt.Sprintf("RandomFeatureAttention in features %+v", c)
		checkOp(t, name, map[string]*tensor.Dense{"q": q, "k": k, "v": v}, in, func(g *Graph, p map[string]*Node) *Node {
			return op(g, p["q"], p["k"], p["v"], true)
		}, GradCheck{ATol: 1e-7, RTol: 1e-5})
		ps, _ := NewParams(Float64, 0)
		mod := NewModel(ps, func(g *Graph) (Outputs, error) {
			return Outputs{Values: map[string]*Node{
				"in":    op(g, g.Input("q"), g.Input("k"), g.Input("v"), true),
				"split": op(g, g.Input("qs"), g.Input("ks"), g.Input("vs"), false),
			}}, g.Err()
		}, 0)
		in["q"], in["k"], in["v"] = q, k, v
		in["qs"], in["ks"], in["vs"] = splitHeadsDense(q, h), splitHeadsDense(k, h), splitHeadsDense(v, h)
		res, err := mod.Forward(in)
		if err != nil {
			t.Fatal(err)
		}
		got, want := splitHeadsDense(res.Values["in"], h).Float64s(), res.Values["split"].Float64s()
		for i := range want {
			if math.Abs(got[i]-want[i]) > 1e-13 {
				t.Fatalf("%s: [%d] %g, split heads %g", name, i, got[i], want[i])
			}
		}
	}
}
