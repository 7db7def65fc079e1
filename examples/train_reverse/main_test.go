package main

import (
	"bytes"
	"context"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"

	"github.com/locusml/locus/cli"
)

// The example's model reaches its accuracy within a short run, and `locus eval` opens the
// checkpoint it saves (the Loop records the model's family and its typed data config).
func TestTrainReverse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	acc, ckpt, err := trainReverse(context.Background(), 16, 150, dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if acc < minSeqAcc {
		t.Fatalf("sequence accuracy %.3f after 150 steps, want >= %.2f", acc, minSeqAcc)
	}
	var stdout, stderr bytes.Buffer
	if rc := cli.Main([]string{"eval", "-ckpt", ckpt, "-n", "200"}, &stdout, &stderr); rc != 0 {
		t.Fatalf("locus eval -ckpt %s: exit %d: %s", ckpt, rc, stderr.String())
	}
	m := regexp.MustCompile(`seq_acc ([0-9.]+)`).FindStringSubmatch(stdout.String())
	if m == nil {
		t.Fatalf("locus eval printed no seq_acc:\n%s", stdout.String())
	}
	if got, _ := strconv.ParseFloat(m[1], 64); got < minSeqAcc {
		t.Fatalf("locus eval: seq_acc %g, want >= %.2f:\n%s", got, minSeqAcc, stdout.String())
	}
}
