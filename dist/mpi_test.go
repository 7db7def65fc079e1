//go:build mpi

package dist_test

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/dist"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/optim"
	"github.com/locusml/locus/train"
)

// These tests run in every process of an MPI job: TestUnderMPIRun starts this test
// binary under mpirun, which runs the TestRanks tests on 2 and 4 processes.

var comm *dist.Comm

func TestMain(m *testing.M) {
	c, err := dist.Init()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	comm = c
	code := m.Run()
	if code == 0 {
		if err := comm.Finalize(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			code = 1
		}
	}
	os.Exit(code)
}

// mpirunEnv is the environment of processes that mpirun starts in tests: root is
// allowed (CI containers), one thread each.
func mpirunEnv() []string {
	return append(os.Environ(), "OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1", "GOMAXPROCS=1")
}

// TestUnderMPIRun runs the TestRanks tests of this binary under mpirun -np 2 and 4.
func TestUnderMPIRun(t *testing.T) {
	if comm.Size() > 1 {
		t.Skip("already one of several processes")
	}
	mpirun, err := exec.LookPath("mpirun")
	if err != nil {
		t.Skip("mpirun is not installed")
	}
	for _, np := range []int{2, 4} {
		t.Run(strconv.Itoa(np), func(t *testing.T) {
			cmd := exec.Command(mpirun, "--oversubscribe", "-np", strconv.Itoa(np), os.Args[0], "-test.run", "^TestRanks", "-test.v", "-test.count=1")
			cmd.Env = mpirunEnv()
			out, err := cmd.CombinedOutput()
			t.Logf("mpirun -np %d:\n%s", np, out)
			if err != nil {
				t.Fatalf("mpirun -np %d: %v", np, err)
			}
			if n := strings.Count(string(out), "--- PASS: TestRanksEquivalence ("); n != np {
				t.Fatalf("%d of %d processes passed TestRanksEquivalence", n, np)
			}
		})
	}
}

// TestRanksCollectives checks the raw collectives against sums computed here.
func TestRanksCollectives(t *testing.T) {
	p, r := comm.Size(), comm.Rank()
	v64 := []float64{float64(r + 1), 0.5}
	if err := comm.AllReduce(v64); err != nil {
		t.Fatal(err)
	}
	if want := float64(p * (p + 1) / 2); v64[0] != want || v64[1] != 0.5*float64(p) {
		t.Errorf("AllReduce: %v, want [%v %v]", v64, want, 0.5*float64(p))
	}
	v32 := []float32{float32(r), 1}
	if err := comm.AllReduceFloat32(v32); err != nil {
		t.Fatal(err)
	}
	if want := float32(p * (p - 1) / 2); v32[0] != want || v32[1] != float32(p) {
		t.Errorf("AllReduceFloat32: %v, want [%v %v]", v32, want, p)
	}
	buf := []byte(fmt.Sprintf("rank %03d", r))
	if err := comm.Broadcast(buf, 0); err != nil {
		t.Fatal(err)
	}
	if string(buf) != "rank 000" {
		t.Errorf("Broadcast from 0: %q", buf)
	}
	if err := comm.Barrier(); err != nil {
		t.Fatal(err)
	}
}

// TestRanksParams checks BroadcastParams, SameParams and AverageGrads, with weights
// that differ by rank and one rank of weight 0.
func TestRanksParams(t *testing.T) {
	for _, dt := range []autodiff.Dtype{autodiff.Float32, autodiff.Float64} {
		p, r := comm.Size(), comm.Rank()
		ps, _ := autodiff.NewParams(dt, uint64(r)) // different values on each rank
		a, _ := ps.Root().New("a", []int{3, 2}, autodiff.Normal(0, 1))
		b, _ := ps.Root().New("b", []int{5}, autodiff.Normal(0, 1))
		if p > 1 {
			if same, err := comm.SameParams(ps); err != nil || same {
				t.Fatalf("%v: SameParams before the broadcast = %v, %v; want false", dt, same, err)
			}
		}
		if err := comm.BroadcastParams(ps); err != nil {
			t.Fatal(err)
		}
		if same, err := comm.SameParams(ps); err != nil || !same {
			t.Fatalf("%v: SameParams after the broadcast = %v, %v; want true", dt, same, err)
		}
		// Rank k's gradients are all k+1 with weight k (rank 0: weight 0, gradient NaN-free
		// junk): the average is Σ k(k+1) / Σ k.
		for _, q := range []*autodiff.Param{a, b} {
			for i := range q.Size() {
				switch g := q.Grad().Data().(type) {
				case []float32:
					g[i] = float32(r + 1)
				case []float64:
					g[i] = float64(r + 1)
				}
			}
		}
		extra := []float64{float64(r), 1}
		total, err := comm.AverageGrads(ps, float64(r), extra)
		if err != nil {
			t.Fatal(err)
		}
		var sw, swg float64
		for k := range p {
			sw += float64(k)
			swg += float64(k * (k + 1))
		}
		if p == 1 {
			sw, swg = 0, 0 // one process: the gradients are left as they are
		}
		if total != sw || extra[0] != float64(p*(p-1)/2) || extra[1] != float64(p) {
			t.Errorf("%v: total %v, extra %v; want %v, [%v %v]", dt, total, extra, sw, p*(p-1)/2, p)
		}
		if p > 1 {
			if got, want := b.GradAt(4), swg/sw; math.Abs(got-want) > 1e-6*want {
				t.Errorf("%v: averaged gradient %v, want %v", dt, got, want)
			}
		}
	}
}

// run is one training configuration of the equivalence test.
type run struct {
	name  string
	dtype autodiff.Dtype
	// build returns the Loop (without Reducer) and its parameters.
	build func(t *testing.T, dt autodiff.Dtype) (*train.Loop, *autodiff.Params)
}

const equivSteps = 50

// TestRanksEquivalence trains every model family for 50 steps on this job's processes
// and on this process alone with the same global batch, and compares the weights: the
// data-parallel run must equal one process up to round-off, 1e-5 in float32 and 1e-12
// in float64. The attention key biases get 1e-4 in float32: their gradient is zero up
// to round-off (softmax ignores a shift of all scores), and Adam, dividing by the
// gradient's scale, turns a different round-off into a different step (about 1e-5
// after 50 steps; analytically they do not change the model's output).
func TestRanksEquivalence(t *testing.T) {
	var runs []run
	for _, dt := range []autodiff.Dtype{autodiff.Float32, autodiff.Float64} {
		runs = append(runs,
			run{"reverse-encoder", dt, taskLoop("reverse", transformer.ArchEncoder, "exponential")},
			run{"denoise-reverse", dt, taskLoop("denoise-reverse", transformer.ArchEncoder, "gaussian * window(4)")},
			run{"addition-encdec", dt, taskLoop("addition", transformer.ArchEncDec, "exponential")},
			run{"charlm", dt, charLoop},
			run{"dae", dt, daeLoop(dae.KindMLP)},
			run{"ldae", dt, daeLoop(dae.KindLocalized)},
		)
	}
	for _, c := range runs {
		t.Run(fmt.Sprintf("%s/%v", c.name, c.dtype), func(t *testing.T) {
			ref, refPs := c.build(t, c.dtype)
			if _, err := ref.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			par, ps := c.build(t, c.dtype)
			par.Reducer = comm
			if _, err := par.Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			if same, err := comm.SameParams(ps); err != nil || !same {
				t.Fatalf("the processes' weights differ after training (%v)", err)
			}
			// The attention key biases are reported apart: their gradient is zero up to
			// round-off (softmax ignores a shift of all scores), which Adam, dividing by
			// the gradient's scale, turns into steps of its own.
			var d, dRest float64
			var where string
			for _, p := range ps.List() {
				q := refPs.Get(p.Name())
				for i := range p.Size() {
					e := math.Abs(p.At(i) - q.At(i))
					if e > d {
						d, where = e, p.Name()
					}
					if !strings.HasSuffix(p.Name(), "attn.k.bias") {
						dRest = math.Max(dRest, e)
					}
				}
			}
			tol, tolKeyBias := 1e-12, 1e-12
			if c.dtype == autodiff.Float32 {
				tol, tolKeyBias = 1e-5, 1e-4
			}
			if comm.Root() {
				t.Logf("%s/%v, %d processes, %d steps: max abs weight difference from one process %.3g (in %s); %.3g without the key biases (tolerance %g)",
					c.name, c.dtype, comm.Size(), equivSteps, d, where, dRest, tol)
			}
			if dRest > tol {
				t.Errorf("max abs weight difference %g > %g", dRest, tol)
			}
			if d > tolKeyBias {
				t.Errorf("max abs difference of the attention key biases %g > %g", d, tolKeyBias)
			}
		})
	}
}

func adam(t *testing.T, ps *autodiff.Params) optim.Optimizer {
	opt, err := optim.NewAdam(optim.All(ps.List()), optim.DefaultAdamConfig())
	if err != nil {
		t.Fatal(err)
	}
	return opt
}

// taskLoop trains a small Transformer on a toy task with a batch of 13 (uneven parts).
func taskLoop(task string, arch transformer.Arch, kernel string) func(*testing.T, autodiff.Dtype) (*train.Loop, *autodiff.Params) {
	return func(t *testing.T, dt autodiff.Dtype) (*train.Loop, *autodiff.Params) {
		d := transformer.DataConfig{Task: task, Batch: 13, Seed: 1}
		data, err := d.Open()
		if err != nil {
			t.Fatal(err)
		}
		cfg := transformer.DefaultConfig(arch, data.ModelVocab(arch), data.SeqLen())
		cfg.Dim, cfg.Heads, cfg.Hidden, cfg.Layers = 16, 2, 32, 1
		cfg.Kernel = layers.MustParseKernelSpec(kernel)
		return transformerLoop(t, dt, cfg, data)
	}
}

// charLoop trains a small character LM on a generated text.
func charLoop(t *testing.T, dt autodiff.Dtype) (*train.Loop, *autodiff.Params) {
	var text strings.Builder
	rng := rand.New(rand.NewPCG(8, 9))
	words := strings.Fields("func return if else for range var const type struct map chan go defer select case switch")
	for text.Len() < 32<<10 {
		fmt.Fprintf(&text, "%s %s(%d) {\n", words[rng.IntN(len(words))], words[rng.IntN(len(words))], rng.IntN(100))
	}
	corpus := filepath.Join(t.TempDir(), "corpus.txt")
	if err := os.WriteFile(corpus, []byte(text.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	d := transformer.DataConfig{Task: transformer.CharLM, Corpus: corpus, MaxBytes: 64 << 10, SeqLen: 24, Batch: 6, Seed: 1}
	data, err := d.Open()
	if err != nil {
		t.Fatal(err)
	}
	cfg := transformer.DefaultConfig(transformer.ArchLM, data.ModelVocab(transformer.ArchLM), data.SeqLen())
	cfg.Dim, cfg.Heads, cfg.Hidden, cfg.Layers = 16, 2, 32, 1
	return transformerLoop(t, dt, cfg, data)
}

func transformerLoop(t *testing.T, dt autodiff.Dtype, cfg transformer.Config, data *transformer.Data) (*train.Loop, *autodiff.Params) {
	ps, err := autodiff.NewParams(dt, 2)
	if err != nil {
		t.Fatal(err)
	}
	m, err := transformer.New(cfg, ps)
	if err != nil {
		t.Fatal(err)
	}
	td, err := data.Train(cfg.Arch, 3)
	if err != nil {
		t.Fatal(err)
	}
	return &train.Loop{Model: autodiff.NewModel(ps, m.Builder(), 4), Optimizer: adam(t, ps), Data: td, Steps: equivSteps}, ps
}

// daeLoop trains a small (localized) DAE on random 8×8 images with a batch of 10.
func daeLoop(kind string) func(*testing.T, autodiff.Dtype) (*train.Loop, *autodiff.Params) {
	return func(t *testing.T, dt autodiff.Dtype) (*train.Loop, *autodiff.Params) {
		cfg := dae.DefaultConfig()
		if kind == dae.KindLocalized {
			cfg = dae.DefaultLocalizedConfig()
			cfg.Prototypes, cfg.Width, cfg.Levels = 8, 16, 1
		} else {
			cfg.Hidden = []int{24, 8, 24}
		}
		cfg.In = 64
		ps, err := autodiff.NewParams(dt, 2)
		if err != nil {
			t.Fatal(err)
		}
		m, err := dae.New(cfg, ps)
		if err != nil {
			t.Fatal(err)
		}
		rng := rand.New(rand.NewPCG(5, 6))
		imgs := &datasets.Images{N: 100, Rows: 8, Cols: 8, Pixels: make([]float32, 100*64)}
		for i := range imgs.Pixels {
			imgs.Pixels[i] = rng.Float32()
		}
		d, err := dae.NewData(m, imgs, 10, 7)
		if err != nil {
			t.Fatal(err)
		}
		return &train.Loop{Model: autodiff.NewModel(ps, m.Builder(), 4), Optimizer: adam(t, ps), Data: d, Steps: equivSteps}, ps
	}
}

// TestRanksAllReduceCost times 200 all-reduces of a 100k-parameter float32 gradient
// (the default Transformer's, 400 KiB), each after a barrier, so that it measures the
// reduction and not the wait for the slowest process. (Not a Benchmark: the processes
// must agree on the number of calls.)
func TestRanksAllReduceCost(t *testing.T) {
	buf := make([]float32, 102410)
	const n = 200
	var total time.Duration
	for range n {
		if err := comm.Barrier(); err != nil {
			t.Fatal(err)
		}
		t0 := time.Now()
		if err := comm.AllReduceFloat32(buf); err != nil {
			t.Fatal(err)
		}
		total += time.Since(t0)
	}
	if comm.Root() {
		per := total / n
		t.Logf("%d processes: all-reduce of %d KiB: %v per call, %.2f GB/s of buffer", comm.Size(), 4*len(buf)/1024, per, float64(4*len(buf))/per.Seconds()/1e9)
	}
}

// TestRanksMismatches compares named values that differ by rank, in content and in
// length, with names missing or extra: every process gets the same answer, naming the
// ranks and names that differ from rank 0's.
func TestRanksMismatches(t *testing.T) {
	p, r := comm.Size(), comm.Rank()
	values := map[string][]byte{"same": []byte("text"), "len": []byte("abc"), "odd": {0}}
	want := map[int][]string{}
	if r%2 == 1 {
		values["odd"] = []byte{1}
	}
	if r == p-1 && r > 0 {
		values["len"] = []byte("abcd") // one byte longer
		delete(values, "same")
		values["extra"] = nil
	}
	for q := 1; q < p; q++ {
		var w []string
		if q == p-1 {
			w = append(w, "len")
		}
		if q%2 == 1 {
			w = append(w, "odd")
		}
		if q == p-1 {
			w = append(w, "same", dist.OtherNames)
		}
		if w != nil {
			want[q] = w
		}
	}
	got, err := comm.Mismatches(values)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("rank %d of %d: Mismatches = %v, want %v", r, p, got, want)
	}
	same, err := comm.Mismatches(map[string][]byte{"a": []byte("x")})
	if err != nil || same != nil {
		t.Errorf("rank %d: equal values: %v, %v", r, same, err)
	}
}
