package methods

import (
	"errors"
	"fmt"
	"math"

	"github.com/locusml/locus/layers"
)

// EmptyPolicy says what a local mean returns at a query where every kernel
// weight is zero (possible only with a compactly supported kernel such as
// layers.Epanechnikov or Flat, or the kNN kernel with no points).
type EmptyPolicy int

const (
	// EmptyZero returns a zero vector, the rule of THEORY.md §2: never NaN.
	EmptyZero EmptyPolicy = iota
	// EmptyError makes the call fail with an error wrapping ErrZeroWeights.
	EmptyError
)

// LocalMeanOptions configures a kernel local mean.
type LocalMeanOptions struct {
	// Kernel is the localization kernel; nil means layers.Gaussian{}. A kernel with
	// position factors is refused (ErrPositionKernel).
	Kernel layers.Kernel
	// Bandwidth h > 0; 0 means Scott's rule, DefaultBandwidth(x).
	Bandwidth float64
	// Empty is the policy for queries with all-zero weights; the default is EmptyZero.
	Empty EmptyPolicy
}

func (o LocalMeanOptions) resolve(x [][]float64) (layers.Kernel, float64, error) {
	k := o.Kernel
	if k == nil {
		k = layers.Gaussian{}
	}
	if err := checkKernel(k); err != nil {
		return nil, 0, err
	}
	h := o.Bandwidth
	if h == 0 {
		h = DefaultBandwidth(x)
	}
	if err := checkBandwidth(h); err != nil {
		return nil, 0, err
	}
	if o.Empty != EmptyZero && o.Empty != EmptyError {
		return nil, 0, fmt.Errorf("unknown EmptyPolicy %d", o.Empty)
	}
	return k, h, nil
}

// DefaultBandwidth returns Scott's rule of thumb for n points in d
// dimensions, n^(-1/(d+4)) times the mean per-column standard deviation.
// It returns 1 where that is zero (all points equal) and 0 for no points.
func DefaultBandwidth(x [][]float64) float64 {
	n := len(x)
	if n == 0 || len(x[0]) == 0 {
		return 0
	}
	d := len(x[0])
	var sd float64
	for j := 0; j < d; j++ {
		var mean, m2 float64
		for i, p := range x {
			delta := p[j] - mean
			mean += delta / float64(i+1)
			m2 += delta * (p[j] - mean)
		}
		sd += math.Sqrt(m2 / float64(n))
	}
	sd /= float64(d)
	if sd == 0 {
		return 1
	}
	return sd * math.Pow(float64(n), -1/float64(d+4))
}

// normalizedWeights sets w[i] to the normalised weight softmax_i(log K(q, keys[i]))
// using a log-sum-exp. It returns ErrZeroWeights (w all zero) when every weight is zero
// and ErrNaNScore when a kernel score is NaN.
func normalizedWeights(k layers.Kernel, h float64, q []float64, keys [][]float64, w []float64) error {
	switch l := logNormalize(k, h, q, keys, w); {
	case math.IsNaN(l):
		return ErrNaNScore
	case math.IsInf(l, -1):
		return ErrZeroWeights
	}
	return nil
}

// ErrNaNScore is returned when a kernel score is NaN (an infinite distance against an
// infinite bandwidth, say): no weight can be computed, and silently dropping the
// point would give a wrong answer.
var ErrNaNScore = errors.New("a kernel score is NaN")

// logNormalize is normalizedWeights that returns log Σ_i K(q, keys[i]), the
// log of the kernel mass (-Inf when every weight is zero, NaN with w all zero when a
// score is NaN).
func logNormalize(k layers.Kernel, h float64, q []float64, keys [][]float64, w []float64) float64 {
	best := math.Inf(-1)
	for i, key := range keys {
		w[i] = k.LogK(q, key, h)
		if math.IsNaN(w[i]) {
			clear(w)
			return math.NaN()
		}
		best = max(best, w[i])
	}
	if math.IsInf(best, -1) {
		clear(w)
		return best
	}
	if math.IsInf(best, 1) {
		// An infinite score (e.g. the exponential kernel overflowing) takes
		// all the weight, shared among the keys that reach it.
		var count float64
		for i := range w {
			if w[i] == best {
				count++
			}
		}
		for i := range w {
			if w[i] == best {
				w[i] = 1 / count
			} else {
				w[i] = 0
			}
		}
		return math.Inf(1)
	}
	var sum float64
	for i := range w {
		w[i] = math.Exp(w[i] - best)
		sum += w[i]
	}
	for i := range w {
		w[i] /= sum
	}
	return best + math.Log(sum)
}

// weightedMean sets out = Σ_i w[i] values[i].
func weightedMean(w []float64, values [][]float64, out []float64) {
	clear(out)
	for i, v := range values {
		if w[i] == 0 {
			continue
		}
		for j, vj := range v {
			out[j] += w[i] * vj
		}
	}
}

// localMeans evaluates the local mean of values (keys x) at each query.
func localMeans(k layers.Kernel, h float64, empty EmptyPolicy, x, values, queries [][]float64) ([][]float64, error) {
	m := len(values[0])
	out := make([][]float64, len(queries))
	flat := make([]float64, len(queries)*m)
	w := make([]float64, len(x))
	for qi, q := range queries {
		out[qi] = flat[qi*m : (qi+1)*m : (qi+1)*m]
		if err := normalizedWeights(k, h, q, x, w); err != nil {
			if errors.Is(err, ErrZeroWeights) && empty != EmptyError {
				continue
			}
			return nil, fmt.Errorf("query %d: %w", qi, err)
		}
		weightedMean(w, values, out[qi])
	}
	return out, nil
}

// NadarayaWatson returns the Nadaraya–Watson estimate at each query: the
// local mean of the rows of y (n×m) with keys x (n×d),
//
//	m(q) = Σ_i K(q, x_i) y_i / Σ_i K(q, x_i),
//
// computed with a log-sum-exp so that far-away queries do not underflow.
// The result has one row of length m per query. A query where every weight
// is zero gets a zero row (EmptyZero) or an error (EmptyError).
func NadarayaWatson(x, y, queries [][]float64, opts LocalMeanOptions) ([][]float64, error) {
	d, _, err := checkPair(x, y)
	if err != nil {
		return nil, fmt.Errorf("nadaraya-watson: %w", err)
	}
	if err := checkQueries(queries, d); err != nil {
		return nil, fmt.Errorf("nadaraya-watson: %w", err)
	}
	k, h, err := opts.resolve(x)
	if err != nil {
		return nil, fmt.Errorf("nadaraya-watson: %w", err)
	}
	out, err := localMeans(k, h, opts.Empty, x, y, queries)
	if err != nil {
		return nil, fmt.Errorf("nadaraya-watson: %w", err)
	}
	return out, nil
}

// oneHot returns the n×classes one-hot encoding of labels; rows with label
// -1 are left zero.
func oneHot(labels []int, classes int) [][]float64 {
	out := make([][]float64, len(labels))
	flat := make([]float64, len(labels)*classes)
	for i, l := range labels {
		out[i] = flat[i*classes : (i+1)*classes : (i+1)*classes]
		if l >= 0 {
			out[i][l] = 1
		}
	}
	return out
}

// argmax returns the index of the largest entry, the first one on ties.
func argmax(v []float64) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// LocalMode classifies each query by its local mode: the local mean of the
// one-hot labels (the class probabilities, returned as probs, one row per query with
// one column per distinct label, in increasing order), then argmax, the smallest class
// on ties.
// Labels must be >= 0. A query where every weight is zero gets all-zero
// probabilities and class 0 (EmptyZero) or an error (EmptyError).
func LocalMode(x [][]float64, labels []int, queries [][]float64, opts LocalMeanOptions) (classes []int, probs [][]float64, err error) {
	d, err := checkPoints("x", x)
	if err != nil {
		return nil, nil, fmt.Errorf("local mode: %w", err)
	}
	dense, labelSet, err := denseLabels(labels, len(x), false)
	if err != nil {
		return nil, nil, fmt.Errorf("local mode: %w", err)
	}
	if err := checkQueries(queries, d); err != nil {
		return nil, nil, fmt.Errorf("local mode: %w", err)
	}
	k, h, err := opts.resolve(x)
	if err != nil {
		return nil, nil, fmt.Errorf("local mode: %w", err)
	}
	probs, err = localMeans(k, h, opts.Empty, x, oneHot(dense, len(labelSet)), queries)
	if err != nil {
		return nil, nil, fmt.Errorf("local mode: %w", err)
	}
	classes = make([]int, len(queries))
	for i, p := range probs {
		classes[i] = labelSet[argmax(p)]
	}
	return classes, probs, nil
}
