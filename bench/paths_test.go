package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/locusml/locus/internal/simd"
)

// pathRun is what one code path computed: each step's loss and every parameter after.
type pathRun struct {
	Level  string
	Losses map[string][]float64
	Params map[string][]float64
}

// TestCodePathsAgree runs three train steps of the charlm and dae workloads and an attn
// forward+backward under every LOCUS_CPU level this machine has (each in a child process,
// since the level is read once at start) and checks that the losses the parameters
// after the steps and their last gradients agree: the AVX-512, AVX2 and pure-Go kernels differ only in rounding
// (fused multiply-add or not, the order of the vector sums).
func TestCodePathsAgree(t *testing.T) {
	if os.Getenv("LOCUS_PATHS_CHILD") != "" {
		runPathChild(t)
		return
	}
	if testing.Short() {
		t.Skip("runs the workloads once per code path")
	}
	var runs []pathRun
	for l := simd.Generic; l <= simd.Detected(); l++ {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCodePathsAgree$", "-test.v")
		cmd.Env = append(os.Environ(), "LOCUS_PATHS_CHILD=1", simd.Env+"="+l.String())
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("%s=%s: %v\n%s", simd.Env, l, err, out)
		}
		_, js, ok := strings.Cut(string(out), "PATHRUN ")
		js, _, _ = strings.Cut(js, "\n")
		var r pathRun
		if !ok || json.Unmarshal([]byte(js), &r) != nil || r.Level != l.String() {
			t.Fatalf("%s=%s: no result for that level in\n%s", simd.Env, l, out)
		}
		runs = append(runs, r)
	}
	ref := runs[len(runs)-1]
	for _, r := range runs[:len(runs)-1] {
		for w, ls := range ref.Losses {
			for i, x := range ls {
				if d := math.Abs(r.Losses[w][i] - x); d > 1e-5*math.Max(1, math.Abs(x)) {
					t.Errorf("%s step %d: loss %v on %s, %v on %s", w, i, r.Losses[w][i], r.Level, x, ref.Level)
				}
			}
		}
		var worst float64
		var where string
		for name, ps := range ref.Params {
			q := r.Params[name]
			if len(q) != len(ps) {
				t.Fatalf("%s: %d values on %s, %d on %s", name, len(q), r.Level, len(ps), ref.Level)
			}
			for i := range ps {
				if d := math.Abs(q[i]-ps[i]) / math.Max(1, math.Abs(ps[i])); d > worst {
					worst, where = d, fmt.Sprintf("%s[%d]", name, i)
				}
			}
		}
		// Parameters and their last gradients, relative where above 1. Three Adam steps
		// move a parameter by ≤ 3·lr; rounding in a tiny gradient can flip its step's sign.
		t.Logf("%s vs %s: max |Δ| %.3g at %s", r.Level, ref.Level, worst, where)
		if worst > 1e-4 {
			t.Errorf("%s vs %s: parameters differ by %g at %s", r.Level, ref.Level, worst, where)
		}
	}
}

func runPathChild(t *testing.T) {
	r := pathRun{Level: simd.Current().String(), Losses: map[string][]float64{}, Params: map[string][]float64{}}
	for _, name := range Names() {
		w, err := New(name, 1, 3)
		if err != nil {
			t.Fatal(err)
		}
		for i := range 3 {
			loss, _, err := w.Step(i)
			if err != nil {
				t.Fatal(err)
			}
			r.Losses[name] = append(r.Losses[name], loss)
		}
		for _, p := range w.Params.List() {
			var vs []float64
			for i := range p.Size() {
				vs = append(vs, p.At(i))
			}
			r.Params[name+"/"+p.Name()] = vs
			vs = nil
			for i := range p.Size() {
				vs = append(vs, p.GradAt(i))
			}
			r.Params[name+"/"+p.Name()+"/grad"] = vs
		}
	}
	js, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("PATHRUN %s\n", js)
}
