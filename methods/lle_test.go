package methods

import (
	"math"
	"testing"
)

// swissRoll returns n points of a swiss roll with roll parameter t in
// [1.5π, 4.5π] (as scikit-learn's make_swiss_roll) and height in [0, height].
func swissRoll(n int, height float64, seed uint64) (pts [][]float64, t []float64) {
	rng := newRNG(seed)
	for i := 0; i < n; i++ {
		ti := 1.5 * math.Pi * (1 + 2*rng.Float64())
		pts = append(pts, []float64{ti * math.Cos(ti), height * rng.Float64(), ti * math.Sin(ti)})
		t = append(t, ti)
	}
	return pts, t
}

func TestLLEUnrollsSpiral(t *testing.T) {
	// Height 0: a spiral curve; its 1-D embedding must be monotone in t.
	pts, roll := swissRoll(300, 0, 10)
	emb, err := LocallyLinearEmbedding(pts, LLEOptions{Neighbors: 8, Components: 1})
	if err != nil {
		t.Fatal(err)
	}
	rho := math.Abs(spearman(column(emb, 0), roll))
	t.Logf("|Spearman(embedding, t)| = %.4f", rho)
	if rho < 0.99 {
		t.Errorf("|Spearman(embedding, t)| = %.4f, want > 0.99", rho)
	}
}

func TestLLEUnrollsSwissRoll(t *testing.T) {
	pts, roll := swissRoll(500, 10, 11)
	emb, err := LocallyLinearEmbedding(pts, LLEOptions{Neighbors: 12, Components: 2})
	if err != nil {
		t.Fatal(err)
	}
	best := 0.0
	for c := 0; c < 2; c++ {
		best = math.Max(best, math.Abs(spearman(column(emb, c), roll)))
	}
	t.Logf("max |Spearman(embedding column, t)| = %.4f", best)
	if best < 0.95 {
		t.Errorf("max |Spearman(embedding column, t)| = %.4f, want > 0.95", best)
	}
}

func TestReconstructionWeights(t *testing.T) {
	// The centre of a square is reconstructed exactly by its 4 corners with
	// weights 1/4 (by symmetry; reg only shrinks toward equal weights).
	pts := [][]float64{{0, 0}, {1, 1}, {-1, 1}, {-1, -1}, {1, -1}, {9, 9}}
	nbrs, w, err := ReconstructionWeights(pts, 4, 1e-3)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[int]bool{}
	for _, j := range nbrs[0] {
		seen[j] = true
	}
	for j := 1; j <= 4; j++ {
		if !seen[j] {
			t.Errorf("point 0 neighbours %v miss %d", nbrs[0], j)
		}
	}
	assertClose(t, "weights", w[0], []float64{0.25, 0.25, 0.25, 0.25}, 1e-12)
	for i, wi := range w {
		var s float64
		for _, v := range wi {
			s += v
		}
		if math.Abs(s-1) > 1e-12 {
			t.Errorf("weights of point %d sum to %v", i, s)
		}
	}
	if _, _, err := ReconstructionWeights(pts, 6, 1e-3); err == nil {
		t.Error("k = n: no error")
	}
}
