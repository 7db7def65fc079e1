package autodiff

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"gorgonia.org/tensor"
)

// TestLocalMeanDropoutGradients checks the gradients of the dropped local mean in
// training (every mask case of LocalMean), with the masks replayed exactly.
func TestLocalMeanDropoutGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, c := range lmCases {
		s, v, km, _ := c.tensors(rng)
		in := map[string]*tensor.Dense{}
		if km != nil {
			in["km"] = km
		}
		for _, p := range []float64{0.25, 0.6} {
			checkOp(t, c.name, map[string]*tensor.Dense{"s": s, "v": v}, in, func(g *Graph, n map[string]*Node) *Node {
				// Two dropped means of the same scores: the masks must differ and replay.
				return g.Add(g.LocalMeanDropout(n["s"], n["v"], n["km"], c.mask, p), g.LocalMeanDropout(n["s"], n["v"], n["km"], c.mask, p))
			}, GradCheck{ATol: 1e-7, RTol: 1e-5, Train: true})
		}
	}
}

// TestLocalMeanDropoutWeights reads the dropped weights through one-hot values (v = I,
// so m_t is the weight row): each is 0 or LocalMean's weight/(1−p), about p of the
// visible ones are 0, and in evaluation the op is LocalMean.
func TestLocalMeanDropoutWeights(t *testing.T) {
	const b, h, tq, tk, p = 3, 4, 16, 16, 0.3
	rng := rand.New(rand.NewPCG(1, 2))
	s := randTensor(rng, 1, b, h, tq, tk)
	eye := make([]float64, b*h*tk*tk)
	for i := range b * h {
		for j := range tk {
			eye[(i*tk+j)*tk+j] = 1
		}
	}
	v := tensor.New(tensor.WithShape(b, h, tk, tk), tensor.WithBacking(eye))
	ps, _ := NewParams(Float64, 1)
	m := NewModel(ps, func(g *Graph) (Outputs, error) {
		si, vi := g.Input("s"), g.Input("v")
		w := g.LocalMean(si, vi, nil, Mask{Causal: true})
		d := g.LocalMeanDropout(si, vi, nil, Mask{Causal: true}, p)
		return Outputs{Values: map[string]*Node{"w": w, "d": d}}, g.Err()
	}, 7)
	in := map[string]*tensor.Dense{"s": s, "v": v}
	for _, train := range []bool{true, false} {
		res, err := m.Run(in, RunMode{Train: train})
		if err != nil {
			t.Fatal(err)
		}
		w, d := floats(res.Values["w"]), floats(res.Values["d"])
		var visible, dropped int
		for i := range w {
			if w[i] == 0 {
				if d[i] != 0 {
					t.Fatalf("train %v: weight %d is 0 (hidden), dropped weight %g", train, i, d[i])
				}
				continue
			}
			visible++
			want := w[i]
			if train {
				want /= 1 - p
			}
			switch {
			case d[i] == 0 && train:
				dropped++
			case math.Abs(d[i]-want) > 1e-12:
				t.Fatalf("train %v: weight %d = %g, want 0 or %g", train, i, d[i], want)
			}
		}
		frac := float64(dropped) / float64(visible)
		if train && math.Abs(frac-p) > 0.05 || !train && dropped != 0 {
			t.Errorf("train %v: %d of %d visible weights dropped (%.3f), want about %g", train, dropped, visible, frac, p)
		}
	}
}

// attentionDropRef is AttentionDropout on the general path: attentionRef's head split and
// scores, then LocalMeanDropout, whose mask for the same draw of the generator is
// AttentionDropout's.
func attentionDropRef(g *Graph, q, k, v, keyMask *Node, heads int, scale float64, mask Mask, p float64) *Node {
	split := func(x *Node) *Node {
		s := x.Shape()
		return g.Transpose(g.Reshape(x, []int{s[0], s[1], heads, s[2] / heads}), 0, 2, 1, 3) // [B, H, T, d]
	}
	qs, ks, vs := q.Shape(), k.Shape(), v.Shape()
	qh := g.Reshape(split(q), []int{qs[0] * heads, qs[1], qs[2] / heads})
	kh := g.Reshape(split(k), []int{ks[0] * heads, ks[1], ks[2] / heads})
	s := g.Reshape(g.Scale(g.BatchedMatMul(qh, kh, false, true), scale), []int{qs[0], heads, qs[1], ks[1]})
	m := g.LocalMeanDropout(s, split(v), keyMask, mask, p) // [B, H, Tq, dv]
	return g.Reshape(g.Transpose(m, 0, 2, 1, 3), []int{qs[0], qs[1], vs[2]})
}

// runTrainGrads runs f once in training mode, with the backward pass, on a model whose
// generator starts from seed, and returns its output and the parameters' gradients.
func runTrainGrads(t *testing.T, dt Dtype, params, inputs map[string]*tensor.Dense, f func(g *Graph, p map[string]*Node) *Node,
	seed uint64) ([]float64, map[string][]float64) {
	t.Helper()
	var names []string
	in := map[string]*tensor.Dense{}
	for n, v := range inputs {
		names = append(names, n)
		in[n] = castTo(v, dt)
	}
	m, byName := newTestModel(t, dt, params, names, f, seed)
	res, err := m.Run(in, RunMode{Train: true, Backward: true})
	if err != nil {
		t.Fatal(err)
	}
	grads := map[string][]float64{}
	for n, p := range byName {
		v := make([]float64, p.Size())
		for i := range v {
			v[i] = p.GradAt(i)
		}
		grads[n] = v
	}
	return floats(res.Values["out"]), grads
}

// attnDropInputs returns the tensors of an attention case and a build of op on them.
func attnDropInputs(rng *rand.Rand, b, tq, tk, heads, dk, dv int, keys bool) (params, inputs map[string]*tensor.Dense) {
	params = map[string]*tensor.Dense{
		"q": randTensor(rng, 1, b, tq, heads*dk),
		"k": randTensor(rng, 1, b, tk, heads*dk),
		"v": randTensor(rng, 1, b, tk, heads*dv),
	}
	if keys {
		inputs = map[string]*tensor.Dense{"km": keyMaskTensor(b, tk)}
	}
	return params, inputs
}

// TestAttentionDropoutGradients gradient-checks AttentionDropout in training (float64,
// the mask a function of the generator's draw, which the check replays) under every
// mask case of Attention, and KernelAttention and TiledLocalMean with Dropout on both
// layouts, with bandwidths per head and per query, a bias table, padding and a
// mixture's parameters.
func TestAttentionDropoutGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 1))
	for _, c := range attnCases() {
		if c.tq > 10 {
			continue
		}
		params, inputs := attnDropInputs(rng, c.b, c.tq, c.tk, c.heads, c.dk, c.dv, c.keys)
		checkOp(t, "AttentionDropout "+c.name, params, inputs, func(g *Graph, p map[string]*Node) *Node {
			// Two dropped attentions of the same inputs: the masks must differ and replay.
			return g.Add(g.AttentionDropout(p["q"], p["k"], p["v"], p["km"], c.heads, 0.7, c.mask, 0.3),
				g.AttentionDropout(p["q"], p["k"], p["v"], p["km"], c.heads, 0.7, c.mask, 0.5))
		}, GradCheck{Train: true})
	}
	for _, c := range tiledCases {
		switch c.name {
		case "expCausalBias", "gaussPadHollow", "laplaceCausalRowsBias", "mixLaplaceEpanExpPadBias", "gaussHeadsCausalBias":
		default:
			continue
		}
		params, inputs := c.tensors(4)
		drop := func(op pairOp) pairOp {
			return func(g *Graph, kern PairKernel, q, k, v *Node, opt TiledOptions) *Node {
				opt.Dropout = 0.4
				return op(g, kern, q, k, v, opt)
			}
		}
		for name, op := range map[string]pairOp{"KernelAttention": drop((*Graph).KernelAttention), "TiledLocalMean": drop((*Graph).TiledLocalMean)} {
			checkOp(t, name+" dropout "+c.name, params, inputs, c.buildWith(op), GradCheck{MaxPerTensor: 12, RTol: 1e-5, ATol: 1e-7, Train: true})
			checkOp(t, name+" dropout "+c.name+"/features", params, inputs, c.buildInFeaturesWith(op), GradCheck{MaxPerTensor: 6, RTol: 1e-5, ATol: 1e-7, Train: true})
		}
	}
}

// TestAttentionDropoutMatchesGeneral: in training, AttentionDropout computes what the
// general path computes with the same draw (head split, scores, LocalMeanDropout, whose
// mask is the same hash of the same flat indices), output and every gradient, in
// float64 and float32, over the mask cases and lengths of several row blocks; so does
// KernelAttention with Dropout (exponential kernel, both layouts) beside LocalMeanDropout
// of its explicit scores.
func TestAttentionDropoutMatchesGeneral(t *testing.T) {
	rng := rand.New(rand.NewPCG(42, 1))
	compare := func(name string, dt Dtype, got, want []float64, tol float64) {
		t.Helper()
		var scale float64
		for _, w := range want {
			scale = max(scale, math.Abs(w))
		}
		for i := range want {
			if d := math.Abs(got[i] - want[i]); !(d <= tol*(1+scale)) {
				t.Errorf("%s %v: [%d] = %v, general path %v", name, dt, i, got[i], want[i])
				return
			}
		}
	}
	const p = 0.35
	for _, c := range attnCases() {
		params, inputs := attnDropInputs(rng, c.b, c.tq, c.tk, c.heads, c.dk, c.dv, c.keys)
		fused := func(g *Graph, n map[string]*Node) *Node {
			return g.AttentionDropout(n["q"], n["k"], n["v"], n["km"], c.heads, 0.6, c.mask, p)
		}
		general := func(g *Graph, n map[string]*Node) *Node {
			return attentionDropRef(g, n["q"], n["k"], n["v"], n["km"], c.heads, 0.6, c.mask, p)
		}
		undropped := func(g *Graph, n map[string]*Node) *Node {
			return g.Attention(n["q"], n["k"], n["v"], n["km"], c.heads, 0.6, c.mask)
		}
		for _, dt := range []Dtype{Float64, Float32} {
			tol := 1e-10
			if dt == Float32 {
				tol = 2e-5
			}
			of, gf := runTrainGrads(t, dt, params, inputs, fused, 17)
			og, gg := runTrainGrads(t, dt, params, inputs, general, 17)
			compare("AttentionDropout "+c.name+" output", dt, of, og, tol)
			for n := range gg {
				compare("AttentionDropout "+c.name+" gradient of "+n, dt, gf[n], gg[n], tol)
			}
			if dt == Float64 { // the test can fail: with dropout the output is not the undropped one
				ou, _ := runTrainGrads(t, dt, params, inputs, undropped, 17)
				var d float64
				for i := range ou {
					d = max(d, math.Abs(ou[i]-of[i]))
				}
				if d < 1e-3 {
					t.Errorf("AttentionDropout %s: differs from Attention by only %g", c.name, d)
				}
			}
		}
	}
	// KernelAttention with the exponential kernel, h = 1.5, against LocalMeanDropout of
	// the scores q·k/h.
	const b, h, tq, d = 2, 3, 45, 3
	params := map[string]*tensor.Dense{
		"q": randTensor(rng, 1, b*h, tq, d), "k": randTensor(rng, 1, b*h, tq, d), "v": randTensor(rng, 1, b*h, tq, 2),
	}
	c := tiledCase{kern: testExp{}, b: b, h: h, tq: tq, tk: tq, mask: Mask{Causal: true}}
	opt := func(n map[string]*Node) TiledOptions {
		return TiledOptions{BandwidthValue: 1.5, Heads: h, Mask: c.mask, Dropout: p}
	}
	split := func(g *Graph, n map[string]*Node) *Node {
		return g.KernelAttention(testExp{}, n["q"], n["k"], n["v"], opt(n))
	}
	features := func(g *Graph, n map[string]*Node) *Node {
		var m *Node
		return c.splitOutput(g, c.mergedOp(g, n, func(g *Graph, kern PairKernel, q, k, v *Node, o TiledOptions) *Node {
			o.Bandwidth, o.BandwidthValue, o.Dropout = nil, 1.5, p
			return g.KernelAttention(kern, q, k, v, o)
		}, &m))
	}
	general := func(g *Graph, n map[string]*Node) *Node {
		s := g.Reshape(g.Scale(g.BatchedMatMul(n["q"], n["k"], false, true), 1/1.5), []int{b, h, tq, tq})
		m := g.LocalMeanDropout(s, g.Reshape(n["v"], []int{b, h, tq, 2}), nil, c.mask, p)
		return g.Reshape(m, []int{b * h, tq, 2})
	}
	for _, dt := range []Dtype{Float64, Float32} {
		tol := 1e-10
		if dt == Float32 {
			tol = 2e-5
		}
		og, gg := runTrainGrads(t, dt, params, nil, general, 23)
		for name, f := range map[string]func(*Graph, map[string]*Node) *Node{"split": split, "features": features} {
			of, gf := runTrainGrads(t, dt, params, nil, f, 23)
			compare("KernelAttention dropout "+name+" output", dt, of, og, tol)
			for n := range gg {
				compare("KernelAttention dropout "+name+" gradient of "+n, dt, gf[n], gg[n], tol)
			}
		}
	}
}

// TestAttentionDropoutStatistics reads AttentionDropout's dropped weights through
// one-hot values (v = I per head, so the output row of a query is its weight row) over
// many forward passes: each dropped weight is 0 or the undropped weight/(1−p), about p
// of the visible ones are 0 in every head, the masks of successive passes differ, and
// the mean over the passes of the output with random values is about the undropped one.
// KernelAttention with Dropout is checked the same way.
func TestAttentionDropoutStatistics(t *testing.T) {
	const b, heads, tq, tk, p, passes = 2, 2, 24, 24, 0.3, 200
	rng := rand.New(rand.NewPCG(43, 1))
	q, k := randTensor(rng, 1, b, tq, heads*3), randTensor(rng, 1, b, tk, heads*3)
	eye := make([]float64, b*tk*heads*tk) // v[b, s, h·tk + s] = 1
	for bi := range b {
		for s := range tk {
			for h := range heads {
				eye[(bi*tk+s)*heads*tk+h*tk+s] = 1
			}
		}
	}
	v := tensor.New(tensor.WithShape(b, tk, heads*tk), tensor.WithBacking(eye))
	vr := randTensor(rng, 1, b, tk, heads*2)
	mask := Mask{Causal: true}
	ops := map[string]func(g *Graph, q, k, v *Node, p float64) *Node{
		"AttentionDropout": func(g *Graph, q, k, v *Node, p float64) *Node {
			return g.AttentionDropout(q, k, v, nil, heads, 0.5, mask, p)
		},
		"KernelAttention": func(g *Graph, q, k, v *Node, p float64) *Node {
			return g.KernelAttention(testExp{}, q, k, v, TiledOptions{BandwidthValue: 2, Heads: heads, Mask: mask, HeadsInFeatures: true, Dropout: p})
		},
	}
	for name, op := range ops {
		ps, _ := NewParams(Float64, 1)
		m := NewModel(ps, func(g *Graph) (Outputs, error) {
			qi, ki := g.Input("q"), g.Input("k")
			return Outputs{Values: map[string]*Node{
				"w": op(g, qi, ki, g.Input("v"), 0), "d": op(g, qi, ki, g.Input("v"), p),
				"y": op(g, qi, ki, g.Input("vr"), 0), "yd": op(g, qi, ki, g.Input("vr"), p),
			}}, g.Err()
		}, 9)
		in := map[string]*tensor.Dense{"q": q, "k": k, "v": v, "vr": vr}
		var visible, dropped, changed int
		perHead := make([][2]int, heads) // visible, dropped
		var mean, undropped, prev []float64
		for range passes {
			res, err := m.Run(in, RunMode{Train: true})
			if err != nil {
				t.Fatal(err)
			}
			w, d := floats(res.Values["w"]), floats(res.Values["d"])
			for i := range w {
				h := (i % (heads * tk)) / tk
				if w[i] == 0 {
					if d[i] != 0 {
						t.Fatalf("%s: hidden weight %d dropped to %g", name, i, d[i])
					}
					continue
				}
				visible++
				perHead[h][0]++
				switch {
				case d[i] == 0:
					dropped++
					perHead[h][1]++
				case math.Abs(d[i]-w[i]/(1-p)) > 1e-12:
					t.Fatalf("%s: weight %d = %g, want 0 or %g", name, i, d[i], w[i]/(1-p))
				}
				if prev != nil && (d[i] == 0) != (prev[i] == 0) {
					changed++
				}
			}
			prev = d
			y, yd := floats(res.Values["y"]), floats(res.Values["yd"])
			if mean == nil {
				mean, undropped = make([]float64, len(yd)), y
			}
			for i, x := range yd {
				mean[i] += x / passes
			}
		}
		if frac := float64(dropped) / float64(visible); math.Abs(frac-p) > 0.01 {
			t.Errorf("%s: %d of %d visible weights dropped (%.4f), want about %g", name, dropped, visible, frac, p)
		}
		for h, c := range perHead {
			if frac := float64(c[1]) / float64(c[0]); math.Abs(frac-p) > 0.02 {
				t.Errorf("%s: head %d: %.4f of its weights dropped, want about %g", name, h, frac, p)
			}
		}
		if want := 2 * p * (1 - p) * float64(visible) * (passes - 1) / passes; math.Abs(float64(changed)-want) > 0.05*want {
			t.Errorf("%s: %d weights changed between passes, want about %.0f (independent masks)", name, changed, want)
		}
		// The mean of 200 passes lies within 0.13 of the undropped output here (|y| up to
		// 1.9; the early queries, of few keys, vary most); a mask that forgot the factor
		// 1/(1−p) would miss by 30 % of |y|, 0.56.
		var worst, size float64
		for i := range mean {
			worst = max(worst, math.Abs(mean[i]-undropped[i]))
			size = max(size, math.Abs(undropped[i]))
		}
		if worst > 0.1*size+0.05 {
			t.Errorf("%s: the mean output over %d passes is %g from the undropped output (|y| up to %g)", name, passes, worst, size)
		}
	}
}

// TestAttentionDropoutZero: with p = 0, and in evaluation mode with any p, AttentionDropout
// and KernelAttention with Dropout are the undropped ops themselves, bit for bit, output
// and gradients; p out of [0, 1) is refused with an error naming it.
func TestAttentionDropoutZero(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 1))
	params, inputs := attnDropInputs(rng, 2, 40, 40, 2, 3, 2, true)
	for _, train := range []bool{true, false} {
		mode := RunMode{Train: train, Backward: true}
		run := func(f func(g *Graph, n map[string]*Node) *Node) ([]float64, map[string][]float64) {
			m, byName := newTestModel(t, Float32, params, []string{"km"}, f, 5)
			res, err := m.Run(map[string]*tensor.Dense{"km": castTo(inputs["km"], Float32)}, mode)
			if err != nil {
				t.Fatal(err)
			}
			grads := map[string][]float64{}
			for n, p := range byName {
				for i := range p.Size() {
					grads[n] = append(grads[n], p.GradAt(i))
				}
			}
			return floats(res.Values["out"]), grads
		}
		for _, p := range []float64{0, 0.5} {
			if train && p > 0 {
				continue
			}
			want, wantG := run(func(g *Graph, n map[string]*Node) *Node {
				return g.Attention(n["q"], n["k"], n["v"], n["km"], 2, 0.5, Mask{Causal: true})
			})
			got, gotG := run(func(g *Graph, n map[string]*Node) *Node {
				return g.AttentionDropout(n["q"], n["k"], n["v"], n["km"], 2, 0.5, Mask{Causal: true}, p)
			})
			wantK, wantKG := run(func(g *Graph, n map[string]*Node) *Node {
				return g.KernelAttention(testGauss{}, n["q"], n["k"], n["v"], TiledOptions{BandwidthValue: 2, Heads: 2, KeyMask: n["km"], HeadsInFeatures: true})
			})
			gotK, gotKG := run(func(g *Graph, n map[string]*Node) *Node {
				return g.KernelAttention(testGauss{}, n["q"], n["k"], n["v"], TiledOptions{BandwidthValue: 2, Heads: 2, KeyMask: n["km"], HeadsInFeatures: true, Dropout: p})
			})
			for _, c := range []struct {
				name      string
				got, want []float64
			}{{"AttentionDropout", got, want}, {"KernelAttention", gotK, wantK},
				{"AttentionDropout dq", gotG["q"], wantG["q"]}, {"KernelAttention dk", gotKG["k"], wantKG["k"]},
				{"AttentionDropout dv", gotG["v"], wantG["v"]}, {"KernelAttention dv", gotKG["v"], wantKG["v"]}} {
				for i := range c.want {
					if math.Float64bits(c.got[i]) != math.Float64bits(c.want[i]) {
						t.Fatalf("train %v, p %g: %s[%d] = %v, undropped %v", train, p, c.name, i, c.got[i], c.want[i])
					}
				}
			}
		}
	}
	for _, p := range []float64{-0.1, 1, math.NaN()} {
		ps, _ := NewParams(Float64, 1)
		for name, f := range map[string]func(g *Graph, q *Node) *Node{
			"AttentionDropout: p = ": func(g *Graph, q *Node) *Node { return g.AttentionDropout(q, q, q, nil, 1, 1, Mask{}, p) },
			"KernelAttention: Dropout = ": func(g *Graph, q *Node) *Node {
				return g.KernelAttention(testExp{}, q, q, q, TiledOptions{BandwidthValue: 1, Dropout: p})
			},
		} {
			m := NewModel(ps, func(g *Graph) (Outputs, error) {
				return Outputs{Values: map[string]*Node{"y": f(g, g.Input("q"))}}, g.Err()
			}, 1)
			_, err := m.Run(map[string]*tensor.Dense{"q": randTensor(rng, 1, 1, 2, 2)}, RunMode{Train: true})
			if want := name + fmt.Sprint(p); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("p = %g: %v, want an error containing %q", p, err, want)
			}
		}
	}
}

// TestTiledDropoutMatchesKernelAttention: with Dropout, in training, TiledLocalMean
// computes what KernelAttention computes from the same draw (the same mask, regenerated
// tile by tile), output and every gradient, on both layouts, for every case of the tiled
// tests (every kernel and mask, several tiles), in float64 and float32 (the float32
// rows of the kernels and mixtures).
func TestTiledDropoutMatchesKernelAttention(t *testing.T) {
	drop := func(op pairOp) pairOp {
		return func(g *Graph, kern PairKernel, q, k, v *Node, opt TiledOptions) *Node {
			opt.Dropout = 0.3
			return op(g, kern, q, k, v, opt)
		}
	}
	for _, c := range tiledCases {
		params, inputs := c.tensors(5)
		for _, dt := range []Dtype{Float64, Float32} {
			tol := 1e-10
			if dt == Float32 {
				tol = 1e-4
			}
			for layout, build := range map[string]func(pairOp) func(*Graph, map[string]*Node) *Node{"split": c.buildWith, "features": c.buildInFeaturesWith} {
				ow, gw := runTrainGrads(t, dt, params, inputs, build(drop((*Graph).KernelAttention)), 31)
				og, gg := runTrainGrads(t, dt, params, inputs, build(drop((*Graph).TiledLocalMean)), 31)
				name := fmt.Sprintf("%s %v %s", c.name, dt, layout)
				if d := maxDiff(og, ow); !(d <= tol) {
					t.Errorf("%s: output differs from KernelAttention's by %g", name, d)
				}
				for n := range gw {
					if d := maxDiff(gg[n], gw[n]); !(d <= tol) {
						t.Errorf("%s: gradient of %s differs from KernelAttention's by %g", name, n, d)
					}
				}
			}
		}
	}
}

// maxDiff returns the largest |a−b| relative to 1 + the largest |b|.
func maxDiff(a, b []float64) float64 {
	var d, m float64
	for i := range b {
		d, m = math.Max(d, math.Abs(a[i]-b[i])), math.Max(m, math.Abs(b[i]))
	}
	return d / (1 + m)
}
