package train

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"unicode"

	"github.com/locusml/locus/autodiff"
	"github.com/locusml/locus/internal/quote"
	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/optim"
	"gorgonia.org/tensor"
)

// LocusVersion is the version of Locus recorded in checkpoints.
const LocusVersion = "0.1.0-dev"

// FormatVersion is the version of the checkpoint layout written by SaveCheckpoint.
// LoadCheckpoint refuses checkpoints from a newer format.
const FormatVersion = 1

// The names of the files and folders of a checkpoint and of a run directory.
const (
	ModelFile     = "model.safetensors"     // the parameters, under their names
	OptimizerFile = "optimizer.safetensors" // the optimizer's State
	MetaFile      = "checkpoint.json"       // everything else, and the files' checksums
	LatestFile    = "LATEST"                // in a run directory: the name of the latest checkpoint
	BestDir       = "best"                  // in a run directory: the checkpoint with the best metric
	MetricsFile   = "metrics.jsonl"         // in a run directory: one Record per line
	PlotFile      = "loss.png"              // in a run directory: the loss curves
	// BandwidthPlotFile, in a run directory, draws the bandwidths that Loop.Observe
	// records (metrics named BandwidthPrefix + "<layer>.head<j>[.<statistic>]").
	BandwidthPlotFile = "bandwidths.png"
)

// Checkpoint is everything needed to resume training, or to rebuild a trained model:
// weights, optimizer state, configuration and the position of every random stream.
//
// On disk a checkpoint is a directory holding ModelFile, OptimizerFile (absent when
// Optimizer is nil) and MetaFile. The tensors belong to the Checkpoint: SaveCheckpoint
// only reads them and LoadCheckpoint allocates fresh ones.
type Checkpoint struct {
	// Step is the number of training steps completed.
	Step int
	// Params are the model's parameter values by parameter name (see ParamTensors).
	Params map[string]*tensor.Dense
	// Optimizer is the optimizer's State, or nil.
	Optimizer map[string]*tensor.Dense
	// Family names the model family (RegisterFamily) that ModelConfig configures, so
	// that Load can rebuild the model; empty for checkpoints of unregistered models.
	Family string
	// ModelConfig and DataConfig are the JSON of the configurations needed to rebuild
	// the model and its data (the vocabulary, for instance), or nil. TrainConfig holds
	// the training settings (learning rate, steps, ...) of the run, or nil.
	ModelConfig json.RawMessage
	DataConfig  json.RawMessage
	TrainConfig json.RawMessage
	// RNG is the model's dropout generator state (autodiff.Model.RNGState).
	RNG []byte
	// DataState is the data's position (Data.State).
	DataState json.RawMessage
	// History holds the metrics records of this step (the run's history is its
	// MetricsFile; checkpoints of older versions hold all of it).
	History []Record
	// Loop is the training loop's own bookkeeping; other code can ignore it.
	Loop LoopState
	// Versions says what wrote the checkpoint. SaveCheckpoint fills it in.
	Versions Versions
	// Dir is the directory the checkpoint was loaded from; SaveCheckpoint ignores it.
	Dir string
}

// Versions records what wrote a checkpoint.
type Versions struct {
	Format int    `json:"format"` // FormatVersion
	Locus  string `json:"locus"`  // LocusVersion
	Go     string `json:"go"`     // runtime.Version()
}

// LoopState is the training loop's bookkeeping saved with a checkpoint so that a resumed
// run logs, tracks the best metric and stops early exactly as an uninterrupted one.
type LoopState struct {
	BestMetric     string  `json:"best_metric,omitempty"`      // Loop.Best
	BestMode       string  `json:"best_mode,omitempty"`        // Loop.BestMode
	BestStep       int     `json:"best_step,omitempty"`        // step of the best value; 0 before any
	BestValue      float64 `json:"best_value,omitempty"`       // the best value of BestMetric so far
	EvalsSinceBest int     `json:"evals_since_best,omitempty"` // evaluations without improvement
	WindowLoss     float64 `json:"window_loss,omitempty"`      // sum of the losses not yet logged
	WindowSteps    int     `json:"window_steps,omitempty"`     // number of steps not yet logged
}

// checkpointJSON is the layout of MetaFile.
type checkpointJSON struct {
	Versions    Versions            `json:"versions"`
	Step        int                 `json:"step"`
	Family      string              `json:"model_family,omitempty"`
	ModelConfig json.RawMessage     `json:"model_config,omitempty"`
	DataConfig  json.RawMessage     `json:"data_config,omitempty"`
	TrainConfig json.RawMessage     `json:"train_config,omitempty"`
	RNG         []byte              `json:"rng,omitempty"`
	DataState   json.RawMessage     `json:"data_state,omitempty"`
	Files       map[string]fileInfo `json:"files"`
	Loop        LoopState           `json:"loop"`
	History     []Record            `json:"history,omitempty"`
}

// marshal encodes m indented, but with one history record per line, so that the file
// stays readable after thousands of records.
func (m checkpointJSON) marshal() ([]byte, error) {
	history := m.History
	m.History = nil
	b, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return nil, err
	}
	if len(history) == 0 {
		return append(b, '\n'), nil
	}
	b = bytes.TrimSuffix(bytes.TrimRight(b, "\n"), []byte("}"))
	b = bytes.TrimRight(b, "\n")
	b = append(b, ",\n  \"history\": [\n"...)
	for i, r := range history {
		rb, err := json.Marshal(r)
		if err != nil {
			return nil, err
		}
		b = append(b, "    "...)
		b = append(b, rb...)
		if i < len(history)-1 {
			b = append(b, ',')
		}
		b = append(b, '\n')
	}
	return append(b, "  ]\n}\n"...), nil
}

// fileInfo lets LoadCheckpoint tell a truncated or corrupted tensor file.
type fileInfo struct {
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ParamTensors returns the values of ps by parameter name, for Checkpoint.Params or
// ExportSafetensors. The tensors are the parameters' own, not copies.
func ParamTensors(ps *autodiff.Params) map[string]*tensor.Dense {
	m := make(map[string]*tensor.Dense, ps.Len())
	for _, p := range ps.List() {
		m[p.Name()] = p.Value()
	}
	return m
}

// SaveCheckpoint writes ck to the directory dir, creating or replacing it atomically:
// the files are written and synced in a temporary directory next to dir, which is then
// renamed to dir. A crash at any point leaves either the previous checkpoint or the new
// one, never a mix or a partial file under dir.
func SaveCheckpoint(dir string, ck *Checkpoint) error {
	if err := saveCheckpoint(dir, ck); err != nil {
		return fmt.Errorf("save checkpoint %s: %w", dir, err)
	}
	return nil
}

func saveCheckpoint(dir string, ck *Checkpoint) error {
	if ck == nil {
		return errors.New("nil checkpoint")
	}
	if ck.Step < 0 {
		return fmt.Errorf("negative step %d", ck.Step)
	}
	if len(ck.Params) == 0 {
		return errors.New("no parameters")
	}
	meta := checkpointJSON{
		Versions:    Versions{Format: FormatVersion, Locus: LocusVersion, Go: runtime.Version()},
		Step:        ck.Step,
		Family:      ck.Family,
		ModelConfig: ck.ModelConfig,
		DataConfig:  ck.DataConfig,
		TrainConfig: ck.TrainConfig,
		RNG:         ck.RNG,
		DataState:   ck.DataState,
		Files:       map[string]fileInfo{},
		Loop:        ck.Loop,
		History:     ck.History,
	}
	for _, raw := range []json.RawMessage{ck.ModelConfig, ck.DataConfig, ck.TrainConfig, ck.DataState} {
		if len(raw) > 0 && !json.Valid(raw) {
			return fmt.Errorf("invalid JSON in configuration or data state: %.80s", raw)
		}
	}
	tensorMeta := map[string]string{"locus_version": LocusVersion, "step": fmt.Sprint(ck.Step)}
	return writeDirAtomic(dir, func(tmp string) error {
		files := []struct {
			name    string
			tensors map[string]*tensor.Dense
		}{{ModelFile, ck.Params}, {OptimizerFile, ck.Optimizer}}
		for _, f := range files {
			if f.tensors == nil {
				continue
			}
			h := sha256.New()
			var size int64
			err := writeFileSynced(filepath.Join(tmp, f.name), func(w io.Writer) error {
				n, err := writeSafetensors(io.MultiWriter(w, h), f.tensors, tensorMeta)
				size = n
				return err
			})
			if err != nil {
				return fmt.Errorf("%s: %w", f.name, err)
			}
			meta.Files[f.name] = fileInfo{Size: size, SHA256: hex.EncodeToString(h.Sum(nil))}
		}
		b, err := meta.marshal()
		if err != nil {
			return fmt.Errorf("%s: %w", MetaFile, err)
		}
		if err := writeFileSynced(filepath.Join(tmp, MetaFile), func(w io.Writer) error {
			_, err := w.Write(b)
			return err
		}); err != nil {
			return fmt.Errorf("%s: %w", MetaFile, err)
		}
		return nil
	})
}

// Size limits of the files LoadCheckpoint reads: bigger files are refused before they are
// read, so that a damaged or hostile checkpoint cannot exhaust memory.
const (
	MaxMetaBytes   = 256 << 20 // MetaFile (the history included)
	MaxTensorBytes = 64 << 30  // ModelFile, OptimizerFile
	maxLatestBytes = 4 << 10   // LatestFile
)

// LoadCheckpoint reads a checkpoint. path is either a checkpoint directory (holding
// MetaFile) or a run directory, whose LatestFile names the checkpoint to load. Every
// tensor file is checked against the size and SHA-256 recorded in MetaFile, so a
// truncated or corrupted file is an error that names it. Only regular files are read
// (a FIFO or a symlink to a device is refused), each up to its size limit, and weights
// or optimizer state that are not finite are refused with the tensor's name.
func LoadCheckpoint(path string) (*Checkpoint, error) {
	dir, err := resolveCheckpointDir(path)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %s: %w", path, err)
	}
	metaPath := filepath.Join(dir, MetaFile)
	b, err := regularfile.ReadFile(metaPath, MaxMetaBytes)
	if err != nil {
		return nil, fmt.Errorf("load checkpoint %s: %w", dir, err)
	}
	var meta checkpointJSON
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&meta); err != nil {
		return nil, fmt.Errorf("load checkpoint %s: invalid JSON: %w", metaPath, err)
	}
	if meta.Versions.Format < 1 || meta.Versions.Format > FormatVersion {
		return nil, fmt.Errorf("load checkpoint %s: format version %d, this Locus (%s) reads versions 1 to %d",
			metaPath, meta.Versions.Format, LocusVersion, FormatVersion)
	}
	if meta.Step < 0 {
		return nil, fmt.Errorf("load checkpoint %s: negative step %d", metaPath, meta.Step)
	}
	ck := &Checkpoint{
		Step:        meta.Step,
		Family:      meta.Family,
		ModelConfig: meta.ModelConfig,
		DataConfig:  meta.DataConfig,
		TrainConfig: meta.TrainConfig,
		RNG:         meta.RNG,
		DataState:   meta.DataState,
		History:     meta.History,
		Loop:        meta.Loop,
		Versions:    meta.Versions,
		Dir:         dir,
	}
	if _, ok := meta.Files[ModelFile]; !ok {
		return nil, fmt.Errorf("load checkpoint %s: %s lists no %s", metaPath, MetaFile, ModelFile)
	}
	for name, info := range meta.Files {
		var dst *map[string]*tensor.Dense
		switch name {
		case ModelFile:
			dst = &ck.Params
		case OptimizerFile:
			dst = &ck.Optimizer
		default:
			return nil, fmt.Errorf("load checkpoint %s: unknown file %s", metaPath, quote.Text(name))
		}
		file := filepath.Join(dir, name)
		ts, err := readChecked(file, info)
		if err != nil {
			return nil, fmt.Errorf("load checkpoint %s: %w", file, err)
		}
		*dst = ts
	}
	return ck, nil
}

// readChecked reads a safetensors file after checking its size and checksum.
func readChecked(file string, info fileInfo) (map[string]*tensor.Dense, error) {
	f, size, err := regularfile.Open(file, MaxTensorBytes)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, errors.New("file is missing")
		}
		var pe *fs.PathError
		if errors.As(err, &pe) {
			return nil, pe.Err // the caller names the file
		}
		return nil, err
	}
	defer f.Close()
	if size != info.Size {
		what := "corrupted"
		if size < info.Size {
			what = "truncated"
		}
		return nil, fmt.Errorf("%s file: %d bytes, %s records %d", what, size, MetaFile, info.Size)
	}
	buf := make([]byte, size)
	if _, err := io.ReadFull(f, buf); err != nil {
		return nil, fmt.Errorf("read: %w", err)
	}
	sum := sha256.Sum256(buf)
	if got := hex.EncodeToString(sum[:]); got != info.SHA256 {
		return nil, fmt.Errorf("corrupted file: SHA-256 %s does not match %s recorded in %s", got[:12], shortHash(info.SHA256), MetaFile)
	}
	ts, _, err := decodeSafetensors(buf)
	if err != nil {
		return nil, err
	}
	if err := checkFinite(ts); err != nil {
		return nil, fmt.Errorf("damaged values: %w", err)
	}
	return ts, nil
}

func shortHash(h string) string {
	if len(h) > 12 {
		return h[:12]
	}
	return h
}

// resolveCheckpointDir turns a run or checkpoint directory into a checkpoint directory.
func resolveCheckpointDir(path string) (string, error) {
	if _, err := os.Stat(filepath.Join(path, MetaFile)); err == nil {
		return path, nil
	}
	b, err := regularfile.ReadFile(filepath.Join(path, LatestFile), maxLatestBytes)
	if err == nil {
		name := strings.TrimSpace(string(b))
		if name == "" || name != filepath.Base(name) || name == "." || name == ".." || strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) }) {
			return "", fmt.Errorf("%s holds %s, not the name of a checkpoint directory", LatestFile, quote.Text(name))
		}
		return filepath.Join(path, name), nil
	}
	if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if old := findOld(path); old != "" {
			return old, nil // an interrupted replace moved it aside
		}
		return "", err
	}
	return "", fmt.Errorf("neither %s nor %s found: not a checkpoint or run directory", MetaFile, LatestFile)
}

// file returns the path of one of the checkpoint's files, for error messages.
func (ck *Checkpoint) file(name string) string {
	if ck.Dir == "" {
		return name
	}
	return filepath.Join(ck.Dir, name)
}

// ApplyParams copies the checkpoint's parameter values into ps. Every parameter of ps
// must be in the checkpoint with its shape, and the checkpoint may hold no other
// tensor; Float32 and Float64 values are converted to the parameters' dtype. The error,
// one line, lists the first mismatches and counts the others, naming the file, the
// tensor and the shapes. On error ps is unchanged.
func (ck *Checkpoint) ApplyParams(ps *autodiff.Params) error {
	file := ck.file(ModelFile)
	var errs []string
	fail := func(format string, args ...any) {
		errs = append(errs, fmt.Sprintf(format, args...))
	}
	for _, p := range ps.List() {
		t, ok := ck.Params[p.Name()]
		switch {
		case !ok || t == nil:
			fail("tensor %q is missing (parameter shape %v): the checkpoint is of another model", p.Name(), p.Shape())
		case !slices.Equal([]int(t.Shape()), p.Shape()): // not Shape.Eq, for which [1 8] is [8]
			fail("tensor %q: shape %s does not match parameter shape %v", p.Name(), shapeString(t.Shape()), p.Shape())
		case t.Dtype() != tensor.Float32 && t.Dtype() != tensor.Float64:
			fail("tensor %q: dtype %v, want float32 or float64", p.Name(), t.Dtype())
		}
	}
	for _, name := range slices.Sorted(maps.Keys(ck.Params)) {
		if ps.Get(name) == nil {
			var shape string
			if t := ck.Params[name]; t != nil {
				shape = shapeString(t.Shape())
			}
			fail("unexpected tensor %q (shape %s): the model has no such parameter", name, shape)
		}
	}
	if len(errs) > 0 {
		// One line: the first few problems, and how many more.
		const shown = 3
		if len(errs) > shown {
			errs = append(errs[:shown], fmt.Sprintf("and %d more", len(errs)-shown))
		}
		return fmt.Errorf("load checkpoint %s: %s", file, strings.Join(errs, "; "))
	}
	for _, p := range ps.List() {
		if err := p.Set(ck.Params[p.Name()]); err != nil {
			return fmt.Errorf("load checkpoint %s: %w", file, err)
		}
	}
	return nil
}

// ApplyOptimizer loads the checkpoint's optimizer state into opt (see
// optim.Optimizer.LoadState). opt must be built the same way as the one saved, over
// the same parameters.
func (ck *Checkpoint) ApplyOptimizer(opt optim.Optimizer) error {
	file := ck.file(OptimizerFile)
	if ck.Optimizer == nil {
		return fmt.Errorf("load checkpoint %s: the checkpoint has no optimizer state", file)
	}
	if err := opt.LoadState(ck.Optimizer); err != nil {
		return fmt.Errorf("load checkpoint %s: %w", file, err)
	}
	return nil
}
