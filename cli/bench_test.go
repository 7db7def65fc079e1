package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/locusml/locus/bench"
	"github.com/locusml/locus/internal/simd"
	"github.com/locusml/locus/models/transformer"
)

// inProcessBench makes bench -compare run its Locus side in this process (the test
// binary is not locus) until the test ends.
func inProcessBench(t *testing.T) {
	t.Helper()
	orig := runSelf
	runSelf = func(args []string, stderr io.Writer) ([]byte, error) {
		var out bytes.Buffer
		if code := Main(append([]string{"bench"}, args...), &out, stderr); code != 0 {
			return nil, fmt.Errorf("locus bench %s: exit %d", strings.Join(args, " "), code)
		}
		return out.Bytes(), nil
	}
	t.Cleanup(func() { runSelf = orig })
}

// TestBenchSizesReachPeer runs bench -compare with model sizes against a stand-in for
// torch_peer.py (testdata/fake_torch_peer.sh, which reports the model its options
// describe): the peer is given --d, --heads, --layers, --dff, --seqlen and --batch
// (generate: --seqlen and --new-tokens), the report states the size each side ran with
// its parameters and the step's FLOPs, and a peer that runs another model is an error.
func TestBenchSizesReachPeer(t *testing.T) {
	inProcessBench(t)
	peer := filepath.Join("testdata", "fake_torch_peer.sh")
	args := []string{"bench", "-workload", "charlm", "-compare", "-python", "/bin/sh", "-peer", peer,
		"-dmodel", "8", "-heads", "2", "-layers", "1", "-dff", "16", "-seqlen", "4", "-batch", "2", "-steps", "1", "-warmup", "0"}
	code, stdout, stderr := runCLI(t, args...)
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	if want := "charlm --steps 1 --warmup 0 --seed 0 --seqlen 4 --batch 2 --d 8 --heads 2 --layers 1 --dff 16"; !strings.Contains(stderr, want) {
		t.Errorf("the peer's command line is not shown with %q:\n%s", want, stderr)
	}
	// The parameters of the LM torch_peer.py builds: embeddings, per block 4 biased d×d
	// maps, the biased feed-forward maps and 2 LayerNorms, the final LayerNorm, the head.
	d, f, T, V := 8, 16, 4, 65
	n := V*d + T*d + (4*(d*d+d) + d*f + f + f*d + d + 4*d) + 2*d + d*V + V
	size := "d 8, heads 2, layers 1, d_ff 16, T 4, batch 2, vocab 65"
	if want := fmt.Sprintf("charlm: PyTorch %s, %d parameters; Locus %s, %d parameters", size, n, size, n); !strings.Contains(stdout, want) {
		t.Errorf("no line %q in\n%s", want, stdout)
	}
	// 6·N·B·T + 12·L·T²·d·B with N = 4·8² + 2·8·16 + 8·65 = 1032.
	if want := fmt.Sprintf("| %.3g |", 52608/1e9); !strings.Contains(stdout, want) {
		t.Errorf("no GFLOP per step cell %q in\n%s", want, stdout)
	}
	// generate's context and tokens per step.
	code, stdout, stderr = runCLI(t, "bench", "-workload", "generate", "-compare", "-python", "/bin/sh", "-peer", peer,
		"-seqlen", "8", "-new-tokens", "3", "-steps", "1", "-warmup", "0")
	if code != 0 {
		t.Fatalf("generate: exit %d\n%s", code, stderr)
	}
	if want := "generate --steps 1 --warmup 0 --seed 0 --seqlen 8 --new-tokens 3"; !strings.Contains(stderr, want) {
		t.Errorf("the peer's command line is not shown with %q:\n%s", want, stderr)
	}
	if want := "generate: PyTorch d 64, heads 4, layers 2, d_ff 256, T 8"; !strings.Contains(stdout, want) {
		t.Errorf("no %q in\n%s", want, stdout)
	}
	t.Setenv("FAKE_PEER_D", "16")
	code, _, stderr = runCLI(t, args...)
	if msg := strings.TrimSpace(stderr); code == 0 || !strings.Contains(msg, "ran d 16, heads 2") || !strings.Contains(msg, "not the same model (d_model differs)") {
		t.Errorf("a peer of another width: exit %d, stderr %q", code, msg)
	}
}

// TestBenchSizesRefused: a model size the LM cannot have, or one given to a workload it
// does not size, is one line naming the flag; nothing runs.
func TestBenchSizesRefused(t *testing.T) {
	base := []string{"bench", "-steps", "1", "-warmup", "0"}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"-dmodel", "0"}, "-dmodel 0, want at least 1"},
		{[]string{"-heads", "0"}, "-heads 0, want at least 1"},
		{[]string{"-layers", "2000"}, "-layers 2000, want at most 1024"},
		{[]string{"-dff", "-4"}, "-dff -4, want at least 0"},
		{[]string{"-dmodel", "100", "-heads", "6"}, "-dmodel 100 is not a multiple of -heads 6"},
		{[]string{"-heads", "3"}, "-dmodel 64 is not a multiple of -heads 3"},
		{[]string{"-workload", "attn", "-dmodel", "128"}, "-dmodel, -heads, -layers and -dff size -workload charlm or generate, not attn"},
		{[]string{"-workload", "all", "-layers", "4"}, "not all"},
		{[]string{"-workload", "e2e", "-dff", "512"}, "not e2e"},
		{[]string{"-workload", "e2e", "-new-tokens", "5"}, "-new-tokens 5 is for -workload generate"},
		{[]string{"-workload", "generate", "-batch", "4"}, "-batch 4: -workload generate decodes one sequence"},
		{[]string{"-new-tokens", "5"}, "-new-tokens 5 is for -workload generate"},
		{[]string{"-workload", "generate", "-compare", "-peer", "x", "-dmodel", "128"}, "torch_peer.py generate runs the reference size only"},
	} {
		code, _, stderr := runCLI(t, append(base, c.args...)...)
		if msg := strings.TrimSpace(stderr); code != 2 || strings.Contains(msg, "\n") || !strings.Contains(msg, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line with %q", c.args, code, msg, c.want)
		}
	}
}

// TestBenchStatesSize: bench's report states the size it ran, its parameters, the FLOPs
// of a step and, for generate, the key/value cache's memory.
func TestBenchStatesSize(t *testing.T) {
	code, stdout, stderr := runCLI(t, "bench", "-workload", "charlm", "-dmodel", "16", "-heads", "2", "-layers", "1", "-seqlen", "8", "-batch", "2", "-steps", "1", "-warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	cfg := transformer.DefaultConfig(transformer.ArchLM, 65, 8)
	cfg.Dim, cfg.Heads, cfg.Layers = 16, 2, 1
	if want := fmt.Sprintf("size: d 16, heads 2, layers 1, d_ff 64, T 8, batch 2, vocab 65; %d parameters; %.4g FLOP per step", 65*16+8*16+4*(16*16+16)+16*64+64+64*16+16+4*16+2*16+16*65+65, bench.LMTrainFLOPs(cfg, 2, 8)); !strings.Contains(stdout, want) {
		t.Errorf("no %q in\n%s", want, stdout)
	}
	code, stdout, stderr = runCLI(t, "bench", "-workload", "generate", "-dmodel", "16", "-heads", "2", "-layers", "1", "-seqlen", "300", "-steps", "1", "-warmup", "0")
	if code != 0 {
		t.Fatalf("exit %d\n%s", code, stderr)
	}
	// The last token's step reads a cache of the 255 tokens before it, which has room for
	// 255 positions (the smallest 2^k − 1 that holds them, below T − 1 = 299): keys and
	// values of 16 float32s each, in 1 layer.
	for _, want := range []string{"size: d 16, heads 2, layers 1, d_ff 64, T 300, batch 1, vocab 65", "tokens/s",
		fmt.Sprintf("which holds %.3f MiB", float64(2*255*16*4)/(1<<20))} {
		if !strings.Contains(stdout, want) {
			t.Errorf("no %q in generate's report:\n%s", want, stdout)
		}
	}
}

// TestBenchSetsPeerBLASCore: where the peer's OpenBLAS names a pre-AVX2 core
// (testdata/fake_python_blas.sh: Prescott, as Debian 12's OpenBLAS 0.3.21 does on an
// Emerald Rapids) on a processor with AVX2, bench -compare runs the peer with
// OPENBLAS_CORETYPE set to the processor's kernels and says so; with OPENBLAS_CORETYPE
// given, it is left as given.
func TestBenchSetsPeerBLASCore(t *testing.T) {
	want := map[simd.Level]string{simd.AVX512: "SkylakeX", simd.AVX2: "Haswell"}[simd.Detected()]
	if want == "" {
		t.Skip("the processor has no AVX2: OpenBLAS's fallback kernels are its best")
	}
	inProcessBench(t)
	log := filepath.Join(t.TempDir(), "blas.log")
	t.Setenv("FAKE_BLAS_LOG", log)
	python, _ := filepath.Abs(filepath.Join("testdata", "fake_python_blas.sh"))
	args := []string{"bench", "-workload", "charlm", "-compare", "-python", python, "-peer", filepath.Join("testdata", "fake_torch_peer.sh"),
		"-dmodel", "8", "-heads", "2", "-layers", "1", "-dff", "16", "-seqlen", "4", "-batch", "2", "-steps", "1", "-warmup", "0"}
	for _, given := range []string{"", "Zen"} {
		peerBLASOnce.Clear()
		os.Remove(log)
		if given != "" {
			t.Setenv("OPENBLAS_CORETYPE", given)
		} else {
			os.Unsetenv("OPENBLAS_CORETYPE") // t.Setenv below restores any value the test began with
		}
		code, stdout, stderr := runCLI(t, args...)
		if code != 0 {
			t.Fatalf("exit %d\n%s", code, stderr)
		}
		ran, _ := os.ReadFile(log)
		if given == "" {
			if note := "picked its Prescott (pre-AVX2) kernels; running the peer with OPENBLAS_CORETYPE=" + want; !strings.Contains(stderr, note) {
				t.Errorf("no %q in stderr:\n%s", note, stderr)
			}
			if line := fmt.Sprintf("OpenBLAS core %s (set by Locus: OpenBLAS picked Prescott for this processor)", want); !strings.Contains(stdout, line) {
				t.Errorf("the summary does not say %q:\n%s", line, stdout)
			}
			if got := strings.TrimSpace(string(ran)); got != "peer OPENBLAS_CORETYPE="+want {
				t.Errorf("the peer ran with %q, want OPENBLAS_CORETYPE=%s", got, want)
			}
			t.Setenv("OPENBLAS_CORETYPE", "") // registers the restore
			os.Unsetenv("OPENBLAS_CORETYPE")
			continue
		}
		if strings.Contains(stderr, "running the peer with OPENBLAS_CORETYPE") || !strings.Contains(stdout, "OpenBLAS core Zen,") && !strings.Contains(stdout, "OpenBLAS core Zen)") {
			t.Errorf("OPENBLAS_CORETYPE=Zen given: stderr\n%s\nstdout\n%s", stderr, stdout)
		}
		if got := strings.TrimSpace(string(ran)); got != "peer OPENBLAS_CORETYPE=Zen" {
			t.Errorf("the peer ran with %q, want the given OPENBLAS_CORETYPE=Zen", got)
		}
	}
}
