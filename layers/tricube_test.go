package layers

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
)

func TestTricubeLogK(t *testing.T) {
	// q − k = (3, 4), ‖q − k‖ = 5.
	q := []float64{1, 2}
	k := []float64{-2, -2}
	inf := math.Inf(-1)
	for _, c := range []struct {
		h, want float64
	}{
		{10, 3 * math.Log(0.875)},               // u = 1/2: 3·log(1 − 1/8)
		{20, 3 * math.Log(63.0/64)},             // u = 1/4
		{5 / math.Cbrt(0.5), 3 * math.Log(0.5)}, // u³ = 1/2
		{6.25, 3 * math.Log(1-0.512)},           // u = 0.8
		{5, inf},                                // boundary u = 1: K = 0
		{4, inf},                                // outside the support
		{0.1, inf},                              // far outside
	} {
		got := Tricube{}.LogK(q, k, c.h)
		if math.IsInf(c.want, -1) {
			if !math.IsInf(got, -1) {
				t.Errorf("h=%g: got %v, want -Inf", c.h, got)
			}
			continue
		}
		if math.Abs(got-c.want) > 1e-12 {
			t.Errorf("h=%g: got %.15g, want %.15g", c.h, got, c.want)
		}
	}
	// log K(x, x) = 0 at every bandwidth.
	x := []float64{0.3, -1.2, 4}
	for _, h := range []float64{1e-3, 0.7, 1, 50} {
		if got := (Tricube{}).LogK(x, x, h); got != 0 {
			t.Errorf("log K(x, x) at h=%g = %v, want 0", h, got)
		}
	}
	// K = (1 − u³)³ at random points, and K never exceeds Epanechnikov's support.
	rng := rand.New(rand.NewPCG(41, 42))
	for range 200 {
		a := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		b := []float64{rng.NormFloat64(), rng.NormFloat64(), rng.NormFloat64()}
		h := 0.2 + 3*rng.Float64()
		u := math.Sqrt(sqDist(a, b)) / h
		want := 0.0
		if u < 1 {
			want = math.Pow(1-u*u*u, 3)
		}
		got := math.Exp(Tricube{}.LogK(a, b, h))
		if math.Abs(got-want) > 1e-12 {
			t.Fatalf("K(%v, %v; h=%g) = %g, want (1 − u³)³ = %g", a, b, h, got, want)
		}
		if math.IsInf(Tricube{}.LogK(a, b, h), -1) != math.IsInf(Epanechnikov{}.LogK(a, b, h), -1) {
			t.Fatalf("tricube and epanechnikov supports differ at u = %g", u)
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for mismatched lengths")
		}
	}()
	Tricube{}.LogK([]float64{1}, []float64{1, 2}, 1)
}

// TestTricubeScoresMatchLogK compares Scores with LogK at several constant bandwidths, a
// bandwidth node shared by all scores, and one bandwidth per query, on points both inside
// and outside the support, including q = k.
func TestTricubeScoresMatchLogK(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	const n, tq, tk, d = 2, 3, 5, 3
	q, k := randDense(rng, 0.7, n, tq, d), randDense(rng, 0.7, n, tk, d)
	qd, kd := q.Data().([]float64), k.Data().([]float64)
	copy(kd[(1*tk+2)*d:(1*tk+3)*d], qd[(1*tq+1)*d:(1*tq+2)*d]) // k[1,2] = q[1,1]
	hq := make([]float64, n*tq)
	for i := range hq {
		hq[i] = 0.4 + 2*rng.Float64()
	}
	fixed := []float64{0.5, 1, 1.3, 2.5}
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	inputs := map[string]*tensor.Dense{
		"q": q, "k": k,
		"h":  tensor.New(tensor.WithShape(n, tq), tensor.WithBacking(hq)),
		"hs": tensor.New(tensor.WithShape(1), tensor.WithBacking([]float64{0.9})),
	}
	out := runValues(t, ps, inputs, func(g *autodiff.Graph) map[string]*autodiff.Node {
		m := map[string]*autodiff.Node{
			"query":  Tricube{}.Scores(g, g.Input("q"), g.Input("k"), Width{Node: g.Input("h")}),
			"shared": Tricube{}.Scores(g, g.Input("q"), g.Input("k"), Width{Node: g.Input("hs")}),
		}
		for _, h := range fixed {
			m[fmt.Sprint(h)] = Tricube{}.Scores(g, g.Input("q"), g.Input("k"), Fixed(h))
		}
		return m
	})
	var inside, outside int
	for p := range n {
		for i := range tq {
			for j := range tk {
				qv, kv := qd[(p*tq+i)*d:(p*tq+i+1)*d], kd[(p*tk+j)*d:(p*tk+j+1)*d]
				idx := (p*tq+i)*tk + j
				widths := map[string]float64{"query": hq[p*tq+i], "shared": 0.9}
				for _, h := range fixed {
					widths[fmt.Sprint(h)] = h
				}
				for mode, h := range widths {
					want, got := Tricube{}.LogK(qv, kv, h), out[mode][idx]
					if math.IsInf(want, -1) {
						outside++
						if !math.IsInf(got, -1) {
							t.Errorf("%s [%d,%d,%d]: score %v, LogK -Inf", mode, p, i, j, got)
						}
						continue
					}
					inside++
					// log(1 − u³) amplifies the rounding of u near the edge of the support.
					tol := 1e-12 / math.Exp(want/3)
					if math.IsNaN(got) || math.Abs(got-want) > tol {
						t.Errorf("%s [%d,%d,%d]: score %.15g, LogK %.15g", mode, p, i, j, got, want)
					}
				}
				if p == 1 && i == 1 && j == 2 && out["1"][idx] != 0 {
					t.Errorf("score at q = k: %v, want 0", out["1"][idx])
				}
			}
		}
	}
	if inside == 0 || outside == 0 {
		t.Fatalf("%d scores inside and %d outside the support; the test wants both", inside, outside)
	}
}

// TestTricubeGradientAtEdges checks the exact gradients of a tricube local mean: 0 for a
// key outside the support and for the key at q = k, finite everywhere, and 0 for a query
// that has no key inside its support.
func TestTricubeGradientAtEdges(t *testing.T) {
	// Problem 0: one query with keys at distances 0 (q = k), 0.5, 0.8, 1.5 and 1 (the
	// boundary) at h = 1. Problem 1: a query with every key outside its support.
	q := []float64{0.1, -0.2, 5, 5}
	k := []float64{
		0.1, -0.2, 0.4, 0.2, 0.1, 0.6, -1.4, -0.2, 0.1, 0.8,
		0, 0, 1, 0, 0, 1, -1, 0, 2, 2,
	}
	v := []float64{1, -2, 0.5, 3, -1, 2, 0.7, 0.1, -0.4, 1.1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10}
	inputs := map[string]*tensor.Dense{
		"q": tensor.New(tensor.WithShape(2, 1, 2), tensor.WithBacking(q)),
		"k": tensor.New(tensor.WithShape(2, 5, 2), tensor.WithBacking(k)),
		"v": tensor.New(tensor.WithShape(2, 5, 2), tensor.WithBacking(v)),
	}
	ps, _ := autodiff.NewParams(autodiff.Float64, 0)
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		y := LocalMean(g, g.Input("q"), g.Input("k"), g.Input("v"), Tricube{}, Fixed(1), LocalMeanOptions{})
		return autodiff.Outputs{Loss: projectLoss(g, y), Values: map[string]*autodiff.Node{"y": y}}, g.Err()
	}, 0)
	res, err := m.Run(inputs, autodiff.RunMode{Backward: true, InputGrads: true})
	if err != nil {
		t.Fatal(err)
	}
	y := float64sOf(res.Values["y"])
	// Weights (1 − u³)³ for u = 0, 0.5, 0.8: 1, 0.669921875, 0.140608.
	w := []float64{1, math.Pow(0.875, 3), math.Pow(1-0.512, 3)}
	for c := range 2 {
		var num, den float64
		for s, ws := range w {
			num += ws * v[s*2+c]
			den += ws
		}
		if math.Abs(y[c]-num/den) > 1e-12 {
			t.Errorf("y[0,0,%d] = %.15g, want %.15g", c, y[c], num/den)
		}
	}
	if y[2] != 0 || y[3] != 0 {
		t.Errorf("query with no key in its support: y = %v, want 0", y[2:])
	}
	grads := map[string][]float64{}
	for name, gt := range res.InputGrads {
		grads[name] = float64sOf(gt)
		for i, g := range grads[name] {
			if math.IsNaN(g) || math.IsInf(g, 0) {
				t.Errorf("d loss / d %s[%d] = %v", name, i, g)
			}
		}
	}
	gk, gv, gq := grads["k"], grads["v"], grads["q"]
	for s := range 10 {
		for c := range 2 {
			i := s*2 + c
			if (s == 0 || s >= 3) && gk[i] != 0 { // q = k, outside, on the boundary, or the empty query's keys
				t.Errorf("d loss / d k[%d,%d] = %v, want 0", s, c, gk[i])
			}
			if (s >= 3) != (gv[i] == 0) {
				t.Errorf("d loss / d v[%d,%d] = %v", s, c, gv[i])
			}
		}
	}
	for s := 1; s < 3; s++ { // inside the support, q ≠ k
		if gk[s*2] == 0 && gk[s*2+1] == 0 {
			t.Errorf("d loss / d k[%d] = 0 inside the support", s)
		}
	}
	if gq[0] == 0 && gq[1] == 0 || gq[2] != 0 || gq[3] != 0 {
		t.Errorf("d loss / d q = %v, want nonzero for query 0 and 0 for query 1", gq)
	}
}

// TestTricubeGradients gradient-checks the tricube local mean against finite differences
// (with a per-query and a kNN bandwidth, keys inside and outside the support and q = k),
// and kernel attention with the tricube kernel in every bandwidth mode.
func TestTricubeGradients(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	q := randDense(rng, 1, 2, 3, 2)
	k := randDense(rng, 1, 2, 4, 2)
	v := randDense(rng, 1, 2, 4, 3)
	qd, kd := q.Data().([]float64), k.Data().([]float64)
	copy(kd[0:2], qd[2:4])   // k[0,0] = q[0,1]
	copy(kd[10:12], qd[6:8]) // k[1,1] = q[1,0]
	hq := []float64{0.9, 1.2, 0.7, 1.5, 0.8, 1.1}
	var inside, outside int
	for p := range 2 {
		for i := range 3 {
			for j := range 4 {
				if math.IsInf(Tricube{}.LogK(qd[(p*3+i)*2:(p*3+i+1)*2], kd[(p*4+j)*2:(p*4+j+1)*2], hq[p*3+i]), -1) {
					outside++
				} else {
					inside++
				}
			}
		}
	}
	if inside < 6 || outside < 3 {
		t.Fatalf("%d pairs inside and %d outside the support; the test wants both", inside, outside)
	}
	inputs := map[string]*tensor.Dense{"q": q, "k": k, "v": v, "h": tensor.New(tensor.WithShape(2, 3), tensor.WithBacking(hq))}
	all := autodiff.GradCheck{MaxPerTensor: 100}
	checkLayer(t, "LocalMean/tricube/query-width", func(s autodiff.Scope) (forwardFunc, error) {
		return func(g *autodiff.Graph) *autodiff.Node {
			return LocalMean(g, g.Input("q"), g.Input("k"), g.Input("v"), Tricube{}, Width{Node: g.Input("h")}, LocalMeanOptions{})
		}, nil
	}, inputs, all)
	delete(inputs, "h")
	checkLayer(t, "LocalMean/tricube/fixed", func(s autodiff.Scope) (forwardFunc, error) {
		return func(g *autodiff.Graph) *autodiff.Node {
			return LocalMean(g, g.Input("q"), g.Input("k"), g.Input("v"), Tricube{}, Fixed(1), LocalMeanOptions{Mask: autodiff.Mask{Causal: true, Offset: 1}})
		}, nil
	}, inputs, all)
	checkLayer(t, "LocalMean/tricube*window/knn", func(s autodiff.Scope) (forwardFunc, error) {
		return func(g *autodiff.Graph) *autodiff.Node {
			h := KNNWidth(g, g.Input("q"), g.Input("k"), nil, 2, 0.1, autodiff.Mask{}, 1)
			return LocalMean(g, g.Input("q"), g.Input("k"), g.Input("v"), Product{Content: Tricube{}, Position: Box{Window: 2}}, h, LocalMeanOptions{})
		}, nil
	}, inputs, all)

	x := randDense(rng, 1, 2, 3, 4)
	mem := randDense(rng, 1, 2, 4, 3)
	keyMask := []float64{1, 1, 1, 0, 1, 1, 0, 0}
	for i, mode := range bandwidthModes {
		cross := i%2 == 1
		inputs := map[string]*tensor.Dense{"x": x}
		cfg := AttentionConfig{Dim: 4, Heads: 2, Kernel: Tricube{}, Bandwidth: BandwidthConfig{Mode: mode, K: 2, Min: 0.05}, Causal: !cross}
		if cross {
			cfg.KVDim = 3
			inputs["mem"] = mem
		}
		checkLayer(t, fmt.Sprintf("tricube/%v/cross=%v", mode, cross), func(s autodiff.Scope) (forwardFunc, error) {
			a, err := NewKernelAttention(s, cfg)
			return func(g *autodiff.Graph) *autodiff.Node {
				if cross {
					return a.Attend(g, g.Input("x"), g.Input("mem"), AttendOptions{KeyMask: g.ConstTensor([]int{2, 4}, keyMask)})
				}
				return a.Forward(g, g.Input("x"))
			}, err
		}, inputs, autodiff.GradCheck{MaxPerTensor: 3})
	}
}

func TestTricubeSpec(t *testing.T) {
	for spec, want := range map[string]ContentKernel{
		"tricube":                    Tricube{},
		"tricube * window(4)":        Product{Content: Tricube{}, Position: Box{Window: 4}},
		"tricube * causal":           Product{Content: Tricube{}, Position: Box{Causal: true}},
		"mixture(tricube, gaussian)": Mixture{Kernels: []ContentKernel{Tricube{}, Gaussian{}}},
	} {
		k, err := ParseKernel(spec)
		if err != nil {
			t.Errorf("ParseKernel(%q): %v", spec, err)
			continue
		}
		if !reflect.DeepEqual(k, want) {
			t.Errorf("ParseKernel(%q) = %#v, want %#v", spec, k, want)
		}
		if got := want.Name(); got != spec {
			t.Errorf("%#v.Name() = %q, want %q", want, got, spec)
		}
		b, err := json.Marshal(struct{ K KernelSpec }{KernelSpec{Kernel: k}})
		if err != nil {
			t.Fatal(err)
		}
		var back struct{ K KernelSpec }
		if err := json.Unmarshal(b, &back); err != nil || !reflect.DeepEqual(back.K.Kernel, want) {
			t.Errorf("JSON %s read back as %#v, %v", b, back.K.Kernel, err)
		}
	}
	for spec, canonical := range map[string]string{
		"window(4) * tricube":         "tricube * window(4)",
		"product(tricube, window(4))": "tricube * window(4)",
		"  TriCube ":                  "tricube",
	} {
		k, err := ParseKernel(spec)
		if err != nil || k.Name() != canonical {
			t.Errorf("ParseKernel(%q) = %v, %v; want %q", spec, k, err, canonical)
		}
	}
	b, err := Tricube{}.MarshalText()
	if err != nil || string(b) != "tricube" {
		t.Errorf("MarshalText: %q, %v", b, err)
	}
	var tc Tricube
	if err := tc.UnmarshalText([]byte("tricube")); err != nil {
		t.Errorf("UnmarshalText(tricube): %v", err)
	}
	if err := tc.UnmarshalText([]byte("laplacian")); err == nil || !strings.Contains(err.Error(), "not a layers.Tricube") {
		t.Errorf("Tricube.UnmarshalText(laplacian): %v", err)
	}
	if _, err := ParseKernel("tricube(2)"); err == nil || !strings.Contains(err.Error(), "tricube takes no arguments") {
		t.Errorf("ParseKernel(tricube(2)): %v", err)
	}
	if !slices.Contains(KernelNames(), "tricube") {
		t.Errorf("KernelNames() = %v, want tricube among them", KernelNames())
	}
	for _, f := range KernelForms() {
		if f.Name == "tricube" && (f.Doc == "" || f.Syntax != "tricube" || f.MinArgs != 0 || f.MaxArgs != 0) {
			t.Errorf("tricube form: %+v", f)
		}
	}
}

// TestTricubeAttentionTrains fits a tricube attention layer with per-head bandwidths to a
// fixed target with plain gradient descent: outputs and gradients stay finite, the
// bandwidths stay positive and move, and the loss falls.
func TestTricubeAttentionTrains(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	const b, tt, dim = 2, 5, 4
	x := randDense(rng, 1, b, tt, dim)
	target := randDense(rng, 0.5, b, tt, dim)
	ps, err := autodiff.NewParams(autodiff.Float64, 7)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewKernelAttention(ps.Scope("attn"), AttentionConfig{Dim: dim, Heads: 2, Causal: true, Kernel: Tricube{},
		Bandwidth: BandwidthConfig{Mode: BandwidthHead, Init: 2}})
	if err != nil {
		t.Fatal(err)
	}
	rho := ps.Get("attn.bandwidth.rho")
	if rho == nil || rho.Size() != 2 {
		t.Fatalf("attn.bandwidth.rho = %v, want 2 per-head parameters (have %v)", rho, ps.SortedNames())
	}
	m := autodiff.NewModel(ps, func(g *autodiff.Graph) (autodiff.Outputs, error) {
		y := a.Forward(g, g.Input("x"))
		d := g.Sub(y, g.Input("target"))
		return autodiff.Outputs{Loss: g.Scale(g.Sum(g.Mul(d, d)), 1.0/(b*tt*dim)), Values: map[string]*autodiff.Node{"y": y}}, g.Err()
	}, 1)
	inputs := map[string]*tensor.Dense{"x": x, "target": target}
	h0 := slices.Clone(a.Bandwidths()["attn.bandwidth"])
	var first, last float64
	const steps, lr = 300, 0.1
	for step := range steps {
		ps.ZeroGrad()
		res, err := m.ForwardBackward(inputs)
		if err != nil {
			t.Fatal(err)
		}
		if math.IsNaN(res.Loss) || math.IsInf(res.Loss, 0) {
			t.Fatalf("step %d: loss %v", step, res.Loss)
		}
		for i, v := range float64sOf(res.Values["y"]) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				t.Fatalf("step %d: y[%d] = %v", step, i, v)
			}
		}
		if step == 0 {
			first = res.Loss
		}
		last = res.Loss
		for _, p := range ps.List() {
			for i := range p.Size() {
				gi := p.GradAt(i)
				if math.IsNaN(gi) || math.IsInf(gi, 0) {
					t.Fatalf("step %d: grad %s[%d] = %v", step, p.Name(), i, gi)
				}
				p.SetAt(i, p.At(i)-lr*gi)
			}
		}
	}
	h1 := a.Bandwidths()["attn.bandwidth"]
	for i, h := range h1 {
		if !(h > 0) || math.IsInf(h, 0) {
			t.Errorf("bandwidth %d = %v after training", i, h)
		}
	}
	if slices.Equal(h0, h1) {
		t.Errorf("per-head bandwidths did not move: %v", h1)
	}
	if !(last < 0.7*first) {
		t.Errorf("loss %g → %g after %d steps, want it to fall by 30%%", first, last, steps)
	}
	t.Logf("loss %.4g → %.4g; bandwidths %v → %v", first, last, h0, h1)
}
