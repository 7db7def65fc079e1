package optim_test

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/optim"
)

// ExampleNewAdamW minimizes Σ(w − 3)² with AdamW, a warmup and cosine decay, and
// gradient clipping, computing the gradient by hand in place of a backward pass.
func ExampleNewAdamW() {
	ps, _ := autodiff.NewParams(autodiff.Float64, 1)
	w, _ := ps.Root().New("w", []int{2, 2}, autodiff.Zeros())

	cfg := optim.DefaultAdamWConfig()
	cfg.LR, cfg.WeightDecay, cfg.MaxGradNorm = 0.1, 0, 5
	cfg.Schedule = optim.WithWarmup(10, optim.Cosine{Steps: 290, MinFactor: 0.01})
	opt, err := optim.NewAdamW(optim.All(ps.List()), cfg)
	if err != nil {
		fmt.Println(err)
		return
	}
	for range 300 {
		for i, v := range w.Float64s() {
			w.GradFloat64s()[i] += 2 * (v - 3) // backward accumulates
		}
		if err := opt.Step(); err != nil {
			fmt.Println(err)
			return
		}
		ps.ZeroGrad()
	}
	fmt.Printf("steps %d, w[0] %.3f, final lr %.4f\n", opt.StepCount(), w.At(0), opt.LR())
	// Output: steps 300, w[0] 3.000, final lr 0.0010
}

// ExampleDecayGroups shows the default rule: biases, norms and embeddings get no decay.
func ExampleDecayGroups() {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	root := ps.Root()
	root.New("tok_emb.weight", []int{100, 8}, autodiff.Normal(0, 0.02))
	root.New("blocks.0.ln1.weight", []int{8}, autodiff.Ones())
	root.New("blocks.0.attn.q.weight", []int{8, 8}, autodiff.Normal(0, 0.02))
	root.New("blocks.0.attn.q.bias", []int{8}, autodiff.Zeros())
	for _, g := range optim.DecayGroups(ps.List(), nil) {
		decay := "config's weight decay"
		if g.WeightDecay != nil {
			decay = fmt.Sprint("weight decay ", *g.WeightDecay)
		}
		fmt.Printf("%s:", decay)
		for _, p := range g.Params {
			fmt.Printf(" %s", p.Name())
		}
		fmt.Println()
	}
	// Output:
	// config's weight decay: blocks.0.attn.q.weight
	// weight decay 0: tok_emb.weight blocks.0.ln1.weight blocks.0.attn.q.bias
}

// ExampleNoDecayVectors shows nanoGPT's rule: matrices and embeddings are decayed,
// biases and norms not.
func ExampleNoDecayVectors() {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	root := ps.Root()
	root.New("tok_emb.weight", []int{100, 8}, autodiff.Normal(0, 0.02))
	root.New("blocks.0.ln1.weight", []int{8}, autodiff.Ones())
	root.New("blocks.0.attn.q.weight", []int{8, 8}, autodiff.Normal(0, 0.02))
	root.New("blocks.0.attn.q.bias", []int{8}, autodiff.Zeros())
	for _, g := range optim.DecayGroups(ps.List(), optim.NoDecayVectors) {
		fmt.Printf("decayed %v:", g.WeightDecay == nil)
		for _, p := range g.Params {
			fmt.Printf(" %s", p.Name())
		}
		fmt.Println()
	}
	// Output:
	// decayed true: tok_emb.weight blocks.0.attn.q.weight
	// decayed false: blocks.0.ln1.weight blocks.0.attn.q.bias
}

// ExampleAccumulator steps the optimizer once every four micro-batches.
func ExampleAccumulator() {
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	w, _ := ps.Root().New("w", []int{3}, autodiff.Zeros())
	opt, _ := optim.NewSGD(optim.All(ps.List()), optim.SGDConfig{LR: 0.5})
	acc, _ := optim.NewAccumulator(opt, 4)
	for micro := range 8 {
		for i := range w.GradFloat32s() {
			w.GradFloat32s()[i] += float32(micro) // this micro-batch's gradient
		}
		stepped, err := acc.Step()
		if err != nil {
			fmt.Println(err)
			return
		}
		if stepped {
			ps.ZeroGrad()
			fmt.Printf("after micro-batch %d: step %d, w[0] %.3f\n", micro, opt.StepCount(), w.At(0))
		}
	}
	// Output:
	// after micro-batch 3: step 1, w[0] -0.750
	// after micro-batch 7: step 2, w[0] -3.500
}
