package main

import (
	"encoding/json"
	"fmt"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

// dataConfig is saved in checkpoints: everything needed to rebuild the data a model was
// trained on (the vocabulary of a corpus included).
type dataConfig struct {
	Task       string              `json:"task"` // a toy task, "charlm" or "mnist"
	TaskConfig datasets.TaskConfig `json:"task_config"`
	Layout     string              `json:"layout,omitempty"` // aligned or causal (toy tasks)
	Corpus     string              `json:"corpus,omitempty"` // charlm: the text path; "" is the Go source
	MaxBytes   int64               `json:"max_bytes,omitempty"`
	Vocab      string              `json:"vocab,omitempty"` // charlm vocabulary
	SeqLen     int                 `json:"seq_len"`
	Batch      int                 `json:"batch"`
	Seed       uint64              `json:"seed"`
	MNIST      string              `json:"mnist,omitempty"` // mnist: the IDX folder; "" is the GoMNIST module
}

// session is a model with its data, rebuilt from flags or from a checkpoint.
type session struct {
	data   dataConfig
	cfg    transformer.Config
	params *autodiff.Params
	model  *transformer.Model
	run    *autodiff.Model
	task   datasets.Task
	layout datasets.Layout
	corpus *datasets.Corpus

	// Denoising autoencoders on MNIST (data.Task "mnist") instead of a Transformer.
	daeCfg dae.Config
	dae    *dae.Model
	mnist  *datasets.MNIST
}

// modelConfig is the configuration saved in checkpoints.
func (s *session) modelConfig() any {
	if s.dae != nil {
		return s.daeCfg
	}
	return s.cfg
}

// bandwidths returns the model's learned or fixed bandwidths by layer.
func (s *session) bandwidths() map[string][]float64 {
	if s.dae != nil {
		out := map[string][]float64{}
		for i, b := range s.dae.Bandwidths() {
			out[fmt.Sprintf("levels.%d.attn.bandwidth", i)] = b
		}
		return out
	}
	return s.model.Bandwidths()
}

func (d *dataConfig) layoutValue() (datasets.Layout, error) {
	switch d.Layout {
	case "", "aligned":
		return datasets.Aligned, nil
	case "causal":
		return datasets.Causal, nil
	}
	return 0, fmt.Errorf("unknown layout %q (want aligned or causal)", d.Layout)
}

// loadData builds the task or corpus of d, filling in the vocabulary of a new corpus.
func (s *session) loadData() error {
	d := &s.data
	if d.Task == "mnist" {
		return s.loadMNIST()
	}
	if d.Task == "charlm" {
		cfg := datasets.CorpusConfig{MaxBytes: d.MaxBytes}
		if d.Vocab != "" {
			v, err := datasets.VocabFromString(d.Vocab)
			if err != nil {
				return fmt.Errorf("checkpoint vocabulary: %w", err)
			}
			cfg.Vocab = v
		}
		var err error
		if d.Corpus == "" {
			s.corpus, err = datasets.GoSourceCorpus(cfg)
		} else {
			s.corpus, err = datasets.LoadCorpus(d.Corpus, cfg)
		}
		if err != nil {
			return err
		}
		d.Vocab = s.corpus.Vocab.String()
		return nil
	}
	task, err := datasets.TaskByName(d.Task, d.TaskConfig)
	if err != nil {
		return err
	}
	s.task = task
	s.layout, err = d.layoutValue()
	return err
}

func (s *session) vocab() int {
	if s.corpus != nil {
		return s.corpus.Vocab.Size()
	}
	return s.task.Vocab()
}

func (s *session) seqLen() int {
	if s.corpus != nil {
		return s.data.SeqLen
	}
	return s.layout.RowLen(s.task)
}

// build creates the model's parameters and runner.
func (s *session) build(seed uint64) error {
	ps, err := autodiff.NewParams(autodiff.Float32, seed)
	if err != nil {
		return err
	}
	m, err := transformer.New(s.cfg, ps)
	if err != nil {
		return err
	}
	s.params, s.model = ps, m
	s.run = autodiff.NewModel(ps, m.Builder(), seed+1)
	return nil
}

// fromCheckpoint rebuilds a session from a checkpoint directory.
func fromCheckpoint(path string) (*session, *train.Checkpoint, error) {
	if path == "" {
		return nil, nil, usageErrorf("missing -ckpt DIR")
	}
	ck, err := train.LoadCheckpoint(path)
	if err != nil {
		return nil, nil, err
	}
	s := &session{}
	if err := json.Unmarshal(ck.DataConfig, &s.data); err != nil {
		return nil, nil, fmt.Errorf("%s: data config: %w", ck.Dir, err)
	}
	cfg := any(&s.cfg)
	if s.data.Task == "mnist" {
		cfg = &s.daeCfg
	}
	if err := json.Unmarshal(ck.ModelConfig, cfg); err != nil {
		return nil, nil, fmt.Errorf("%s: model config: %w", ck.Dir, err)
	}
	if err := s.loadData(); err != nil {
		return nil, nil, err
	}
	build := s.build
	if s.data.Task == "mnist" {
		build = s.buildDAE
	}
	if err := build(0); err != nil {
		return nil, nil, err
	}
	if err := ck.ApplyParams(s.params); err != nil {
		return nil, nil, err
	}
	if err := s.run.SetRNGState(ck.RNG); err != nil && len(ck.RNG) > 0 {
		return nil, nil, fmt.Errorf("%s: rng state: %w", ck.Dir, err)
	}
	return s, ck, nil
}

// metrics evaluates the model on fresh validation data.
func (s *session) metrics(n int, seed uint64) (train.Metrics, error) {
	if s.dae != nil {
		return s.daeMetrics(n, seed)
	}
	if s.corpus != nil {
		batches := max(1, n/s.data.Batch)
		return transformer.CorpusMetrics(s.run, s.corpus, batches, s.data.Batch, s.data.SeqLen, seed)
	}
	if s.cfg.Arch == transformer.ArchEncDec {
		return transformer.EncDecTaskMetrics(s.run, s.task, s.task.Vocab(), n, seed)
	}
	return transformer.TaskMetrics(s.run, s.task, s.layout, n, seed)
}
