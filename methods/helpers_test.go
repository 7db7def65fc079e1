package methods

import (
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func newRNG(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x10c05)) }

// blobs returns `per` points around each centre with standard deviation sd,
// and each point's true blob index.
func blobs(rng *rand.Rand, centres [][]float64, per int, sd float64) ([][]float64, []int) {
	var pts [][]float64
	var truth []int
	for c, ctr := range centres {
		for i := 0; i < per; i++ {
			p := make([]float64, len(ctr))
			for j := range p {
				p[j] = ctr[j] + sd*rng.NormFloat64()
			}
			pts = append(pts, p)
			truth = append(truth, c)
		}
	}
	return pts, truth
}

// samePartition reports whether two labelings define the same partition.
func samePartition(a, b []int) bool {
	ab, ba := map[int]int{}, map[int]int{}
	for i := range a {
		if v, ok := ab[a[i]]; ok && v != b[i] {
			return false
		}
		if v, ok := ba[b[i]]; ok && v != a[i] {
			return false
		}
		ab[a[i]], ba[b[i]] = b[i], a[i]
	}
	return true
}

func ranks(v []float64) []float64 {
	idx := make([]int, len(v))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return v[idx[a]] < v[idx[b]] })
	r := make([]float64, len(v))
	for rank, i := range idx {
		r[i] = float64(rank)
	}
	return r
}

func pearson(a, b []float64) float64 {
	var ma, mb float64
	for i := range a {
		ma += a[i]
		mb += b[i]
	}
	ma /= float64(len(a))
	mb /= float64(len(b))
	var sab, saa, sbb float64
	for i := range a {
		sab += (a[i] - ma) * (b[i] - mb)
		saa += (a[i] - ma) * (a[i] - ma)
		sbb += (b[i] - mb) * (b[i] - mb)
	}
	return sab / math.Sqrt(saa*sbb)
}

func spearman(a, b []float64) float64 { return pearson(ranks(a), ranks(b)) }

func column(m [][]float64, c int) []float64 {
	out := make([]float64, len(m))
	for i, r := range m {
		out[i] = r[c]
	}
	return out
}

func assertClose(t *testing.T, what string, got, want []float64, tol float64) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: length %d, want %d", what, len(got), len(want))
	}
	for i := range got {
		if math.Abs(got[i]-want[i]) > tol {
			t.Errorf("%s[%d] = %.15g, want %.15g (tol %g)", what, i, got[i], want[i], tol)
		}
	}
}
