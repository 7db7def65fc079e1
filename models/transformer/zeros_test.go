package transformer

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// TestHiddenFollowsDim is issue 32's case: DefaultConfig then Dim = 32 builds d_ff 4·32,
// saves it explicitly, and a saved explicit Hidden (an older checkpoint's 256) still
// means 256.
func TestHiddenFollowsDim(t *testing.T) {
	fc1 := func(cfg Config) []int {
		t.Helper()
		ps, err := autodiff.NewParams(autodiff.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(cfg, ps); err != nil {
			t.Fatal(err)
		}
		return ps.Get("blocks.0.ffn.fc1.weight").Shape()
	}
	cfg := DefaultConfig(ArchEncoder, 10, 8)
	cfg.Dim = 32
	if got := fc1(cfg); got[0] != 128 || got[1] != 32 {
		t.Errorf("DefaultConfig with Dim 32: fc1.weight %v, want [128 32] (d_ff 4·Dim)", got)
	}
	raw, err := json.Marshal(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"hidden":128`) {
		t.Errorf("saved config %s, want an explicit \"hidden\":128", raw)
	}
	back, err := ParseConfig(raw)
	if err != nil || back.FFNWidth() != 128 {
		t.Fatalf("reloaded %+v (%v), want d_ff 128", back, err)
	}
	// A checkpoint of a DefaultConfig from before Hidden followed Dim: dim 32, hidden 256.
	old := strings.Replace(string(raw), `"hidden":128`, `"hidden":256`, 1)
	oldCfg, err := ParseConfig(json.RawMessage(old))
	if err != nil {
		t.Fatal(err)
	}
	if got := fc1(oldCfg); got[0] != 256 {
		t.Errorf("saved hidden 256 builds fc1.weight %v, want [256 32]", got)
	}
	if DefaultConfig(ArchLM, 10, 8).FFNWidth() != 256 {
		t.Errorf("DefaultConfig's d_ff %d, want 256", DefaultConfig(ArchLM, 10, 8).FFNWidth())
	}
}
