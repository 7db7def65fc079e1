// Package layers holds the building blocks of localization models (docs/THEORY.md):
// localization kernels, bandwidths, the local mean, kernel attention, and the standard
// layers a Transformer is made of.
//
// The concepts, and the type to reach for with each:
//
//   - A kernel K(q, k) weighs a key k for a query q by their features, a position kernel
//     K(t, s) by their positions (a causal or window box, a distance penalty, a learned
//     relative bias), and a Product multiplies one of each. A kernel is a value
//     (Gaussian{}, a Product) or its spec in the spec language below, the text that
//     ParseKernel reads ("gaussian * window(16)") and KernelSpec carries in configs,
//     flags, JSON and checkpoints.
//   - A bandwidth h > 0 is a kernel's reach: fixed, learned per layer, head or query, or
//     the distance to the K-th nearest key. BandwidthConfig (AttentionConfig.Bandwidth)
//     chooses it for KernelAttention; a Width (Fixed, KNNWidth) passes one to LocalMean.
//   - The local mean m_t = Σ_s K(q_t, k_s) v_s / Σ_s K(q_t, k_s) (THEORY.md §2) averages
//     the values v under a kernel: LocalMean, for queries, keys and values a caller
//     already has.
//   - Kernel attention (THEORY.md §5) is multi-head attention as a local mean of learned
//     projections, standard attention under the exponential kernel at h = √d_head:
//     KernelAttention (NewKernelAttention, AttentionConfig), the layer a model attends
//     with; Block (NewBlock) adds norms and a FeedForward, a Transformer block.
//   - The standard layers, with PyTorch's parameter names: Linear, Embedding,
//     LearnedPositions, LayerNorm, RMSNorm, FeedForward; AddSinusoidal and ApplyRotary add
//     positions without parameters.
//
// A content kernel's methods are the ones a caller uses: Name (its spec), LogK on plain
// vectors, Scores in a graph, ONNXScores for export, MarshalText and UnmarshalText, and
// Bind where it is Learnable. Its fast path, the form in which autodiff's fused ops
// evaluate it pair by pair, is one interface, autodiff.PairKernel (its optional forms
// listed there): the kernels of this package keep theirs on unexported types, and a
// kernel of another package joins the fused ops by implementing it.
//
// # Kernels
//
// A kernel is a small value type. Evaluated in the log domain, it returns the score
// s(q, k) = log K(q, k), and the local mean normalises the scores per query with a
// log-sum-exp (autodiff's fused Graph.LocalMean), so exp never overflows and a zero weight
// is −Inf. Every kernel has a plain-vector method LogK and, as a ContentKernel, a graph
// method Scores(g, q [N,Tq,d], k [N,Tk,d], h Width) giving [N,Tq,Tk]:
//
//	kernel           log K(q, k)                   use it for
//	Exponential      q·k / h                       standard attention (h = √d_head is softmax(QKᵀ/√d)V)
//	Gaussian         −‖q − k‖² / (2h²)             smooth local averaging; the Tweedie/DAE denoiser
//	Laplacian        −‖q − k‖ / h                  sharper peak, heavier tails than Gaussian
//	Cauchy           −log(1 + ‖q − k‖² / h²)       heavy tails: far keys keep some weight
//	Epanechnikov     log max(0, 1 − ‖q − k‖²/h²)   compact support: exact zeros, sparse attention
//	Tricube          3·log max(0, 1 − (‖q − k‖/h)³) compact support with a smooth edge (LOESS)
//	Uniform          0                             the plain mean of the visible keys
//	Mixture          log Σ_l softmax(a)_l K_l      learn which kernel fits (weights `<scope>.logits`)
//	Product          s_content + s_position        content × position, e.g. relative positions
//
// Distances are computed exactly (autodiff.PairwiseDist), not as ‖q‖² + ‖k‖² − 2q·k, so
// scores equal LogK, and the gradient at q = k or outside a compact support is 0, never
// NaN.
//
// Position kernels K(t, s) (PositionKernel) act on query and key positions:
//
//	position kernel  log K(t, s)                   notes
//	Box              0 inside, −Inf outside         causal 1[s ≤ t], window 1[|t − s| < w]: a mask
//	DistancePenalty  −slope·|t − s|                 fixed (ALiBi-like)
//	RelativeBias     b_head[clip(s − t, ±M)]        learned, `<scope>.weight` [heads, 2M+1]
//	key padding      0 real, −Inf padding           AttendOptions.KeyMask [B, Tk]
//
// Kernels with parameters (Mixture, RelativeBias, a Product containing one) are
// Learnable: KernelAttention binds them under `<attn>.kernel` (`kernel.logits`,
// `kernel.position.weight`, `kernel.content.logits`, ...).
//
// # The kernel spec language
//
// Every kernel has a textual form, its spec, which Name returns and ParseKernel reads
// back to the typed value; KernelSpec carries a kernel in configs, flags (flag.TextVar)
// and JSON. Factors joined by * multiply (their log-scores add): one content kernel and
// any number of position kernels, whose boxes intersect.
//
//	spec                                 kernel
//	gaussian                             Gaussian{}   (also exponential, laplacian, cauchy, epanechnikov, tricube, uniform)
//	causal                               Box{Causal: true}
//	window(16)                           Box{Window: 16}
//	distance(0.1)                        DistancePenalty{Slope: 0.1}
//	relbias(32)                          RelativeBias{MaxDistance: 32}, learned
//	gaussian * window(16)                Product{Gaussian{}, Box{Window: 16}}; also product(gaussian, window(16))
//	exponential * relbias(8) * causal    Product{Exponential{}, PositionProduct{...}}
//	mixture(exponential, laplacian)      Mixture{...}, learned weights
//
// Parse errors give the column and list the valid names, echoing at most a short quoted
// prefix of the spec. A spec longer than MaxSpecLen bytes (as written or in its canonical
// form), nested deeper than MaxSpecDepth parentheses or with a mixture of more than
// MaxMixtureComponents kernels is refused before anything is built, wherever it comes
// from (a flag, a run file, a checkpoint). Each form is registered by the
// file that defines its kernel (RegisterKernel), so a new kernel is one file: its type,
// LogK, Scores and form (and, for the fused ops, its autodiff.PairKernel).
//
// # Bandwidths
//
// Every kernel has a bandwidth h > 0. KernelAttention chooses it by BandwidthConfig.Mode
// (the learned ones stay positive through softplus plus a floor h_min = Min):
//
//	mode            h                                  parameters             use it for
//	BandwidthFixed  Init (default √d_head)             none                   standard attention, baselines
//	BandwidthLayer  softplus(ρ) + h_min                `bandwidth.rho` [1]     learn one scale per layer
//	BandwidthHead   softplus(ρ_j) + h_min per head     `bandwidth.rho` [H]     heads at different scales
//	BandwidthQuery  softplus(w_j·x + b_j) + h_min      `bandwidth.weight/bias` each token chooses its reach (balloon)
//	BandwidthKNN    ‖q − k_(K)‖ + h_min                none                   adapt to local density
//
// kNN uses the distance to the K-th nearest visible key, with gradient through that
// distance but not through the choice of neighbour. KernelAttention.Bandwidths reports
// the current values, computed from the parameters, for logs and checkpoints; in a graph
// built with taps (autodiff.RunMode.Taps) it also shows its local-mean weights
// (TapWeights, TapVisible) and its per-query bandwidths (TapBandwidth). A Width
// passes a bandwidth to Scores: a constant, one node for all scores, or [N, Tq], one per
// query. For a LocalMean of one's own, outside attention, NewBandwidth makes a fixed or
// learned (layer-mode) bandwidth whose Width goes into the graph.
//
// # Layers
//
// Layers are small structs built by New<Layer>(scope, Config), which validates the
// config (errors name the bad field) and creates parameters under the scope. As in every
// config of Locus (package optim states the rule), a zero field means the default its
// comment names (NormConfig.Eps 0: 1e-5, Hidden 0: 4·Dim, KVDim 0: Dim) or is a valid
// setting it names (Dropout 0: none, Window 0: no window); a zero that can be neither
// (Dim, Vocab, In, Out) is a Validate error naming the field. Forward adds
// the layer to a graph. Shape errors are recorded in the graph (g.Err) with the layer's
// name and the shapes, never panics. Parameter names follow PyTorch's module tree, so
// checkpoints map one to one onto a PyTorch model:
//
//	Linear            `weight` [out, in] (PyTorch layout, y = x Wᵀ + b), `bias` [out]
//	Embedding         `weight` [vocab, d]
//	LearnedPositions  `weight` [maxLen, d]; AddSinusoidal and ApplyRotary have none
//	LayerNorm         `weight`, `bias` [d];  RMSNorm: `weight` [d]
//	FeedForward       `fc1.*`, `fc2.*`
//	KernelAttention   `q.*`, `k.*`, `v.*`, `o.*` (+ `bandwidth.*`, `kernel.*`)
//	Block             `ln1.*`, `attn.*`, `ln2.*`, `ffn.*`
//
// For incremental decoding, KernelAttention.AppendKeysValues grows a key/value cache and
// AttendKV attends over it at a position offset; Block.Step does both for a whole block.
// Block.StepWith takes AttendOptions instead: a KeyMask that hides the empty slots of a
// cache of fixed size and the new tokens' rotary factors as data (AttendOptions.Rotary),
// so that one compiled graph serves every position.
//
// KernelAttention splits heads as PyTorch does (head j takes feature columns
// j·d_head..(j+1)·d_head−1) and works on [B, T, d] inputs; with the exponential kernel and
// the fixed bandwidth √d_head a pre-LN Block matches PyTorch's to float32 round-off
// (testdata/parity). Initialisation is InitTorch (PyTorch's module defaults), InitGPT
// (N(0, 0.02) weights, zero biases) or InitGPT2 (InitGPT with each residual branch's
// output map at 0.02/√(2·BlockConfig.Depth)).
//
// # ONNX
//
// Every layer also has an ONNX method that writes the same function into an onnx.Graph
// (weights as initializers under their parameter names), which is how models export
// themselves (models/transformer and models/dae ExportONNX). A kernel writes its own
// scores by implementing ONNXKernel (a position kernel, ONNXPositionKernel) in its file,
// so a new kernel stays one file; a kernel without those methods is an export error
// naming it. In the graph, attention uses the layout [B, H, T, d_head], and a bandwidth
// is a value that broadcasts against the scores [B, H, Tq, Tk] (ONNXWidth).
//
// # Fused kernel attention and long sequences
//
// A content kernel scores pairs from q·k and ‖q − k‖² (its fast path, an
// autodiff.PairKernel in its own file), and position kernels give a table over relative
// positions (RelativePositionKernel). Every kernel of that form (alone or times position
// kernels), at every bandwidth mode, runs on autodiff's fused ops: KernelAttention, which
// evaluates the scores inside Attention's block loop and keeps the weights, and from
// TiledMinKeys keys on (AttentionConfig.Tiling) TiledLocalMean, in O(T) memory instead of
// O(T²), where boxes skip whole tiles, so a window of w keys costs O(T·w). Without rotary
// embedding they read the [B, T, Dim] layout directly. Standard attention
// (the exponential kernel at a fixed bandwidth) runs on autodiff's Attention. Mixtures of
// such kernels run on the fused ops too, their logits one more input of the op
// (autodiff.ParamPairKernel); mixtures of mixtures and position kernels without the
// relative form take the general path: their scores materialised, then LocalMean.
//
// With AttentionConfig.RandomFeatures = m > 0 (randomfeatures.go), the exponential and
// Gaussian kernels, alone or times causal, at a fixed, per-layer or per-head bandwidth,
// are approximated by m <= MaxRandomFeatures positive orthogonal random features
// (FAVOR+): O(T·m·d_head) time and memory, causal order by autodiff's
// CausalLinearAttention prefix sums. The features are regenerated from
// RandomFeatureSeed and the layer's scope name; other kernels,
// windows, hollow attention and per-query or kNN bandwidths are refused by
// NewKernelAttention.
package layers
