package methods

import (
	"fmt"
	"sort"
)

// KNNOptions configures k-nearest-neighbour regression and classification.
type KNNOptions struct {
	// K is the number of neighbours; 0 means 5.
	K int
}

func (o KNNOptions) k(n int) (int, error) {
	k := o.K
	if k == 0 {
		k = 5
	}
	if k < 1 || k > n {
		return 0, fmt.Errorf("need 1 <= K <= %d (number of points), got %d", n, k)
	}
	return k, nil
}

// nearest returns the indices of the k points nearest to q in Euclidean
// distance, nearest first, ties broken by the lower index; skip (if >= 0)
// is left out. idx and dist are scratch space of len(pts).
func nearest(pts [][]float64, q []float64, k, skip int, idx []int, dist []float64) []int {
	idx = idx[:0]
	for i, p := range pts {
		dist[i] = sqDist(q, p)
		if i != skip {
			idx = append(idx, i)
		}
	}
	sort.SliceStable(idx, func(a, b int) bool { return dist[idx[a]] < dist[idx[b]] })
	return idx[:k]
}

// knnWeights sets w to the kNN kernel normalised: 1/k for the k nearest
// points to q, 0 elsewhere.
func knnWeights(x [][]float64, q []float64, k int, w []float64, idx []int, dist []float64) {
	clear(w)
	for _, i := range nearest(x, q, k, -1, idx, dist) {
		w[i] = 1 / float64(k)
	}
}

// KNNRegress returns the k-nearest-neighbour regression at each query: the
// local mean of y (n×m) with the kNN kernel, 1 for the k points of x (n×d)
// nearest to the query in Euclidean distance and 0 elsewhere (ties broken
// by the lower index). It matches scikit-learn's KNeighborsRegressor with
// uniform weights.
func KNNRegress(x, y, queries [][]float64, opts KNNOptions) ([][]float64, error) {
	d, m, err := checkPair(x, y)
	if err != nil {
		return nil, fmt.Errorf("knn regress: %w", err)
	}
	if err := checkQueries(queries, d); err != nil {
		return nil, fmt.Errorf("knn regress: %w", err)
	}
	k, err := opts.k(len(x))
	if err != nil {
		return nil, fmt.Errorf("knn regress: %w", err)
	}
	w, idx, dist := make([]float64, len(x)), make([]int, len(x)), make([]float64, len(x))
	out := make([][]float64, len(queries))
	for qi, q := range queries {
		knnWeights(x, q, k, w, idx, dist)
		out[qi] = make([]float64, m)
		weightedMean(w, y, out[qi])
	}
	return out, nil
}

// KNNClassify returns the k-nearest-neighbour class of each query: the
// local mode with the kNN kernel, i.e. the majority label among the k
// nearest points, the smallest label on ties. Labels must be >= 0.
func KNNClassify(x [][]float64, labels []int, queries [][]float64, opts KNNOptions) ([]int, error) {
	d, err := checkPoints("x", x)
	if err != nil {
		return nil, fmt.Errorf("knn classify: %w", err)
	}
	dense, classes, err := denseLabels(labels, len(x), false)
	if err != nil {
		return nil, fmt.Errorf("knn classify: %w", err)
	}
	if err := checkQueries(queries, d); err != nil {
		return nil, fmt.Errorf("knn classify: %w", err)
	}
	k, err := opts.k(len(x))
	if err != nil {
		return nil, fmt.Errorf("knn classify: %w", err)
	}
	idx, dist := make([]int, len(x)), make([]float64, len(x))
	votes := make([]float64, len(classes))
	out := make([]int, len(queries))
	for qi, q := range queries {
		clear(votes)
		for _, i := range nearest(x, q, k, -1, idx, dist) {
			votes[dense[i]]++
		}
		out[qi] = classes[argmax(votes)]
	}
	return out, nil
}
