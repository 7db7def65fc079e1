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

func init() { registerFamily(transformer.Family, transformerFamily{}) }

// transformerFamily trains Transformers on toy tasks and character corpora.
type transformerFamily struct{}

func (transformerFamily) kinds() []string { return []string{"transformer"} }

func (transformerFamily) configs(f *trainFlags) (any, any, error) {
	if f.task == "mnist" {
		return nil, nil, usageErrorf("-task mnist goes with -model dae or ldae")
	}
	d := transformer.DataConfig{Task: f.task, Batch: f.batch, Seed: f.seed}
	switch {
	case f.task == transformer.CharLM:
		d.Corpus, d.MaxBytes, d.SeqLen = f.data, f.maxBytes, f.seqLen
		if d.SeqLen == 0 {
			d.SeqLen = 64
		}
		if f.arch != transformer.ArchLM {
			return nil, nil, usageErrorf("-task charlm needs -arch lm")
		}
	case f.data != "":
		return nil, nil, usageErrorf("-data is for -task charlm")
	default:
		d.TaskConfig = datasets.TaskConfig{SeqLen: f.seqLen, CorruptRate: f.corruptRate, CorruptMode: f.corruptMode}
		if !slices.Contains(datasets.TaskNames(), f.task) {
			return nil, nil, usageErrorf("unknown -task %s (valid: %s, charlm, mnist)", quote.Text(f.task), strings.Join(datasets.TaskNames(), ", "))
		}
		if _, err := datasets.TaskByName(f.task, d.TaskConfig); err != nil {
			return nil, nil, usageErrorf("%v", err) // a bad -seqlen or -corrupt-* value
		}
		if f.arch == transformer.ArchLM {
			d.Layout = datasets.Causal
		}
	}
	data, err := d.Open()
	if err != nil {
		return nil, nil, err
	}
	cfg := transformer.DefaultConfig(f.arch, data.ModelVocab(f.arch), data.SeqLen())
	cfg.Kernel, cfg.Bandwidth, cfg.Positions = f.kernel, f.bandwidth, f.positions
	cfg.Layers, cfg.Dim, cfg.Heads, cfg.Hidden = f.layers, f.dmodel, f.heads, f.dff
	cfg.PostLN, cfg.Dropout = f.postLN, f.dropout
	cfg.RandomFeatures = f.randomFeatures
	if err := cfg.Validate(); err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	return cfg, data.Config, nil
}

func (transformerFamily) configTypes() (any, any) {
	return transformer.Config{}, transformer.DataConfig{}
}

func (transformerFamily) toFlags(model, data json.RawMessage, f *trainFlags) error {
	cfg, err := transformer.ParseConfig(model)
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
	f.model, f.task, f.arch = "transformer", d.Task, cfg.Arch
	f.kernel, f.bandwidth, f.positions = cfg.Kernel, cfg.Bandwidth, cfg.Positions
	f.layers, f.dmodel, f.heads, f.dff, f.postLN, f.dropout = cfg.Layers, cfg.Dim, cfg.Heads, cfg.Hidden, cfg.PostLN, cfg.Dropout
	f.randomFeatures = cfg.RandomFeatures
	f.seqLen, f.corruptRate, f.corruptMode = d.TaskConfig.SeqLen, d.TaskConfig.CorruptRate, d.TaskConfig.CorruptMode
	if d.Task == transformer.CharLM {
		f.seqLen = d.SeqLen
	}
	f.data, f.maxBytes, f.batch, f.seed = d.Corpus, d.MaxBytes, d.Batch, d.Seed
	return nil
}

func (transformerFamily) open(model, data json.RawMessage, ps *autodiff.Params) (session, error) {
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

func (s *transformerSession) describe() string {
	task := "(no data)"
	if s.data != nil {
		task = s.data.Config.Task
	}
	return fmt.Sprintf("%s, %s %d×%d, %d heads, kernel %s, bandwidth %s", task, s.cfg.Arch, s.cfg.Layers, s.cfg.Dim, s.cfg.Heads, s.cfg.Kernel, s.cfg.Bandwidth)
}

func (s *transformerSession) builder() autodiff.Builder { return s.model.Builder() }

func (s *transformerSession) dataConfig() any {
	if s.data == nil {
		return nil
	}
	return s.data.Config
}

func (s *transformerSession) trainData() (train.Data, error) {
	if s.data == nil {
		return nil, errNoData("training")
	}
	return s.data.Train(s.cfg.Arch, s.data.Config.Seed+1)
}

func (s *transformerSession) metrics(ctx context.Context, m *autodiff.Model, n int, seed uint64) (train.Metrics, error) {
	if s.data == nil {
		return nil, errNoData("evaluation")
	}
	return s.data.Metrics(ctx, m, s.cfg.Arch, n, seed)
}

func (s *transformerSession) bestMetric() string { return train.ValPrefix + transformer.MetricLoss }

func (s *transformerSession) itemsName() string {
	if s.data == nil {
		return "items"
	}
	return s.data.ItemsName()
}

func (s *transformerSession) bandwidths() map[string][]float64 {
	if s.cfg.Bandwidth == layers.BandwidthFixed {
		return nil
	}
	return s.model.Bandwidths()
}

func (s *transformerSession) finish(string, *autodiff.Model, uint64, io.Writer) error { return nil }
