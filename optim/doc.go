// Package optim updates parameters from their gradients: the optimizers SGD, Adam,
// AdamW, RMSProp and Adagrad, learning-rate schedules, gradient clipping and gradient
// accumulation.
//
// Optimizers work on autodiff.Params outside any graph, in place, over the parameters'
// backing slices; gorgonia's solvers are not used. Their update rules are those of
// torch.optim (the single-tensor implementations of torch 1.13), so the same
// hyperparameters mean the same thing, and the tests compare the first steps against
// values computed by torch. Float32 parameters keep their state in float32 and Float64
// parameters in float64, as torch does; per-step updates allocate nothing. One departure
// from torch: a moving average (Adam's moments, a momentum buffer, RMSProp's averages) that
// decays below the smallest normal number of its type (1.2e-38 in float32) is set to zero,
// so that it does not pass through the subnormals, on which x86 arithmetic is many times
// slower (tiny.go); such a value's part in an update is nothing beside Eps.
//
// Gradients accumulate across backward passes until autodiff.Params.ZeroGrad, as in
// PyTorch. Optimizers never clear them; the training loop does, after Step:
//
//	opt, err := optim.NewAdamW(optim.DecayGroups(ps.List(), nil), optim.AdamConfig{
//		LR: 3e-4, Beta1: 0.9, Beta2: 0.95, Eps: 1e-8, WeightDecay: 0.1,
//		Schedule:    optim.WithWarmup(100, optim.Cosine{Steps: 4900, MinFactor: 0.1}),
//		MaxGradNorm: 1,
//	})
//	...
//	for step := range 5000 {
//		// forward and backward
//		if err := opt.Step(); err != nil { ... }
//		log.Printf("step %d lr %.3g grad norm %.3f", opt.StepCount(), opt.LR(), opt.GradNorm())
//		ps.ZeroGrad()
//	}
//
// A zero field of a config or schedule means its default, the value its comment
// names (torch's): AdamConfig{LR: 3e-3} is Adam with betas (0.9, 0.999) and eps 1e-8,
// as DefaultAdamConfig with LR 3e-3. Fields whose zero is a valid setting say so
// (WeightDecay, Momentum, Dampening, MaxGradNorm, Warmup.Steps, MinFactor: zero is off,
// not a default). A zero that neither works nor has a sensible default (Cosine.Steps,
// StepDecay.Every, Exponential.Gamma) is an error naming the field, from the
// constructor and from the config's Validate. Config() returns the settings with the
// defaults filled in.
//
// Parameter groups (Group) give sets of parameters their own learning-rate scale and
// weight decay; DecayGroups splits parameters into decayed and non-decayed groups with
// an overridable rule (DefaultNoDecay; NoDecayVectors is nanoGPT's, which decays every
// tensor of two or more dimensions). A Schedule maps the step count to a multiplier
// of the config's learning rate.
//
// An optimizer's State is a map of named tensors, "<param name>.<slot>" (slot names are
// torch's: "exp_avg", "exp_avg_sq", "momentum_buffer", ...) plus StepKey, ready to be
// written to a checkpoint; LoadState restores it so that training resumes bit-identically.
// The schedule's position is the step count, so nothing else needs saving.
//
// An optimizer is not safe for concurrent use, and nothing may touch its parameters'
// values or gradients while Step runs.
package optim
