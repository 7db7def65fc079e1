package cli

import (
	"encoding/json"
	"flag"
	"io"
	"math"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/models/transformer"
)

// decayRun steps the optimizer of the settings flags args three times over a small
// character LM's parameters (float64, fixed values and gradients) and returns the
// parameters' values by name, with the inputs in nanogpt_adamw.py's form.
func decayRun(t *testing.T, args ...string) (map[string][]float64, map[string]any) {
	t.Helper()
	fs := flag.NewFlagSet("settings", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	var st trainSettings
	defineSettingsFlags(fs, &st)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	if err := resolveSettings(fs, &st, given); err != nil {
		t.Fatal(err)
	}
	if err := st.validate(); err != nil {
		t.Fatal(err)
	}
	cfg := transformer.DefaultConfig(transformer.ArchLM, 7, 4)
	cfg.Dim, cfg.Heads, cfg.Layers, cfg.Hidden = 8, 2, 1, 16
	ps, err := autodiff.NewParams(autodiff.Float64, 1)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := transformer.New(cfg, ps); err != nil {
		t.Fatal(err)
	}
	opt, err := st.newOptimizer(ps)
	if err != nil {
		t.Fatal(err)
	}
	const steps = 3
	wave := func(i, salt int) float64 { return math.Sin(1.3*float64(i)+0.7*float64(salt)) * (1 + 0.1*float64(i%5)) }
	var spec []map[string]any
	for k, p := range ps.List() {
		init := make([]float64, p.Value().Size())
		for i := range init {
			init[i] = 0.5 * wave(i, 3*k)
		}
		if err := p.SetFloat64s(init); err != nil {
			t.Fatal(err)
		}
		spec = append(spec, map[string]any{"name": p.Name(), "shape": p.Shape(), "init": init, "grads": [][]float64{}})
	}
	for s := range steps {
		for k, p := range ps.List() {
			g := p.GradFloat64s()
			for i := range g {
				g[i] = wave(i, 3*k+s+1)
			}
			spec[k]["grads"] = append(spec[k]["grads"].([][]float64), slices.Clone(g))
		}
		if err := opt.Step(); err != nil {
			t.Fatal(err)
		}
		ps.ZeroGrad()
	}
	out := map[string][]float64{}
	for _, p := range ps.List() {
		out[p.Name()] = slices.Clone(p.Float64s())
	}
	return out, map[string]any{"params": spec, "lr": st.LR, "betas": st.Betas[:], "eps": st.Eps, "weight_decay": st.WeightDecay}
}

// TestDecayParamsMatchTorch: -decay-params matrices is nanoGPT's AdamW, two groups
// chosen by dimension (GPT.configure_optimizers), run by torch.optim.AdamW on the same
// weights and gradients (testdata/nanogpt_adamw.py, with /usr/bin/python3's torch);
// -decay-params all, which decays the biases and norms too, is not.
func TestDecayParamsMatchTorch(t *testing.T) {
	if testing.Short() {
		t.Skip("imports torch")
	}
	const python = "/usr/bin/python3"
	if exec.Command(python, "-c", "import torch").Run() != nil {
		t.Skip(python + " without torch")
	}
	args := []string{"-optim", "adamw", "-lr", "0.02", "-betas", "0.9,0.99", "-eps", "1e-8", "-wd", "0.1"}
	got, spec := decayRun(t, append(args, "-decay-params", "matrices")...)
	all, _ := decayRun(t, args...)
	in, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(python, "testdata/nanogpt_adamw.py")
	cmd.Stdin = strings.NewReader(string(in))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	raw, err := cmd.Output()
	if err != nil {
		t.Fatalf("nanogpt_adamw.py: %v\n%s", err, stderr.String())
	}
	var ref struct {
		Decay   []string             `json:"decay"`
		NoDecay []string             `json:"no_decay"`
		Params  map[string][]float64 `json:"params"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Decay) == 0 || len(ref.NoDecay) == 0 {
		t.Fatalf("torch's groups: decayed %v, not decayed %v; want both non-empty", ref.Decay, ref.NoDecay)
	}
	worst, worstAll := 0.0, 0.0
	for name, want := range ref.Params {
		g, a := got[name], all[name]
		if len(g) != len(want) {
			t.Fatalf("%s: %d values, torch %d", name, len(g), len(want))
		}
		for i := range want {
			worst = max(worst, math.Abs(g[i]-want[i]))
			worstAll = max(worstAll, math.Abs(a[i]-want[i]))
		}
	}
	if worst > 1e-12 {
		t.Errorf("-decay-params matrices: largest difference from torch.optim.AdamW with nanoGPT's groups %.3g, want <= 1e-12", worst)
	}
	if worstAll < 1e-6 {
		t.Errorf("-decay-params all: largest difference from nanoGPT's groups %.3g; the test cannot tell the rules apart", worstAll)
	}
	t.Logf("decayed %v; not decayed %v; |Δ| matrices %.3g, all %.3g", ref.Decay, ref.NoDecay, worst, worstAll)
}
