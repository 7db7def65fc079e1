// Package dae holds denoising autoencoders (docs/THEORY.md §6): models g trained so that
// g(z + noise) ≈ z, and the lazy denoiser that needs no training.
//
// Three denoisers share one interface, Denoiser:
//
//   - the MLP DAE (Kind "dae"): Linear layers with ReLU hidden units and a sigmoid output,
//     by default the reference recipe 784-256-64-256-784 with PyTorch's nn.Linear
//     initialisation, trained on the MSE between g(noisy) and the clean input;
//   - the localized DAE (Kind "ldae"): a hierarchy of local means. An encoder maps the
//     noisy image to a code; each level takes the kernel attention (layers.KernelAttention,
//     Gaussian or exponential kernel, a learned bandwidth h = softplus(ρ) + h_min per
//     head) of the code over a learned memory of prototypes (keys and values are maps of
//     the memory), adds it to the code (a soft mean-shift step) and applies a pointwise
//     map; a linear decoder and a sigmoid give the image;
//   - the lazy DAE (Lazy): the Gaussian local mean of a training set at bandwidth σ,
//     E[z|x] = Σ_i x_i N(x; x_i, σ²I) / Σ_j N(x; x_j, σ²I), the Bayes-optimal denoiser
//     for the empirical distribution under Gaussian noise of standard deviation σ.
//
// Conventions. Images are flat float32 rows of Dim pixels in [0, 1], a batch of n images
// being n·Dim values, row-major. Linear weights are stored [out, in] as in PyTorch
// (y = x·Wᵀ + b), so "enc.0.weight" of the reference MLP has shape [256, 784] and a
// checkpoint maps one to one onto torch's nn.Linear layers. Parameter names are listed on
// Config.
//
// Training: New builds the parameters of a Config under an autodiff.Params; Model.Builder
// is the graph (inputs "noisy" and, for a loss, "clean"; output "recon"; loss the MSE)
// and Model.Net runs it. The model trains with train.Loop like every model here: NewData
// is its train.Data (shuffled epochs, last partial batch kept, each batch corrupted with
// the model's Corruption, resumable from a checkpoint bit for bit) and Metrics its Eval
// (test MSE for clean and for corrupted inputs):
//
//	data, _ := dae.NewData(m, mnist.Train, 128, seed+1)
//	opt, _ := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
//	loop := &train.Loop{Model: m.Net(), Optimizer: opt, Data: data, Steps: 3 * data.StepsPerEpoch(),
//		Eval: func(ctx context.Context) (train.Metrics, error) { return dae.Metrics(ctx, m, mnist.Test.Pixels, m.Noise(), seed+2) }}
//	sum, err := loop.Run(ctx)
//
// Evaluate reports the clean-input and noisy-input test MSE of any Denoiser, and
// WriteGrid draws clean / noisy / denoised digits into a PNG.
//
// Corruptions (Gaussian, Masking, SaltPepper) draw from a caller's math/rand/v2
// generator, so equal seeds give equal noise. Gaussian noise is not clipped, as in the
// reference recipe.
//
// The sequence DAE is not in this package: it is the Transformer encoder
// (models/transformer, Arch "encoder") trained on the datasets' denoise-<task> tasks,
// which mask or substitute a fraction of the tokens of a toy task's problem followed by
// its answer and score the restored tokens (locus train -task denoise-reverse
// [-corrupt-rate 0.15] [-corrupt-mode mask|substitute]).
package dae
