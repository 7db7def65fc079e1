package main

import (
	"math/rand/v2"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// The example's run reaches its accuracy, and the model's answer does not depend on
// the order of the points in a set.
func TestSetAttention(t *testing.T) {
	acc, bw, err := fit(800, nil)
	if err != nil {
		t.Fatal(err)
	}
	if acc < minAcc {
		t.Errorf("validation accuracy %.3f after 800 steps, want >= %.2f", acc, minAcc)
	}
	if len(bw) != 4 {
		t.Errorf("bandwidths %v, want one per head (4)", bw)
	}

	ps, err := autodiff.NewParams(autodiff.Float32, 3)
	if err != nil {
		t.Fatal(err)
	}
	m, err := newModel(ps)
	if err != nil {
		t.Fatal(err)
	}
	run := autodiff.NewModel(ps, m.build, 1)
	in, err := sets(4, rand.New(rand.NewPCG(5, 5)))
	if err != nil {
		t.Fatal(err)
	}
	before, err := run.Forward(in)
	if err != nil {
		t.Fatal(err)
	}
	logits := append([]float32(nil), before.Values["logits"].Data().([]float32)...)
	xy := in["points"].Data().([]float32)
	for s := range 4 { // reverse the points of every set
		set := xy[s*points*2 : (s+1)*points*2]
		for i, j := 0, points-1; i < j; i, j = i+1, j-1 {
			set[2*i], set[2*j] = set[2*j], set[2*i]
			set[2*i+1], set[2*j+1] = set[2*j+1], set[2*i+1]
		}
	}
	after, err := run.Forward(in)
	if err != nil {
		t.Fatal(err)
	}
	for i, v := range after.Values["logits"].Data().([]float32) {
		if d := v - logits[i]; d > 1e-5 || d < -1e-5 {
			t.Fatalf("logit %d: %g with the points reversed, %g before", i, v, logits[i])
		}
	}
}
