package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func init() { RegisterFamily(transformer.Family, transformerFamily{}) }

// transformerFamily trains Transformers on toy tasks and character corpora.
type transformerFamily struct{}

func (transformerFamily) Kinds() []string { return []string{"transformer"} }

func (transformerFamily) Configs(f *ModelFlags) (any, any, error) {
	if f.Task == "mnist" {
		return nil, nil, usageErrorf("-task mnist goes with -model dae or ldae")
	}
	d := transformer.DataConfig{Task: f.Task, Batch: f.Batch, Seed: f.Seed}
	switch {
	case f.Task == transformer.CharLM:
		d.Corpus, d.MaxBytes, d.SeqLen = f.Data, f.MaxBytes, f.SeqLen
		if d.SeqLen == 0 {
			d.SeqLen = 64
		}
		if f.Arch != transformer.ArchLM {
			return nil, nil, usageErrorf("-task charlm needs -arch lm")
		}
		if d.ValFraction = f.ValFraction; !(d.ValFraction >= 0 && d.ValFraction < 1) {
			return nil, nil, usageErrorf("-val-fraction %g: want a fraction in (0, 1), e.g. 0.1 (leave it out for every tenth 64 KiB block)", f.ValFraction)
		}
	case f.ValFraction != 0:
		return nil, nil, usageErrorf("-val-fraction is for -task charlm")
	case f.Data != "":
		return nil, nil, usageErrorf("-data is for -task charlm")
	default:
		d.TaskConfig = datasets.TaskConfig{SeqLen: f.SeqLen, CorruptRate: f.CorruptRate, CorruptMode: f.CorruptMode}
		if !slices.Contains(datasets.TaskNames(), f.Task) {
			return nil, nil, usageErrorf("unknown -task %s (valid: %s, charlm, mnist)", quote.Text(f.Task), strings.Join(datasets.TaskNames(), ", "))
		}
		if _, err := datasets.TaskByName(f.Task, d.TaskConfig); err != nil {
			return nil, nil, usageErrorf("%v", err) // a bad -seqlen or -corrupt-* value
		}
		if f.Arch == transformer.ArchLM {
			d.Layout = datasets.Causal
		}
	}
	data, err := d.Open()
	if err != nil {
		return nil, nil, err
	}
	cfg := transformer.DefaultConfig(f.Arch, data.ModelVocab(f.Arch), data.SeqLen())
	cfg.Kernel, cfg.Bandwidth, cfg.Positions = f.Kernel, f.Bandwidth, f.Positions
	cfg.Layers, cfg.Dim, cfg.Heads, cfg.Hidden = f.Layers, f.DModel, f.Heads, f.DFF
	cfg.PostLN, cfg.Dropout = f.PostLN, f.Dropout
	cfg.Tied, cfg.NoBias, cfg.Activation, cfg.Init = f.Tie, !f.Bias, f.Activation, f.Init
	cfg.RandomFeatures = f.RandomFeatures
	if err := cfg.Validate(); err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	return cfg, data.Config, nil
}

func (transformerFamily) ConfigTypes() (any, any) {
	return transformer.Config{}, transformer.DataConfig{}
}

func (transformerFamily) ToFlags(model, data json.RawMessage, f *ModelFlags) error {
	cfg, err := parseLeavingVocab(model)
	if err != nil {
		return err
	}
	var d transformer.DataConfig
	if len(data) > 0 {
		if err := train.DecodeConfig(data, &d); err != nil {
			return fmt.Errorf("data config: %w", err)
		}
		if err := d.Validate(); err != nil {
			return err
		}
	}
	f.Model, f.Task, f.Arch = "transformer", d.Task, cfg.Arch
	f.Kernel, f.Bandwidth, f.Positions = cfg.Kernel, cfg.Bandwidth, cfg.Positions
	f.Layers, f.DModel, f.Heads, f.DFF, f.PostLN, f.Dropout = cfg.Layers, cfg.Dim, cfg.Heads, cfg.Hidden, cfg.PostLN, cfg.Dropout
	f.RandomFeatures = cfg.RandomFeatures
	f.Tie, f.Bias, f.Activation, f.Init = cfg.Tied, !cfg.NoBias, cfg.Activation, cfg.Init
	f.SeqLen, f.CorruptRate, f.CorruptMode = d.TaskConfig.SeqLen, d.TaskConfig.CorruptRate, d.TaskConfig.CorruptMode
	if d.Task == transformer.CharLM {
		f.SeqLen = d.SeqLen
	}
	f.Data, f.MaxBytes, f.Batch, f.Seed = d.Corpus, d.MaxBytes, d.Batch, d.Seed
	f.ValFraction = d.ValFraction
	return nil
}

func (transformerFamily) Open(model, data json.RawMessage, ps *autodiff.Params) (Session, error) {
	cfg, err := transformer.ParseConfig(model)
	if err != nil {
		return nil, err
	}
	s := &transformerSession{cfg: cfg}
	if len(data) > 0 {
		var d transformer.DataConfig
		if err := train.DecodeConfig(data, &d); err != nil {
			return nil, fmt.Errorf("data config: %w", err)
		}
		if s.data, err = d.Open(); err != nil {
			return nil, err
		}
		if err := s.data.Check(cfg); err != nil {
			return nil, fmt.Errorf("model and data do not fit: %w", err)
		}
	}
	if s.model, err = transformer.New(cfg, ps); err != nil {
		return nil, err
	}
	return s, nil
}

type transformerSession struct {
	cfg   transformer.Config
	model *transformer.Model
	data  *transformer.Data // nil without a data configuration
}

func (s *transformerSession) Describe() string {
	task := "(no data)"
	if s.data != nil {
		task = s.data.Config.Task
	}
	return fmt.Sprintf("%s, %s %d×%d, %d heads, kernel %s, bandwidth %s", task, s.cfg.Arch, s.cfg.Layers, s.cfg.Dim, s.cfg.Heads, s.cfg.Kernel, s.cfg.Bandwidth)
}

func (s *transformerSession) Builder() autodiff.Builder { return s.model.Builder() }

func (s *transformerSession) DataConfig() any {
	if s.data == nil {
		return nil
	}
	return s.data.Config
}

func (s *transformerSession) TrainData() (train.Data, error) {
	if s.data == nil {
		return nil, errNoData("training")
	}
	return s.data.Train(s.cfg.Arch, s.data.Config.Seed+1)
}

func (s *transformerSession) Metrics(ctx context.Context, m *autodiff.Model, n int, seed uint64) (train.Metrics, error) {
	if s.data == nil {
		return nil, errNoData("evaluation")
	}
	return s.data.Metrics(ctx, m, s.cfg.Arch, n, seed)
}

// AtLength is LengthSession's: the data at length t (transformer.Data.AtLength: a
// corpus's windows, a toy task's length) and the model for its rows (Model.AtLength,
// which refuses rows past a learned position table).
func (s *transformerSession) AtLength(t int) (Session, error) {
	if s.data == nil {
		return nil, errNoData("evaluation")
	}
	d, err := s.data.AtLength(t)
	if err != nil {
		return nil, err
	}
	m, err := s.model.AtLength(d.SeqLen())
	if err != nil {
		return nil, err
	}
	if err := d.Check(m.Config); err != nil {
		return nil, err
	}
	return &transformerSession{cfg: m.Config, model: m, data: d}, nil
}

func (s *transformerSession) BestMetric() string { return train.ValPrefix + transformer.MetricLoss }

func (s *transformerSession) ItemsName() string {
	if s.data == nil {
		return "items"
	}
	return s.data.ItemsName()
}

func (s *transformerSession) Bandwidths() map[string][]float64 {
	if s.cfg.Bandwidth == layers.BandwidthFixed {
		return nil
	}
	return s.model.Bandwidths()
}

func (s *transformerSession) Finish(string, *autodiff.Model, uint64, io.Writer) error { return nil }

// parseLeavingVocab is transformer.ParseConfig for a saved configuration that may leave
// out its vocabulary, as a recipe does: the vocabulary is the data's, which no flag sets
// (the rebuilt configuration takes it from the data). An explicit vocab is checked.
func parseLeavingVocab(model json.RawMessage) (transformer.Config, error) {
	var keys map[string]json.RawMessage
	if json.Unmarshal(model, &keys) == nil && keys != nil {
		if _, ok := keys["vocab"]; !ok {
			keys["vocab"] = json.RawMessage("1")
			withVocab, err := json.Marshal(keys)
			if err != nil {
				return transformer.Config{}, err
			}
			cfg, err := transformer.ParseConfig(withVocab)
			cfg.Vocab = 0
			return cfg, err
		}
	}
	return transformer.ParseConfig(model)
}
