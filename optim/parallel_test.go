package optim

import (
	"math/rand/v2"
	"testing"
)

// TestParallelUpdateMatchesSerial checks that the two-goroutine paths for large tensors
// give the same bits as one serial pass.
func TestParallelUpdateMatchesSerial(t *testing.T) {
	n := 3*parallelMin + 7
	rng := rand.New(rand.NewPCG(1, 2))
	mk := func() []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64())
		}
		return x
	}
	p, g, m, v := mk(), mk(), mk(), mk()
	for i := range v {
		v[i] *= v[i]
	}
	clone := func(x []float32) []float32 { return append([]float32(nil), x...) }
	p2, m2, v2 := clone(p), clone(m), clone(v)
	k := adamCoefs{lr: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, stepSize: 1e-2, bc2Sqrt: 0.05, wd: 0.01}
	adamUpdate(p, g, m, v, nil, &k)
	adamUpdateSerial(p2, g, m2, v2, nil, &k)
	for i := range p {
		if p[i] != p2[i] || m[i] != m2[i] || v[i] != v2[i] {
			t.Fatalf("element %d differs: %v/%v", i, p[i], p2[i])
		}
	}
	if a, b := sumSquares(g), sumSquaresSerial(g[:n/2])+sumSquaresSerial(g[n/2:]); a != b {
		t.Fatalf("sumSquares %v, halves %v", a, b)
	}
}
