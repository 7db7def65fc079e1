package methods

import (
	"errors"
	"math"
	"testing"
)

func TestTakagiSugenoHand(t *testing.T) {
	// IF x1 is low AND x2 is anything THEN y = 10
	// IF x1 is high AND x2 is near 1 THEN y = 20
	rules := []FuzzyRule{
		{Antecedents: []Membership{TriangularMembership(-1, 0, 1), nil}, Output: []float64{10}},
		{Antecedents: []Membership{TriangularMembership(0, 1, 2), GaussianMembership(1, 0.5)}, Output: []float64{20}},
	}
	got, err := TakagiSugeno(rules, []float64{0.25, 0.5})
	if err != nil {
		t.Fatal(err)
	}
	w1 := 0.75                  // triangle (-1, 0, 1) at 0.25
	w2 := 0.25 * math.Exp(-0.5) // triangle (0, 1, 2) at 0.25 times exp(-(0.5/0.5)²/2)
	want := (10*w1 + 20*w2) / (w1 + w2)
	assertClose(t, "ts", got, []float64{want}, 1e-15)

	if _, err := TakagiSugeno(rules, []float64{5, 0}); !errors.Is(err, ErrZeroWeights) {
		t.Errorf("no rule fires: err = %v", err)
	}
	if _, err := TakagiSugeno(rules, []float64{0}); err == nil {
		t.Error("wrong input length: no error")
	}
}
