package methods

import (
	"fmt"
	"math"

	"github.com/locusml/locus/layers"
)

// LabelPropagationOptions configures LabelPropagation.
type LabelPropagationOptions struct {
	// Kernel is the localization kernel; nil means layers.Gaussian{}.
	Kernel layers.Kernel
	// Bandwidth h > 0; 0 means DefaultBandwidth(points), which is usually
	// too wide for data on thin manifolds: set it to about the spacing of
	// neighbouring points.
	Bandwidth float64
	// MaxIter bounds the number of sweeps P ← K̃P; 0 means 1000.
	MaxIter int
	// Tol stops once no probability changes by more than Tol; 0 means 1e-6.
	Tol float64
}

// LabelPropagationResult is the outcome of LabelPropagation.
type LabelPropagationResult struct {
	Labels     []int       // argmax of Probs for every point (the given label for labelled ones)
	Probs      [][]float64 // n × classes label probabilities, a column per distinct label in increasing order
	Iterations int         // sweeps done
	Converged  bool        // whether the Tol criterion was met within MaxIter
}

// LabelPropagation labels every point (n×d) from a few labelled ones by
// relaxation labelling: labels[i] is a class >= 0, or -1 for unlabelled.
// Starting from one-hot rows for labelled points and uniform rows for the
// others, it iterates the soft local mode P ← K̃P, where K̃ is the hollow
// (leave-one-out), row-normalised kernel matrix, and clamps labelled rows
// back to their one-hot label after each sweep. A point whose kernel row is
// all zero (no neighbour in a compact kernel's support) keeps its previous
// row. It stores K̃ densely: O(n²) memory and O(n²·classes) time per sweep.
func LabelPropagation(points [][]float64, labels []int, opts LabelPropagationOptions) (*LabelPropagationResult, error) {
	if _, err := checkPoints("points", points); err != nil {
		return nil, fmt.Errorf("label propagation: %w", err)
	}
	dense, classes, err := denseLabels(labels, len(points), true)
	if err != nil {
		return nil, fmt.Errorf("label propagation: %w", err)
	}
	nc := len(classes)
	k, h, err := LocalMeanOptions{Kernel: opts.Kernel, Bandwidth: opts.Bandwidth}.resolve(points)
	if err != nil {
		return nil, fmt.Errorf("label propagation: %w", err)
	}
	maxIter, tol := opts.MaxIter, opts.Tol
	if maxIter == 0 {
		maxIter = 1000
	}
	if tol == 0 {
		tol = 1e-6
	}
	if maxIter < 0 || !(tol > 0) {
		return nil, fmt.Errorf("label propagation: invalid MaxIter %d or Tol %v", maxIter, tol)
	}

	n := len(points)
	// kt[i] is row i of K̃ (hollow, normalised), or nil if it is all zero.
	kt := make([][]float64, n)
	for i, p := range points {
		row := make([]float64, n)
		best := math.Inf(-1)
		for j, q := range points {
			if j == i {
				row[j] = math.Inf(-1)
				continue
			}
			row[j] = k.LogK(p, q, h)
			best = max(best, row[j])
		}
		if math.IsInf(best, -1) {
			continue
		}
		var sum float64
		for j := range row {
			row[j] = math.Exp(row[j] - best)
			sum += row[j]
		}
		for j := range row {
			row[j] /= sum
		}
		kt[i] = row
	}

	p := oneHot(dense, nc)
	for i, l := range labels {
		if l == -1 {
			for c := range p[i] {
				p[i][c] = 1 / float64(nc)
			}
		}
	}
	next := oneHot(dense, nc)
	res := &LabelPropagationResult{}
	for res.Iterations < maxIter {
		res.Iterations++
		var change float64
		for i, l := range labels {
			if l != -1 || kt[i] == nil {
				copy(next[i], p[i])
				continue
			}
			weightedMean(kt[i], p, next[i])
			for c, v := range next[i] {
				change = max(change, math.Abs(v-p[i][c]))
			}
		}
		p, next = next, p
		if change <= tol {
			res.Converged = true
			break
		}
	}
	res.Probs = p
	res.Labels = make([]int, n)
	for i, row := range p {
		res.Labels[i] = classes[argmax(row)]
	}
	return res, nil
}
