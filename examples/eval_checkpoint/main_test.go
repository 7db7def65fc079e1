package main

import (
	"bytes"
	"path/filepath"
	"testing"

	"github.com/locusml/locus/cli"
	"github.com/locusml/locus/models/transformer"
)

// The example measures a checkpoint written by `locus train`: a trained reversal model
// passes the example's threshold, an untrained one does not.
func TestEvaluate(t *testing.T) {
	for _, c := range []struct {
		steps   string
		trained bool
	}{{"150", true}, {"1", false}} {
		dir := filepath.Join(t.TempDir(), "run")
		var stdout, stderr bytes.Buffer
		args := []string{"train", "-task", "reverse", "-kernel", "gaussian", "-steps", c.steps, "-eval-every", "0", "-eval-n", "64", "-out", dir}
		if rc := cli.Main(args, &stdout, &stderr); rc != 0 {
			t.Fatalf("locus %v: exit %d: %s", args, rc, stderr.String())
		}
		met, ck, err := evaluate(dir, 200, 7)
		if err != nil {
			t.Fatal(err)
		}
		acc := met[transformer.MetricSeqAcc]
		if c.trained && acc < 0.99 {
			t.Errorf("%s (step %d): sequence accuracy %.3f, want >= 0.99", ck.Dir, ck.Step, acc)
		}
		if !c.trained && acc >= 0.5 {
			t.Errorf("%s (step %d, untrained): sequence accuracy %.3f, want below 0.5", ck.Dir, ck.Step, acc)
		}
	}
}
