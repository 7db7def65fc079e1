// Package methods implements classical localization methods (THEORY.md §7)
// as small programs on the kernels of package layers, with plain slices.
//
// Each method is a local mean, a local mode or a local model in disguise:
//
//	method                         as a localization method
//	------                         ------------------------
//	NadarayaWatson                 local mean of y
//	LocalLinear, LocalLinearFit    local linear model (the localization trick, ridge λ)
//	LocalFit                       any differentiable local model, by gradient descent
//	KNNRegress, KNNClassify        local mean / mode with the kNN kernel (1 for the k nearest)
//	LocalMode                      local mean of one-hot labels, then argmax
//	MeanShift                      iterate the self-local mean until points stop; equal modes form a cluster
//	HopfieldUpdate/Retrieve        ξ ← Xᵀ softmax(β X ξ): a self-local-mean step, exponential kernel, bandwidth 1/β
//	Hopfield (classical)           sign of the Hebbian local field (the β → ∞, binary limit)
//	LabelPropagation               iterate P ← K̃P on label probabilities (soft local mode)
//	LocallyLinearEmbedding         hollow, row-normalised weights W; bottom eigenvectors of (I − W)ᵀ(I − W)
//	TakagiSugeno                   local mean with the rule memberships as kernel
//	NonLocalMeans                  kernel on the similarity of patches instead of points
//
// Conventions. A set of n points in d dimensions is a [][]float64 with n
// rows of length d; values and targets are n×m in the same way. Inputs are
// never modified and results are freshly allocated. Kernels are evaluated
// in the log domain and normalised with a log-sum-exp, so a wide range of
// bandwidths is safe from underflow. Options structs have usable zero
// values; each field documents its default. Bad shapes, empty input, a
// non-positive bandwidth and similar misuse are reported as errors, never
// panics. ReadCSV and WriteCSV read and write the matrices for command-line
// use.
package methods
