package train

import (
	"fmt"

	"github.com/locusml/locus/autodiff"
)

// Metadata keys of a model exported by ExportModel.
const (
	MetaFormat = "format"       // "locus"
	MetaFamily = "locus_family" // the model family, as in Checkpoint.Family
	MetaConfig = "locus_config" // the model configuration's JSON, as in Checkpoint.ModelConfig
	MetaStep   = "step"         // the training step of the checkpoint
)

// ExportModel writes the checkpoint's parameters to path as a safetensors file under
// Locus's own parameter names, with the model family and configuration in the metadata,
// so that LoadModel rebuilds the model from the file alone. The write is atomic.
func ExportModel(path string, ck *Checkpoint) error {
	meta := map[string]string{
		MetaFormat: "locus",
		MetaFamily: ck.Family,
		MetaConfig: string(ck.ModelConfig),
		MetaStep:   fmt.Sprint(ck.Step),
	}
	return ExportSafetensors(path, ck.Params, meta)
}

// LoadModel rebuilds a model from a safetensors file written by ExportModel: the
// registered family of its metadata builds the model, whose parameters (of the given
// dtype) then take the file's values. Loaded.Checkpoint holds the family, configuration,
// step and tensors.
func LoadModel(path string, dtype autodiff.Dtype) (*Loaded, error) {
	ts, meta, err := ReadSafetensors(path)
	if err != nil {
		return nil, err
	}
	if meta[MetaFamily] == "" || meta[MetaConfig] == "" {
		return nil, fmt.Errorf("load model %s: no %s and %s metadata: not written by Locus's safetensors export", path, MetaFamily, MetaConfig)
	}
	ck := &Checkpoint{Family: meta[MetaFamily], ModelConfig: []byte(meta[MetaConfig]), Params: ts}
	fmt.Sscan(meta[MetaStep], &ck.Step)
	ps, err := autodiff.NewParams(dtype, 0)
	if err != nil {
		return nil, err
	}
	m, err := BuildModel(ck.Family, ck.ModelConfig, ps)
	if err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	if err := ck.ApplyParams(ps); err != nil {
		return nil, fmt.Errorf("load model %s: %w", path, err)
	}
	return &Loaded{Checkpoint: ck, Family: ck.Family, Model: m, Params: ps}, nil
}
