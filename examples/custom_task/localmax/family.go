package localmax

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"

	"gorgonia.org/tensor"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/cli"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/layers"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func init() { cli.RegisterFamily(Family, family{}) }

// DefaultKernel is the kernel when -kernel is not given: a window of 2·Radius+1
// positions (|t − s| < Radius+1), and in it the exponential kernel, whose scores can
// learn to favour the keys holding large symbols.
var DefaultKernel = layers.MustParseKernelSpec("exponential * window(" + strconv.Itoa(Radius+1) + ")")

// family tells the locus command line how flags, checkpoints and data make a kattn
// model. Its data is a transformer.DataConfig: any registered task, in the aligned layout.
type family struct{}

func (family) Kinds() []string { return []string{Family} }

func (family) Configs(f *cli.ModelFlags) (any, any, error) {
	d := transformer.DataConfig{Task: f.Task, TaskConfig: datasets.TaskConfig{SeqLen: f.SeqLen}, Batch: f.Batch, Seed: f.Seed}
	data, err := d.Open()
	if err != nil {
		return nil, nil, err
	}
	cfg := Config{Vocab: data.Vocab(), Dim: f.DModel, Heads: f.Heads, Kernel: f.Kernel, Bandwidth: f.Bandwidth}
	if !f.Given("kernel") {
		cfg.Kernel = DefaultKernel
	}
	return cfg, data.Config, cfg.Validate()
}

func (family) ToFlags(model, data json.RawMessage, f *cli.ModelFlags) error {
	cfg, err := train.ParseConfig[Config](Family, model)
	if err != nil {
		return err
	}
	var d transformer.DataConfig
	if len(data) > 0 {
		if err := train.DecodeConfig(data, &d); err != nil {
			return fmt.Errorf("data config: %w", err)
		}
	}
	f.Model, f.Task, f.SeqLen, f.Batch, f.Seed = Family, d.Task, d.TaskConfig.SeqLen, d.Batch, d.Seed
	f.DModel, f.Heads, f.Kernel, f.Bandwidth = cfg.Dim, cfg.Heads, cfg.Kernel, cfg.Bandwidth
	return nil
}

func (family) ConfigTypes() (any, any) { return Config{}, transformer.DataConfig{} }

func (family) Open(model, data json.RawMessage, ps *autodiff.Params) (cli.Session, error) {
	cfg, err := train.ParseConfig[Config](Family, model)
	if err != nil {
		return nil, err
	}
	s := &session{}
	if len(data) > 0 {
		var d transformer.DataConfig
		if err := train.DecodeConfig(data, &d); err != nil {
			return nil, fmt.Errorf("data config: %w", err)
		}
		if s.data, err = d.Open(); err != nil {
			return nil, err
		}
		if s.data.Vocab() != cfg.Vocab {
			return nil, fmt.Errorf("model and data do not fit: vocab %d, the task's %d", cfg.Vocab, s.data.Vocab())
		}
	}
	if s.model, err = New(cfg, ps); err != nil {
		return nil, err
	}
	return s, nil
}

// session is a kattn model with its data (nil when opened without).
type session struct {
	model *Model
	data  *transformer.Data
}

var (
	_ cli.KernelSession    = (*session)(nil)
	_ cli.AttentionSession = (*session)(nil)
)

func (s *session) Describe() string {
	return fmt.Sprintf("kattn, %d wide, %d heads, kernel %s, bandwidth %s", s.model.Config.Dim, s.model.Config.Heads, s.model.Config.Kernel, s.model.Config.Bandwidth)
}

func (s *session) Builder() autodiff.Builder { return s.model.Builder() }

func (s *session) DataConfig() any {
	if s.data == nil {
		return nil
	}
	return s.data.Config
}

func (s *session) TrainData() (train.Data, error) {
	if s.data == nil {
		return nil, fmt.Errorf("the checkpoint has no data configuration")
	}
	return s.data.Train(transformer.ArchEncoder, s.data.Config.Seed+1)
}

func (s *session) Metrics(ctx context.Context, m *autodiff.Model, n int, seed uint64) (train.Metrics, error) {
	if s.data == nil {
		return nil, fmt.Errorf("the checkpoint has no data configuration")
	}
	return s.data.Metrics(ctx, m, transformer.ArchEncoder, n, seed)
}

func (s *session) BestMetric() string { return train.ValPrefix + transformer.MetricLoss }
func (s *session) ItemsName() string  { return "sequences" }

func (s *session) Bandwidths() map[string][]float64 {
	if s.model.Config.Bandwidth == layers.BandwidthFixed {
		return nil
	}
	return s.model.Bandwidths()
}

func (s *session) Finish(string, *autodiff.Model, uint64, io.Writer) error { return nil }

// Kernel and LayerBandwidths let inspect -kernels draw the kernel at each head's bandwidth.
func (s *session) Kernel() (layers.ContentKernel, error) { return s.model.Config.Kernel.Value(), nil }

func (s *session) LayerBandwidths(*autodiff.Model) (map[string][]float64, error) {
	out := map[string][]float64{}
	for k, v := range s.model.Bandwidths() {
		out[strings.TrimSuffix(k, ".bandwidth")] = v
	}
	return out, nil
}

// AttentionInput gives inspect -attention its example: -input as symbols separated by
// spaces ("3 1 4 1 5"), or the example-th one drawn from the task.
func (s *session) AttentionInput(input string, example int) (*cli.AttentionInput, error) {
	if s.data == nil {
		return nil, fmt.Errorf("the checkpoint has no data configuration")
	}
	var ids []int
	if input != "" {
		for _, f := range strings.Fields(input) {
			v, err := strconv.Atoi(f)
			if err != nil || v < 0 || v >= s.model.Config.Vocab {
				return nil, fmt.Errorf("-input: %q is not a symbol 0..%d", f, s.model.Config.Vocab-1)
			}
			ids = append(ids, v)
		}
	} else {
		ids = s.data.Task.Sample(rand.New(rand.NewPCG(12345, uint64(example)))).Input
	}
	labels := make([]string, len(ids))
	for i, v := range ids {
		labels[i] = strconv.Itoa(v)
	}
	return &cli.AttentionInput{
		Text:   strings.Join(labels, " "),
		Inputs: map[string]*tensor.Dense{transformer.InputIDs: tensor.New(tensor.WithShape(1, len(ids)), tensor.WithBacking(ids))},
		Labels: func(string) ([]string, []string) { return labels, labels },
	}, nil
}
