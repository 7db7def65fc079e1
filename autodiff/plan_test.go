package autodiff

import (
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"gorgonia.org/tensor"
)

// planNet is a small GPT-like network with every kind of op a buffer plan has to get
// right: an embedding, pre-LN blocks whose attention is one of several kernels (with
// state between its passes), GELU, dropout, residual sums (gorgonia's Adds), a head,
// cross-entropy, and optionally the attention weights as an output (a tap that reads a
// kernel's state after its forward pass).
type planNet struct {
	ps      *Params
	attn    string // "attention", "dropout", "kernel", "tiled", "localmean"
	weights bool   // output layer 0's attention weights
	t       int    // sequence length
}

const planV, planD, planH, planL, planF = 7, 8, 2, 2, 16

func newPlanNet(t *testing.T, dt Dtype, attn string, weights bool, seqLen int) *planNet {
	t.Helper()
	ps, err := NewParams(dt, 11)
	if err != nil {
		t.Fatal(err)
	}
	n := &planNet{ps: ps, attn: attn, weights: weights, t: seqLen}
	add := func(name string, shape ...int) {
		if _, err := ps.Root().New(name, shape, Normal(0, 0.5)); err != nil {
			t.Fatal(err)
		}
	}
	add("emb", planV, planD)
	for l := range planL {
		for _, p := range []struct {
			name  string
			shape []int
		}{{"ln1w", []int{planD}}, {"ln1b", []int{planD}}, {"wqkv", []int{3 * planD, planD}}, {"bqkv", []int{3 * planD}},
			{"wo", []int{planD, planD}}, {"bo", []int{planD}}, {"ln2w", []int{planD}}, {"ln2b", []int{planD}},
			{"w1", []int{planF, planD}}, {"b1", []int{planF}}, {"w2", []int{planD, planF}}, {"b2", []int{planD}}} {
			add(fmt.Sprintf("%d.%s", l, p.name), p.shape...)
		}
	}
	add("lnw", planD)
	add("lnb", planD)
	add("head", planV, planD)
	add("headb", planV)
	return n
}

func (n *planNet) model() *Model {
	return NewModel(n.ps, func(g *Graph) (Outputs, error) {
		p := func(name string) *Node { return g.Param(n.ps.Get(name)) }
		ids, noise := g.Input("ids"), g.Input("x")
		if g.Err() != nil {
			return Outputs{}, g.Err()
		}
		b := ids.Shape()[0]
		x := g.Add(g.Reshape(g.Gather(p("emb"), ids), []int{b, n.t, planD}), noise)
		out := Outputs{Values: map[string]*Node{}}
		var first *Node // layer 0's attention
		for l := range planL {
			q := func(name string) *Node { return p(fmt.Sprintf("%d.%s", l, name)) }
			h := g.LayerNorm(x, q("ln1w"), q("ln1b"), 1e-5)
			qkv := g.Linear(h, q("wqkv"), q("bqkv"))
			qq, kk, vv := g.Slice(qkv, 2, 0, planD), g.Slice(qkv, 2, planD, 2*planD), g.Slice(qkv, 2, 2*planD, 3*planD)
			causal := Mask{Causal: true}
			var a *Node
			switch n.attn {
			case "attention":
				a = g.Attention(qq, kk, vv, nil, planH, 0.5, causal)
			case "dropout":
				a = g.AttentionDropout(qq, kk, vv, nil, planH, 0.5, causal, 0.2)
			case "kernel":
				a = g.KernelAttention(testGauss{}, qq, kk, vv, TiledOptions{BandwidthValue: 2, Heads: planH, Mask: causal, HeadsInFeatures: true})
			case "tiled":
				a = g.TiledLocalMean(testExp{}, qq, kk, vv, TiledOptions{BandwidthValue: 2, Heads: planH, Mask: causal, HeadsInFeatures: true})
			case "localmean":
				scores := g.BatchedMatMul(qq, kk, false, true)
				a = g.LocalMean(scores, vv, nil, causal)
			}
			if l == 0 {
				first = a
			}
			x = g.Add(x, g.Linear(a, q("wo"), q("bo")))
			f := g.GELU(g.Linear(g.LayerNorm(x, q("ln2w"), q("ln2b"), 1e-5), q("w1"), q("b1")), GELUTanh)
			x = g.Add(x, g.Linear(g.Dropout(f, 0.1), q("w2"), q("b2")))
		}
		logits := g.Reshape(g.Linear(g.LayerNorm(x, p("lnw"), p("lnb"), 1e-5), p("head"), p("headb")), []int{b * n.t, planV})
		out.Values["logits"] = logits
		if n.weights {
			// made last, so that it runs after ops that could reuse the weights' buffer
			w, vis := g.LocalMeanWeights(first)
			out.Values["weights"], out.Values["visible"] = w, vis
		}
		out.Loss = g.CrossEntropy(logits, g.Input("targets"), -1)
		out.Batch = &Batch{Examples: b, LossItems: CountNotEqual("targets", -1)}
		return out, g.Err()
	}, 5)
}

func planInputs(dt Dtype, b, t int, seed uint64) map[string]*tensor.Dense {
	rng := rand.New(rand.NewPCG(seed, 3))
	ids := make([]int, b*t)
	tg := make([]int, b*t)
	for i := range ids {
		ids[i], tg[i] = rng.IntN(planV), rng.IntN(planV)
		if rng.IntN(4) == 0 {
			tg[i] = -1
		}
	}
	return map[string]*tensor.Dense{
		"ids":     tensor.New(tensor.WithShape(b, t), tensor.WithBacking(ids)),
		"targets": tensor.New(tensor.WithShape(b*t), tensor.WithBacking(tg)),
		"x":       castTo(f32Round(randTensor(rng, 0.1, b, t, planD)), dt),
	}
}

// TestBufferPlanSameBits trains the network a few steps with buffer plans and without,
// over its attention kernels, both dtypes, a batch run whole and in parts, and the run
// modes, and wants the same bits: losses, outputs, input gradients and every
// parameter's gradient, step after step (the parameters move between steps, so a
// buffer that a later op overwrote too early shows).
func TestBufferPlanSameBits(t *testing.T) {
	defer func(v bool) { usePlan = v }(usePlan)
	modes := []RunMode{
		{Train: true, Backward: true},
		{Train: true, Backward: true, InputGrads: true},
		{Backward: true, Taps: true},
		{Taps: true},
		{},
	}
	type net struct {
		attn string
		t    int
	}
	// T = 70 spans three row blocks, so that causal masks leave key blocks unwritten
	nets := []net{{"attention", 5}, {"attention", 70}, {"dropout", 5}, {"dropout", 70}, {"kernel", 5}, {"tiled", 5}, {"localmean", 5}}
	for _, nt := range nets {
		attn := nt.attn
		for _, dt := range []Dtype{Float32, Float64} {
			for _, shards := range []int{1, 2} {
				for mi, mode := range modes {
					weights := attn != "tiled" && mode.Taps
					name := fmt.Sprintf("%s/T %d/%v/shards %d/mode %d", attn, nt.t, dt, shards, mi)
					var runs [2][]runOut
					planned := 0
					for k, plan := range []bool{false, true} {
						usePlan = plan
						n := newPlanNet(t, dt, attn, weights, nt.t)
						m := n.model()
						if err := m.SetShards(shards); err != nil {
							t.Fatal(err)
						}
						for step := range 3 {
							in := planInputs(dt, 4, nt.t, uint64(step))
							o := runSeq(t, m, in, mode)
							runs[k] = append(runs[k], o)
							for _, p := range n.ps.List() {
								for i := range p.Size() {
									p.SetAt(i, p.At(i)-0.05*p.GradAt(i))
								}
							}
						}
						if plan {
							planned = plannedBytes(m)
						}
					}
					if planned == 0 {
						t.Errorf("%s: the plan placed nothing", name)
					}
					for step := range runs[0] {
						sameRun(t, fmt.Sprintf("%s/step %d", name, step), runs[1][step], runs[0][step])
					}
				}
			}
		}
	}
}

// plannedBytes returns the arena bytes of m's compiled graphs.
func plannedBytes(m *Model) int {
	total := 0
	for _, e := range m.cache.entries {
		total += int(e.v.plan.sharedBytes)
	}
	for _, e := range m.plans.entries {
		for _, c := range e.v.graphs {
			total += int(c.plan.sharedBytes)
		}
	}
	return total
}

func sameRun(t *testing.T, what string, got, want runOut) {
	t.Helper()
	same := func(a, b []float64) bool {
		if len(a) != len(b) {
			return false
		}
		for i := range a {
			if math.Float64bits(a[i]) != math.Float64bits(b[i]) {
				return false
			}
		}
		return true
	}
	if math.Float64bits(got.loss) != math.Float64bits(want.loss) {
		t.Errorf("%s: loss %v with the plan, %v without", what, got.loss, want.loss)
	}
	for name, w := range want.grads {
		if !same(got.grads[name], w) {
			t.Errorf("%s: gradient of %s differs with the plan (max relative difference %.3g)", what, name, maxRelDiff(got.grads[name], w))
		}
	}
	for name, w := range want.values {
		if !same(got.values[name], w) {
			t.Errorf("%s: output %q differs with the plan", what, name)
		}
	}
	if !same(got.inGrad, want.inGrad) {
		t.Errorf("%s: the input gradient differs with the plan", what)
	}
}

// TestPlaceSpans checks the arena placement on random lives against the rule (no two
// spans alive at once share an element, offsets aligned) and the bound (the arena is
// at least the peak of the live sizes and, on these, within a third above it).
func TestPlaceSpans(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 200 {
		n := 1 + rng.IntN(60)
		spans := make([]span, n)
		for i := range spans {
			a, b := rng.IntN(100), rng.IntN(100)
			spans[i] = span{first: min(a, b), last: max(a, b), elems: 1 + rng.IntN(1000)}
		}
		off, total := placeSpans(spans)
		peak := 0
		for i := range 100 {
			live := 0
			for _, s := range spans {
				if s.first <= i && i <= s.last {
					live += s.elems
				}
			}
			peak = max(peak, live)
		}
		for i, a := range spans {
			if off[i]%spanAlign != 0 || off[i]+a.elems > total {
				t.Fatalf("trial %d: span %d at %d (%d elements) in an arena of %d", trial, i, off[i], a.elems, total)
			}
			for j, b := range spans[:i] {
				if a.first <= b.last && b.first <= a.last && off[i] < off[j]+b.elems && off[j] < off[i]+a.elems {
					t.Fatalf("trial %d: spans %d and %d live at once and overlap in the arena", trial, i, j)
				}
			}
		}
		if total < peak {
			t.Fatalf("trial %d: arena %d below the peak of live sizes %d", trial, total, peak)
		}
		if float64(total) > 1.34*float64(peak)+float64(spanAlign*n) {
			t.Errorf("trial %d: arena %d, peak of live sizes %d", trial, total, peak)
		}
	}
}

// TestGraphBytesCountStates: what the signature caches count for a graph (compiled.bytes)
// is at least its plan's arena, also where the arena's largest buffers are the attention
// weights kept from the forward pass to the backward (kernel states, not nodes' values):
// counted as nodes' outputs placed, they were subtracted from the graph's values, and a
// long sequence's graph counted for less than nothing.
func TestGraphBytesCountStates(t *testing.T) {
	const b, T = 4, 256
	for _, whole := range []bool{true, false} {
		m := newPlanNet(t, Float32, "attention", false, T).model()
		if whole {
			if err := m.SetShards(1); err != nil {
				t.Fatal(err)
			}
		}
		for _, mode := range []RunMode{{Train: true}, {}} {
			if _, err := m.Run(planInputs(Float32, b, T, 1), mode); err != nil {
				t.Fatal(err)
			}
		}
		var graphs []*compiled
		for _, e := range m.cache.entries {
			graphs = append(graphs, e.v)
		}
		for _, e := range m.plans.entries {
			graphs = append(graphs, e.v.graphs...)
		}
		if len(graphs) < 2 {
			t.Fatalf("whole %v: %d graphs compiled, want the training and the evaluation graphs", whole, len(graphs))
		}
		for _, c := range graphs {
			if c.plan.sharedBytes == 0 {
				t.Fatalf("whole %v: a graph was not planned", whole)
			}
			if got := c.bytes(); got < c.plan.sharedBytes {
				t.Errorf("whole %v: a graph counts %d bytes, less than its arena's %d", whole, got, c.plan.sharedBytes)
			}
		}
	}
}

// TestLossOnly: a run with RunMode.LossOnly returns no named outputs and the same loss
// and parameter gradients, bit for bit, as the same run with them, whole and in parts.
func TestLossOnly(t *testing.T) {
	for _, shards := range []int{1, 2} {
		n := newPlanNet(t, Float32, "attention", false, 16)
		m := n.model()
		if err := m.SetShards(shards); err != nil {
			t.Fatal(err)
		}
		in := planInputs(Float32, 4, 16, 2)
		grads := func(mode RunMode) (*Result, map[string][]float32) {
			n.ps.ZeroGrad()
			res, err := m.Run(in, mode)
			if err != nil {
				t.Fatal(err)
			}
			g := map[string][]float32{}
			for _, p := range n.ps.List() {
				g[p.Name()] = append([]float32(nil), p.GradFloat32s()...)
			}
			return res, g
		}
		full, want := grads(RunMode{Backward: true}) // no dropout: the same masks twice
		if len(full.Values) == 0 {
			t.Fatalf("shards %d: ForwardBackward returned no outputs", shards)
		}
		wantLoss := full.Loss
		res, got := grads(RunMode{Backward: true, LossOnly: true})
		if len(res.Values) != 0 {
			t.Errorf("shards %d: LossOnly returned outputs %v", shards, slices.Collect(maps.Keys(res.Values)))
		}
		if math.Float64bits(res.Loss) != math.Float64bits(wantLoss) {
			t.Errorf("shards %d: LossOnly loss %v, ForwardBackward %v", shards, res.Loss, wantLoss)
		}
		for name, w := range want {
			if !slices.EqualFunc(got[name], w, func(a, b float32) bool { return math.Float32bits(a) == math.Float32bits(b) }) {
				t.Errorf("shards %d: gradient of %s differs from ForwardBackward's", shards, name)
			}
		}
	}
}
