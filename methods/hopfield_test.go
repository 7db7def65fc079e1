package methods

import (
	"math"
	"testing"
)

func unitPatterns(n, d int, seed uint64) [][]float64 {
	pts, _ := blobs(newRNG(seed), [][]float64{make([]float64, d)}, n, 1)
	for _, p := range pts {
		norm := math.Sqrt(dot(p, p))
		for j := range p {
			p[j] /= norm
		}
	}
	return pts
}

func TestModernHopfieldLimits(t *testing.T) {
	patterns := unitPatterns(6, 32, 6)
	xi := make([]float64, 32)
	rng := newRNG(7)
	for j := range xi {
		xi[j] = patterns[2][j] + 0.05*rng.NormFloat64()
	}
	mean := make([]float64, 32)
	for _, p := range patterns {
		for j := range p {
			mean[j] += p[j] / 6
		}
	}
	// Small β: softmax is uniform to O(β), so one step gives the mean.
	got, err := HopfieldUpdate(patterns, xi, 1e-9)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "beta→0", got, mean, 1e-8)
	// Large β: retrieves the nearest pattern.
	got, err = HopfieldRetrieve(patterns, xi, 200, 0)
	if err != nil {
		t.Fatal(err)
	}
	assertClose(t, "beta→∞", got, patterns[2], 1e-12)

	sweep, err := HopfieldBetaSweep(patterns, xi, []float64{1e-6, 1, 10, 100, 1000}, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The distance to the target pattern shrinks as β grows.
	prev := math.Inf(1)
	for i, s := range sweep {
		d := math.Sqrt(sqDist(s, patterns[2]))
		if d > prev+1e-12 {
			t.Errorf("sweep %d: distance %v grew from %v", i, d, prev)
		}
		prev = d
	}
	if prev > 1e-12 {
		t.Errorf("largest beta: distance %v to the pattern", prev)
	}
	if _, err := HopfieldUpdate(patterns, xi, 0); err == nil {
		t.Error("beta 0: no error")
	}
}

func TestClassicalHopfieldRecall(t *testing.T) {
	const d = 100
	rng := newRNG(8)
	patterns := make([][]float64, 3)
	for i := range patterns {
		patterns[i] = make([]float64, d)
		for j := range patterns[i] {
			patterns[i][j] = float64(2*rng.IntN(2) - 1)
		}
	}
	net, err := NewHopfield(patterns)
	if err != nil {
		t.Fatal(err)
	}
	for pi, p := range patterns {
		corrupted := append([]float64(nil), p...)
		for _, j := range rng.Perm(d)[:15] {
			corrupted[j] = -corrupted[j]
		}
		got, err := net.Recall(corrupted, 0)
		if err != nil {
			t.Fatal(err)
		}
		assertClose(t, "recalled", got, p, 0)
		if net.Energy(got) > net.Energy(corrupted) {
			t.Errorf("pattern %d: energy rose", pi)
		}
	}
	if _, err := NewHopfield([][]float64{{1, 0.5}}); err == nil {
		t.Error("non-±1 pattern: no error")
	}
}
