package main

import "testing"

// At the example's settings both methods, with their best kernel, recover sin 2x to
// within half the noise; with a bandwidth far too wide (every query sees the global mean)
// Nadaraya–Watson does not.
func TestCompare(t *testing.T) {
	res, err := compare(0.3, 200)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 4 {
		t.Fatalf("%d kernels compared, want 4", len(res))
	}
	if nw, ll := best(res); nw >= noise/2 || ll >= noise/2 {
		t.Errorf("best RMSE: NW %.4f, LL %.4f; want both below %g", nw, ll, noise/2)
	}
	wide, err := compare(20, 200)
	if err != nil {
		t.Fatal(err)
	}
	if nw, _ := best(wide); nw < noise/2 {
		t.Errorf("bandwidth 20: best NW RMSE %.4f, want >= %g (the threshold must be able to fail)", nw, noise/2)
	}
}
