package cli

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"path/filepath"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/models/dae"
	"github.com/locusml/locus/models/transformer"
	"github.com/locusml/locus/train"
)

func init() { RegisterFamily(dae.Family, daeFamily{}) }

// daeFamily trains denoising autoencoders on MNIST: the MLP (-model dae) and the
// localized DAE (-model ldae).
type daeFamily struct{}

// mnistData is the data configuration of a DAE run.
type mnistData struct {
	Task  string `json:"task"`            // "mnist"
	MNIST string `json:"mnist,omitempty"` // the IDX folder; "" is the GoMNIST module
	Batch int    `json:"batch"`
	Seed  uint64 `json:"seed"`
}

// validate reports the first invalid field of a saved MNIST data configuration.
func (d mnistData) validate() error {
	if d.Batch <= 0 || d.Batch > transformer.MaxBatch {
		return fmt.Errorf("data config: batch %d, want 1 to %d", d.Batch, transformer.MaxBatch)
	}
	return nil
}

func (daeFamily) Kinds() []string { return []string{dae.KindMLP, dae.KindLocalized} }

func (daeFamily) Configs(f *ModelFlags) (any, any, error) {
	if f.Task != "mnist" {
		return nil, nil, usageErrorf("-task mnist goes with -model dae or ldae (got -model %s -task %s)", f.Model, f.Task)
	}
	cfg := dae.DefaultConfig()
	if f.Model == dae.KindLocalized {
		cfg = dae.DefaultLocalizedConfig()
		if f.set["kernel"] {
			k := f.Kernel
			cfg.Kernel = &k
		}
	} else if f.set["kernel"] {
		return nil, nil, usageErrorf("-kernel is for -model transformer or ldae")
	}
	if f.RandomFeatures != 0 {
		return nil, nil, usageErrorf("-random-features is for -model transformer")
	}
	cfg.Noise, cfg.Sigma = f.Noise, f.Sigma
	if err := cfg.Validate(); err != nil {
		return nil, nil, usageErrorf("%v", err)
	}
	return cfg, mnistData{Task: "mnist", MNIST: f.MNIST, Batch: f.Batch, Seed: f.Seed}, nil
}

func (daeFamily) ConfigTypes() (any, any) { return dae.Config{}, mnistData{} }

func (daeFamily) ToFlags(model, data json.RawMessage, f *ModelFlags) error {
	cfg, err := dae.ParseConfig(model)
	if err != nil {
		return err
	}
	var d mnistData
	if len(data) > 0 {
		if err := json.Unmarshal(data, &d); err != nil {
			return fmt.Errorf("data config: %w", err)
		}
		if err := d.validate(); err != nil {
			return err
		}
	}
	f.Model, f.Task, f.Noise, f.Sigma = cfg.Kind, "mnist", cfg.Noise, cfg.Sigma
	if cfg.Kernel != nil {
		f.Kernel = *cfg.Kernel
	}
	f.MNIST, f.Batch, f.Seed = d.MNIST, d.Batch, d.Seed
	return nil
}

func (daeFamily) Open(model, data json.RawMessage, ps *autodiff.Params) (Session, error) {
	cfg, err := dae.ParseConfig(model)
	if err != nil {
		return nil, err
	}
	s := &daeSession{cfg: cfg}
	if len(data) > 0 {
		if err := json.Unmarshal(data, &s.data); err != nil {
			return nil, fmt.Errorf("data config: %w", err)
		}
		if err := s.data.validate(); err != nil {
			return nil, err
		}
		dir := s.data.MNIST
		if dir == "" {
			if dir, err = datasets.DefaultMNISTDir(); err != nil {
				return nil, err
			}
		}
		if s.mnist, err = datasets.LoadMNIST(dir); err != nil {
			return nil, err
		}
	}
	if s.model, err = dae.New(cfg, ps); err != nil {
		return nil, err
	}
	return s, nil
}

type daeSession struct {
	cfg   dae.Config
	model *dae.Model
	data  mnistData
	mnist *datasets.MNIST // nil without a data configuration
}

func (s *daeSession) Describe() string { return "mnist, " + s.cfg.String() }

func (s *daeSession) Builder() autodiff.Builder { return s.model.Builder() }

func (s *daeSession) DataConfig() any {
	if s.mnist == nil {
		return nil
	}
	return s.data
}

// DataDigest returns the SHA-256 of the MNIST images and labels (dataDigester).
func (s *daeSession) DataDigest() []byte {
	if s.mnist == nil {
		return nil
	}
	h := sha256.New()
	for _, imgs := range []*datasets.Images{s.mnist.Train, s.mnist.Test} {
		var b []byte
		b = binary.LittleEndian.AppendUint64(b, uint64(imgs.N))
		b = binary.LittleEndian.AppendUint64(b, uint64(imgs.Rows))
		b = binary.LittleEndian.AppendUint64(b, uint64(imgs.Cols))
		for _, l := range imgs.Labels {
			b = binary.LittleEndian.AppendUint64(b, uint64(l))
		}
		h.Write(b)
		b = b[:0]
		for i, p := range imgs.Pixels {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(p))
			if len(b) == 1<<16 || i == len(imgs.Pixels)-1 {
				h.Write(b)
				b = b[:0]
			}
		}
	}
	return h.Sum(nil)
}

// WholeBatches reports whether the model's batches cannot be split (wholeBatcher).
func (s *daeSession) WholeBatches() bool { return s.model.WholeBatches() }

func (s *daeSession) TrainData() (train.Data, error) {
	if s.mnist == nil {
		return nil, errNoData("training")
	}
	return dae.NewData(s.model, s.mnist.Train, s.data.Batch, s.data.Seed+1)
}

// Metrics is the test MSE of the model's output against the clean image, for clean
// inputs and for inputs corrupted by the model's noise, over the first n test images.
func (s *daeSession) Metrics(ctx context.Context, _ *autodiff.Model, n int, seed uint64) (train.Metrics, error) {
	if s.mnist == nil {
		return nil, errNoData("evaluation")
	}
	imgs := s.mnist.Test
	n = min(n, imgs.N)
	return dae.Metrics(ctx, s.model, imgs.Pixels[:n*imgs.Rows*imgs.Cols], s.model.Noise(), seed)
}

func (s *daeSession) BestMetric() string { return train.ValPrefix + dae.MetricMSEClean }

func (s *daeSession) ItemsName() string { return "samples" }

// Bandwidths returns the localized DAE's Bandwidths under its parameter names.
func (s *daeSession) Bandwidths() map[string][]float64 {
	out := map[string][]float64{}
	for i, b := range s.model.Bandwidths() {
		out[fmt.Sprintf("level.%d.attn.bandwidth", i)] = b
	}
	return out
}

// Finish writes a PNG grid of clean / noisy / denoised test digits into dir.
func (s *daeSession) Finish(dir string, _ *autodiff.Model, seed uint64, stdout io.Writer) error {
	if s.mnist == nil {
		return nil
	}
	imgs := s.mnist.Test
	n := min(16, imgs.N)
	dim := s.model.Dim()
	clean := imgs.Pixels[:n*dim]
	noisy := make([]float32, len(clean))
	s.model.Noise().Corrupt(noisy, clean, datasets.NewRand(seed))
	den := make([]float32, len(clean))
	if err := s.model.Denoise(den, noisy); err != nil {
		return err
	}
	rows := func(x []float32) [][]float32 {
		out := make([][]float32, n)
		for i := range out {
			out[i] = x[i*dim : (i+1)*dim]
		}
		return out
	}
	path := filepath.Join(dir, "denoised.png")
	title := fmt.Sprintf("%s: %s", filepath.Base(filepath.Clean(dir)), s.Describe())
	png, err := renderDenoised(title, rows(clean), rows(noisy), rows(den))
	if err == nil {
		err = writeFilesAtomic(dir, map[string][]byte{"denoised.png": png})
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	fmt.Fprintf(stdout, "denoised test digits: %s\n", path)
	return nil
}
