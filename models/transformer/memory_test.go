package transformer

import (
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/train"
)

// TestParamEstimateIsALowerBound: the estimate never exceeds the real count, and is
// within a factor 2 of it, for each architecture.
func TestParamEstimateIsALowerBound(t *testing.T) {
	for _, arch := range []Arch{ArchEncoder, ArchLM, ArchEncDec} {
		cfg := DefaultConfig(arch, 40, 32)
		ps, err := autodiff.NewParams(autodiff.Float32, 1)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(cfg, ps); err != nil {
			t.Fatal(err)
		}
		est, real := cfg.ParamEstimate(), uint64(ps.NumElements())
		if est > real || 2*est < real {
			t.Errorf("%s: estimate %d parameters, the model has %d", arch, est, real)
		}
	}
}

// TestTooLargeForMemoryIsRefused: sizes each within Validate's limits that together
// cannot fit are refused up front, by New and by Data.Check.
func TestTooLargeForMemoryIsRefused(t *testing.T) {
	cfg := DefaultConfig(ArchEncoder, 1<<20, MaxLen)
	cfg.Dim, cfg.Heads, cfg.Layers = MaxDim, 4, MaxLayers
	cfg.Positions = layers.PositionsSinusoidal
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	ps, _ := autodiff.NewParams(autodiff.Float32, 1)
	if _, err := New(cfg, ps); err == nil || !strings.Contains(err.Error(), "more than the") {
		t.Fatalf("New of a 4·10¹² byte model: %v", err)
	}
	if err := train.CheckMemory("x", cfg.MemoryEstimate(1, MaxLen)); err == nil {
		t.Error("CheckMemory accepted petabytes")
	}
	small := DefaultConfig(ArchLM, 256, 256)
	if err := train.CheckMemory("x", small.MemoryEstimate(64, 256)); err != nil {
		t.Errorf("a reference-sized run is refused: %v", err)
	}
}
