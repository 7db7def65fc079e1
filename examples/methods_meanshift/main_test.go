package main

import (
	"testing"

	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/methods"
)

// MeanShift finds the three synthetic blobs, with the flat kernel and a Gaussian one, and
// the check refuses a clustering that merges two of them.
func TestMeanShiftFindsBlobs(t *testing.T) {
	points, err := load("")
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []methods.MeanShiftOptions{{Quantile: 0.2}, {Quantile: 0.2, Kernel: layers.Gaussian{}}} {
		res, err := methods.MeanShift(points, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := checkBlobs(res.Centers, 0.5); err != nil {
			t.Errorf("kernel %v, bandwidth %.3g: %v", opts.Kernel, res.Bandwidth, err)
		}
	}
	if err := checkBlobs([][]float64{{0, 0}, {0.5, 5.5}}, 0.5); err == nil {
		t.Error("checkBlobs accepted two clusters for three blobs")
	}
}
