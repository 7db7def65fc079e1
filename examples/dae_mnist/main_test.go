package main

import (
	"io"
	"testing"

	"github.com/locusml/locus/datasets"
)

// A short run (16000 training images, one epoch of 250 steps, 200 test images) of every
// model passes the example's check: each denoises to below half the mean image's MSE.
// The MNIST files come from the GoMNIST module (go mod download, as .ci/run does); the
// test skips without them.
func TestShortRun(t *testing.T) {
	dir, err := datasets.DefaultMNISTDir()
	if err != nil {
		t.Skipf("MNIST not found: %v", err)
	}
	data, err := datasets.LoadMNIST(dir)
	if err != nil {
		t.Fatal(err)
	}
	baseline, results, err := run(data, options{
		models: []string{"dae", "ldae", "lazy"}, epochs: 1, batch: 64, lr: 3e-3, sigma: 0.3,
		trainN: 16000, testN: 200, outDir: t.TempDir(), grid: 4, stdout: io.Discard,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 3 {
		t.Fatalf("%d results, want 3", len(results))
	}
	for _, r := range results {
		t.Logf("%s: clean-input MSE %.6f, noisy-input MSE %.6f (mean image %.6f)", r.kind, r.clean, r.noisy, baseline)
	}
	if err := check(baseline, results); err != nil {
		t.Error(err)
	}
	if err := check(baseline, []result{{kind: "dae", noisy: baseline}}); err == nil {
		t.Error("check accepted a model no better than the mean image")
	}
}
