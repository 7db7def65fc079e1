package train

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// mlpModel is newMLP's model as a registered family builds it.
type mlpModel struct{ build autodiff.Builder }

func (m mlpModel) Builder() autodiff.Builder { return m.build }

func init() {
	RegisterFamily("test-mlp", func(raw json.RawMessage, ps *autodiff.Params) (Model, error) {
		var cfg mlpConfig
		if err := json.Unmarshal(raw, &cfg); err != nil {
			return nil, err
		}
		return mlpModel{build: mlpBuilder(ps, cfg)}, nil
	})
}

// mlpBuilder is newMLP's graph (without dropout and loss) over given parameters.
func mlpBuilder(ps *autodiff.Params, cfg mlpConfig) autodiff.Builder {
	w1, _ := ps.Scope("fc1").New("weight", []int{1, cfg.Hidden}, autodiff.TorchLinear(1))
	b1, _ := ps.Scope("fc1").New("bias", []int{cfg.Hidden}, autodiff.TorchLinear(1))
	w2, _ := ps.Scope("fc2").New("weight", []int{cfg.Hidden, 1}, autodiff.TorchLinear(cfg.Hidden))
	b2, _ := ps.Scope("fc2").New("bias", []int{1}, autodiff.TorchLinear(cfg.Hidden))
	return func(g *autodiff.Graph) (autodiff.Outputs, error) {
		h := g.Tanh(g.AddBias(g.MatMul(g.Input("x"), g.Param(w1)), g.Param(b1)))
		pred := g.AddBias(g.MatMul(h, g.Param(w2)), g.Param(b2))
		return autodiff.Outputs{Values: map[string]*autodiff.Node{"pred": pred}}, g.Err()
	}
}

func TestLoadRebuildsRegisteredFamily(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "run")
	l := newLoop(t, 20, dir)
	l.Family = "test-mlp"
	l.TrainConfig = map[string]float64{"lr": 0.01}
	if _, err := l.Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	ld, err := Load(dir, autodiff.Float32)
	if err != nil {
		t.Fatal(err)
	}
	var tc bytes.Buffer
	if err := json.Compact(&tc, ld.Checkpoint.TrainConfig); err != nil {
		t.Fatal(err)
	}
	if ld.Family != "test-mlp" || ld.Checkpoint.Step != 20 || tc.String() != `{"lr":0.01}` {
		t.Fatalf("loaded family %q step %d train config %s", ld.Family, ld.Checkpoint.Step, ld.Checkpoint.TrainConfig)
	}
	want, got := paramBits(l.Model.Params()), paramBits(ld.Params)
	for name, w := range want {
		if !slices.Equal(w, got[name]) {
			t.Errorf("parameter %s differs after Load", name)
		}
	}
	if !slices.Contains(Families(), "test-mlp") {
		t.Errorf("Families() = %v", Families())
	}

	// A checkpoint of an unregistered family, or of none, says so.
	ck, err := LoadCheckpoint(dir)
	if err != nil {
		t.Fatal(err)
	}
	for family, want := range map[string]string{"nope": `unknown model family "nope" (registered: `, "": "no model family recorded"} {
		ck.Family = family
		if _, _, err := ck.Build(autodiff.Float32); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("family %q: %v, want %q", family, err, want)
		}
	}
}
