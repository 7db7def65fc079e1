package dae

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/ortrun"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/onnx"
	"gorgonia.org/tensor"
)

// TestONNXMatchesLocus exports the MLP and localized DAEs with several kernels, runs the
// files in onnxruntime and compares the reconstructions with Locus's on the same images:
// max |difference| <= 1e-4 in float32.
func TestONNXMatchesLocus(t *testing.T) {
	ortrun.SkipIfMissing(t)
	const in, batch = 12, 5
	mlp := DefaultConfig()
	mlp.In, mlp.Hidden = in, []int{8, 3, 8}
	cases := []Config{mlp}
	for _, spec := range []string{"gaussian", "exponential", "laplacian", "cauchy", "epanechnikov", "tricube",
		"mixture(gaussian, cauchy)", "gaussian * relbias(2)", "product(laplacian, window(3))", "exponential * distance(0.2)"} {
		c := DefaultLocalizedConfig()
		c.In, c.Width, c.Heads, c.Prototypes, c.Levels = in, 8, 2, 6, 2
		k := layers.MustParseKernelSpec(spec)
		c.Kernel = &k
		cases = append(cases, c)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	images := make([]float32, batch*in)
	for i := range images {
		images[i] = rng.Float32()
	}
	dir := t.TempDir()
	var jobs []ortrun.Job
	var wants [][]float32
	for i, c := range cases {
		ps, _ := autodiff.NewParams(autodiff.Float32, uint64(i))
		m, err := New(c, ps)
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		prng := rand.New(rand.NewPCG(uint64(i), 9))
		for _, p := range ps.List() {
			for j := range p.Size() {
				p.SetAt(j, p.At(j)+0.2*prng.NormFloat64())
			}
		}
		om, err := m.ExportONNX()
		if err != nil {
			t.Fatalf("%s: %v", c, err)
		}
		path := filepath.Join(dir, fmt.Sprintf("%d.onnx", i))
		if err := onnx.WriteFile(path, om); err != nil {
			t.Fatal(err)
		}
		res, err := m.Net().Forward(map[string]*tensor.Dense{"noisy": tensor.New(tensor.WithShape(batch, in), tensor.WithBacking(append([]float32(nil), images...)))})
		if err != nil {
			t.Fatal(err)
		}
		wants = append(wants, res.Values["recon"].Data().([]float32))
		jobs = append(jobs, ortrun.Job{Model: path, Inputs: map[string]ortrun.Tensor{ONNXInputImage: {Dims: []int{batch, in}, Floats: images}}})
	}
	paths := make([]string, len(jobs))
	for i, j := range jobs {
		paths[i] = j.Model
	}
	ortrun.CheckFiles(t, paths...)
	results, err := ortrun.RunBatch(jobs)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range cases {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			if results[i].Err != nil {
				t.Fatal(results[i].Err)
			}
			got := results[i].Outputs[ONNXOutputReconstruction]
			if fmt.Sprint(got.Dims) != fmt.Sprint([]int{batch, in}) {
				t.Fatalf("reconstruction %v, want [%d %d]", got.Dims, batch, in)
			}
			d, err := ortrun.MaxAbsDiff(got.Floats, wants[i])
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: max |onnxruntime − Locus| = %.2e", c, d)
			if d > 1e-4 {
				t.Errorf("max |onnxruntime − Locus| = %.3g > 1e-4", d)
			}
		})
	}
}
