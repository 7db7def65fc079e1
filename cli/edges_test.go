package cli

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/locusml/locus/bench"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/train"
)

// The rough edges of issue #20, one test each.

func TestUnknownFlagIsOneLine(t *testing.T) {
	code, stdout, stderr := runCLI(t, "train", "-bogus")
	want := "locus train: flag provided but not defined: -bogus (run 'locus train -h' for the flags)\n"
	if code != 2 || stderr != want || stdout != "" {
		t.Fatalf("exit %d, stderr %q; want exit 2 and %q", code, stderr, want)
	}
}

// TestInterruptNamesCheckpoint sends the process a real SIGINT while a run trains: the
// run saves a checkpoint, says so once, and exits 130; the checkpoint resumes.
func TestInterruptNamesCheckpoint(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	type result struct {
		code           int
		stdout, stderr string
	}
	done := make(chan result)
	go func() {
		code, stdout, stderr := runCLI(t, append([]string{"train", "-steps", "1000000", "-eval-every", "2", "-out", dir}, tiny[:len(tiny)-4]...)...)
		done <- result{code, stdout, stderr}
	}()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if _, err := os.Stat(filepath.Join(dir, train.LatestFile)); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("no checkpoint after 30s")
		}
	}
	if err := syscall.Kill(os.Getpid(), syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r.code != 130 {
		t.Fatalf("exit %d, want 130\n%s", r.code, r.stderr)
	}
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(r.stderr, "interrupted"); n != 1 {
		t.Errorf("%d lines say interrupted:\n%s", n, r.stderr)
	}
	last := strings.TrimSpace(r.stderr[strings.LastIndex(strings.TrimSpace(r.stderr), "\n")+1:])
	if !strings.HasPrefix(last, "locus train: interrupted after step") || !strings.Contains(last, "checkpoint saved in "+ck.Dir) || strings.Contains(last, "context canceled") {
		t.Errorf("last line %q does not name the checkpoint %s once", last, ck.Dir)
	}
	if strings.Contains(r.stderr, "restored the best weights") {
		t.Errorf("an exiting process restores the best weights:\n%s", r.stderr)
	}
	mustTrain(t, "-steps", "4", "-resume", dir) // any step count at or past it finishes at once
}

// TestDefaultRunDirsDoNotCollide runs the same command twice without -out.
func TestDefaultRunDirsDoNotCollide(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, want := range []string{"runs/sort-1", "runs/sort-2"} {
		code, stdout, stderr := runCLI(t, append([]string{"train", "-steps", "2"}, tiny...)...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		if !strings.Contains(stderr, "-> "+want+"\n") || !strings.Contains(stdout, "run: "+want+" ") {
			t.Errorf("run did not say it went to %s:\n%s%s", want, stderr, stdout)
		}
		if _, err := os.Stat(filepath.Join(want, runConfigFile)); err != nil {
			t.Error(err)
		}
	}
}

// TestSampleEmptyPromptAndUTF8 trains a byte-level LM on text with multi-byte
// characters: an empty prompt samples from the start of a line, and hot sampling from
// an untrained model never prints invalid UTF-8.
func TestSampleEmptyPromptAndUTF8(t *testing.T) {
	base := t.TempDir()
	text := filepath.Join(base, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("héllo wörld, ñandú 日本語 ✓\n", 40)), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(base, "lm")
	mustTrain(t, "-task", "charlm", "-data", text, "-seqlen", "8", "-layers", "1", "-dmodel", "8", "-heads", "2", "-dff", "16", "-batch", "4", "-steps", "2", "-eval-n", "8", "-out", dir)
	for _, prompt := range []string{"", "h"} {
		for seed := range 5 {
			code, stdout, stderr := runCLI(t, "sample", "-ckpt", dir, "-prompt", prompt, "-n", "60", "-temperature", "3", "-seed", fmt.Sprint(seed))
			if code != 0 {
				t.Fatalf("sample -prompt %q: exit %d\n%s", prompt, code, stderr)
			}
			if !utf8.ValidString(stdout) || !strings.HasPrefix(stdout, prompt) {
				t.Errorf("sample -prompt %q: %q", prompt, stdout)
			}
		}
	}
}

// TestBenchPeerAndAttnLine: the peer script is found relative to the working folder or
// from the environment, and a timing-only workload prints no loss.
func TestBenchPeerAndAttnLine(t *testing.T) {
	root := t.TempDir()
	repo := filepath.Join(root, "locus")
	if err := os.MkdirAll(filepath.Join(root, "shared", "peers"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(repo, "cmd"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, peerPath), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(peerEnv, "")
	t.Chdir(filepath.Join(repo, "cmd"))
	if p, err := findPeer(); err != nil || p != filepath.Join("..", "..", peerPath) {
		t.Errorf("findPeer from the repository: %q, %v", p, err)
	}
	t.Setenv(peerEnv, "/elsewhere/peer.py")
	if p, err := findPeer(); err != nil || p != "/elsewhere/peer.py" {
		t.Errorf("findPeer with %s: %q, %v", peerEnv, p, err)
	}
	t.Setenv(peerEnv, "")
	t.Chdir(t.TempDir())
	if _, err := findPeer(); err == nil || !strings.Contains(err.Error(), peerEnv) {
		t.Errorf("findPeer without a peer: %v", err)
	}

	var b strings.Builder
	printResult(&b, &bench.Result{Workload: "attn", LossFirst: -125.8, LossLast: 45.2})
	if strings.Contains(b.String(), "-125.8") || !strings.Contains(b.String(), "timing only") {
		t.Errorf("attn result:\n%s", b.String())
	}
	b.Reset()
	printResult(&b, &bench.Result{Workload: "charlm", OptMedianMs: 1, LossFirst: 3.2, LossLast: 2.9})
	if !strings.Contains(b.String(), "loss 3.2000 -> 2.9000") {
		t.Errorf("charlm result:\n%s", b.String())
	}
}

// TestLDAENamesMatchTensors: the bandwidths ldae prints are named as its tensors.
func TestLDAENamesMatchTensors(t *testing.T) {
	if _, err := datasets.DefaultMNISTDir(); err != nil {
		t.Skipf("MNIST not found: %v", err)
	}
	dir := filepath.Join(t.TempDir(), "ldae")
	out := mustTrain(t, "-model", "ldae", "-steps", "1", "-eval-n", "10", "-out", dir)
	ck, err := train.LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, line := range strings.Split(out, "\n") {
		name, ok := strings.CutPrefix(line, "bandwidth ")
		if !ok {
			continue
		}
		name, _, _ = strings.Cut(name, " ")
		n++
		if _, ok := ck.Params[name+".rho"]; !ok {
			t.Errorf("printed bandwidth %q has no tensor %s.rho", name, name)
		}
	}
	if n == 0 {
		t.Fatalf("no bandwidths printed:\n%s", out)
	}
}
