// Package ortrun runs ONNX models in onnxruntime, for the tests that check Locus's
// exports against a real runtime rather than against Locus itself. It drives run.js
// under Node.js with the npm package onnxruntime-node installed next to it
// (`npm ci --ignore-scripts` in this folder; .ci/run does it), and validates models with
// the ONNX checker of the Python package onnx (Debian's python3-onnx).
package ortrun

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"testing"
)

// RequireEnv is the environment variable that turns a missing runtime or checker from a
// skipped test into a failed one; .ci/run sets it, so that CI never skips the checks.
const RequireEnv = "LOCUS_REQUIRE_ONNXRUNTIME"

// SkipIfMissing skips the test, saying why, when node or onnxruntime-node is missing,
// and fails it instead when RequireEnv is set.
func SkipIfMissing(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv(RequireEnv) != "" {
			t.Fatalf("%s is set but %v", RequireEnv, err)
		}
		t.Skipf("skipping the onnxruntime check: %v", err)
	}
}

// CheckFiles validates the model files with the ONNX checker; without the checker it
// logs that they were not validated, or fails when RequireEnv is set.
func CheckFiles(t testing.TB, paths ...string) {
	t.Helper()
	switch err := Check(paths...); {
	case errors.Is(err, ErrNoChecker) && os.Getenv(RequireEnv) == "":
		t.Logf("not validated: %v", err)
	case err != nil:
		t.Fatal(err)
	}
}

// Tensor is a float32 or int64 tensor: Dims and, by type, Floats or Ints.
type Tensor struct {
	Dims   []int
	Floats []float32
	Ints   []int64
}

// dir returns the folder of run.js.
func dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Available returns nil when node and onnxruntime-node are installed, or an error saying
// what is missing and how to install it.
func Available() error {
	if _, err := exec.LookPath("node"); err != nil {
		return errors.New("node (Node.js) is not installed: onnxruntime checks need it")
	}
	if _, err := os.Stat(filepath.Join(dir(), "node_modules", "onnxruntime-node", "package.json")); err != nil {
		return fmt.Errorf("onnxruntime-node is not installed: run `npm ci --ignore-scripts` in %s", dir())
	}
	return nil
}

type wireTensor struct {
	Type string    `json:"type,omitempty"`
	Dims []int     `json:"dims"`
	Data []float64 `json:"data"`
}

func call(req any, reply any) error {
	b, err := json.Marshal(req)
	if err != nil {
		return err
	}
	cmd := exec.Command("node", filepath.Join(dir(), "run.js"))
	cmd.Stdin = bytes.NewReader(b)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("onnxruntime: %v: %s", err, stderr.Bytes())
	}
	return json.Unmarshal(stdout.Bytes(), reply)
}

// Job is one model run: the model file and its inputs by name.
type Job struct {
	Model  string
	Inputs map[string]Tensor
}

// Result is a job's outputs by name (as Floats), or the runtime's error.
type Result struct {
	Outputs map[string]Tensor
	Err     error
}

// Run runs the model file on the inputs and returns every output (as Floats).
func Run(model string, inputs map[string]Tensor) (map[string]Tensor, error) {
	res, err := RunBatch([]Job{{Model: model, Inputs: inputs}})
	if err != nil {
		return nil, err
	}
	return res[0].Outputs, res[0].Err
}

// RunBatch runs the jobs in one runtime process (starting one costs about a second).
func RunBatch(jobs []Job) ([]Result, error) {
	wire := make([]map[string]any, len(jobs))
	for k, job := range jobs {
		in := map[string]wireTensor{}
		for name, t := range job.Inputs {
			w := wireTensor{Type: "float32", Dims: t.Dims}
			if t.Ints != nil {
				w.Type = "int64"
				for _, v := range t.Ints {
					w.Data = append(w.Data, float64(v))
				}
			} else {
				for _, v := range t.Floats {
					w.Data = append(w.Data, float64(v))
				}
			}
			in[name] = w
		}
		wire[k] = map[string]any{"model": job.Model, "inputs": in}
	}
	var reply struct {
		Results []struct {
			Outputs map[string]wireTensor `json:"outputs"`
			Error   string                `json:"error"`
		} `json:"results"`
	}
	if err := call(map[string]any{"jobs": wire}, &reply); err != nil {
		return nil, err
	}
	if len(reply.Results) != len(jobs) {
		return nil, fmt.Errorf("onnxruntime: %d results for %d jobs", len(reply.Results), len(jobs))
	}
	out := make([]Result, len(jobs))
	for k, r := range reply.Results {
		if r.Error != "" {
			out[k].Err = fmt.Errorf("onnxruntime: %s: %s", jobs[k].Model, r.Error)
			continue
		}
		out[k].Outputs = map[string]Tensor{}
		for name, w := range r.Outputs {
			t := Tensor{Dims: w.Dims, Floats: make([]float32, len(w.Data))}
			for i, v := range w.Data {
				t.Floats[i] = float32(v)
			}
			out[k].Outputs[name] = t
		}
	}
	return out, nil
}

// Greedy continues each prompt by steps tokens, each the argmax of the model's logits
// (input "ids" [1, T], output "logits" [1, T, vocab]) at the last position, with the last
// context tokens as the model's input.
func Greedy(model string, prompts [][]int64, steps, context int) ([][]int64, error) {
	var reply struct {
		Generated [][]int64 `json:"generated"`
	}
	req := map[string]any{"model": model, "greedy": map[string]any{"prompts": prompts, "steps": steps, "context": context}}
	if err := call(req, &reply); err != nil {
		return nil, err
	}
	return reply.Generated, nil
}

// ErrNoChecker is returned by Check when no Python with the onnx package is installed.
var ErrNoChecker = errors.New("the ONNX checker is not installed (apt-get install python3-onnx)")

// Check validates model files with onnx.checker.check_model (full check), in one Python
// process.
func Check(models ...string) error {
	for _, py := range []string{"python3", "/usr/bin/python3"} {
		// onnx.checker, not onnx alone: a directory named onnx in the working directory
		// (this repository's root has one) imports as an empty namespace package.
		if exec.Command(py, "-c", "import onnx.checker").Run() != nil {
			continue
		}
		out, err := exec.Command(py, append([]string{filepath.Join(dir(), "check.py")}, models...)...).CombinedOutput()
		if err != nil {
			return fmt.Errorf("onnx checker: %v: %s", err, out)
		}
		return nil
	}
	return ErrNoChecker
}

// MaxAbsDiff returns max_i |got_i − want_i|, or an error when the lengths differ or
// only one side is NaN somewhere.
func MaxAbsDiff(got, want []float32) (float64, error) {
	if len(got) != len(want) {
		return 0, fmt.Errorf("onnxruntime gave %d values, Locus %d", len(got), len(want))
	}
	var d float64
	for i := range got {
		g, w := float64(got[i]), float64(want[i])
		if math.IsNaN(g) != math.IsNaN(w) {
			return 0, fmt.Errorf("value %d: onnxruntime %g, Locus %g", i, g, w)
		}
		if !math.IsNaN(g) {
			d = math.Max(d, math.Abs(g-w))
		}
	}
	return d, nil
}
