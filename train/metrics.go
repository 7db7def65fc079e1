package train

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/locusml/locus/internal/regularfile"

	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// Metrics are named scalar measurements, such as "loss" or "accuracy".
type Metrics map[string]float64

// The names of the metrics the Loop records for training. Evaluation metrics are
// recorded under their names prefixed with ValPrefix, except those named with
// TrainPrefix.
const (
	MetricLoss      = "loss"        // mean training loss over the steps since the last record
	MetricLR        = "lr"          // the learning rate of the last step
	MetricGradNorm  = "grad_norm"   // the gradient norm of the last step, before clipping
	MetricItemsPerS = "items_per_s" // items (Batch.Items) per second of training time
	MetricStepsPerS = "steps_per_s" // steps per second of training time
	ValPrefix       = "val_"        // prefix of evaluation metrics, e.g. "val_loss"
	// TrainPrefix starts the name of an evaluation metric measured on the training
	// data, such as nanoGPT's estimate of the training loss ("train_loss"): recorded
	// as it is, without ValPrefix.
	TrainPrefix = "train_"
)

const (
	metricValLoss    = ValPrefix + MetricLoss
	recordStepField  = "step"
	plotWidth        = 16 * vg.Centimeter
	plotHeight       = 11 * vg.Centimeter
	maxPlottedPoints = 4000
)

// Record is one line of the metrics log: the metrics measured at a step. Its JSON form
// is a flat object, {"step": 100, "loss": 0.41, "lr": 0.001, ...}, with the keys after
// "step" in lexical order and non-finite values as null.
type Record struct {
	Step    int
	Metrics Metrics
}

// MarshalJSON encodes r as a flat object.
func (r Record) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteString(`{"step":`)
	b.WriteString(strconv.Itoa(r.Step))
	for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
		if k == recordStepField {
			continue
		}
		key, err := json.Marshal(k)
		if err != nil {
			return nil, err
		}
		b.WriteByte(',')
		b.Write(key)
		b.WriteByte(':')
		v := r.Metrics[k]
		if math.IsNaN(v) || math.IsInf(v, 0) {
			b.WriteString("null")
		} else {
			b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON decodes the flat object written by MarshalJSON; null becomes NaN.
func (r *Record) UnmarshalJSON(data []byte) error {
	var m map[string]*float64
	if err := json.Unmarshal(data, &m); err != nil {
		return err
	}
	step, ok := m[recordStepField]
	if !ok || step == nil || *step != math.Trunc(*step) {
		return fmt.Errorf("metrics record %.60s: missing or invalid %q", data, recordStepField)
	}
	r.Step = int(*step)
	r.Metrics = make(Metrics, len(m)-1)
	for k, v := range m {
		if k == recordStepField {
			continue
		}
		if v == nil {
			r.Metrics[k] = math.NaN()
		} else {
			r.Metrics[k] = *v
		}
	}
	return nil
}

// ReadMetrics returns the metrics log of the run directory dir (its MetricsFile): the
// whole run, a resumed run's records included, one Record per step in increasing step
// order. The file must be a regular file of at most MaxMetaBytes, not a symlink. A last
// line cut short by a crash is skipped. Where the log goes back in steps (a run resumed
// from an earlier checkpoint by a Locus that appended to the log instead of rewriting
// it) the later records replace the earlier ones from that step on, and records of the
// same step (a log record and the final evaluation of a stopped run) are merged into
// one, the later values winning.
func ReadMetrics(dir string) ([]Record, error) {
	raw, err := readRecords(dir)
	if err != nil {
		return nil, err
	}
	var out []Record
	for _, r := range raw {
		i := len(out)
		for i > 0 && out[i-1].Step > r.Step {
			i--
		}
		out = out[:i]
		if i > 0 && out[i-1].Step == r.Step {
			maps.Copy(out[i-1].Metrics, r.Metrics)
			continue
		}
		out = append(out, r)
	}
	return out, nil
}

// readRecords returns the records of dir's metrics log in file order; a last line cut
// short by a crash is skipped.
func readRecords(dir string) ([]Record, error) {
	path := filepath.Join(dir, MetricsFile)
	b, err := regularfile.ReadFileNoFollow(path, MaxMetaBytes)
	if err != nil {
		return nil, err
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	var out []Record
	for i, line := range lines {
		if line == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			if i == len(lines)-1 {
				break
			}
			return nil, fmt.Errorf("%s: line %d: %w", path, i+1, err)
		}
		out = append(out, r)
	}
	return out, nil
}

// writeRecords writes records as JSON lines.
func writeRecords(w io.Writer, records []Record) error {
	for _, r := range records {
		b, err := json.Marshal(r)
		if err != nil {
			return err
		}
		if _, err := w.Write(append(b, '\n')); err != nil {
			return err
		}
	}
	return nil
}

// series returns the finite values of a metric against the step, thinned to at most
// maxPlottedPoints.
func series(history []Record, name string) plotter.XYs {
	var xy plotter.XYs
	for _, r := range history {
		if v, ok := r.Metrics[name]; ok && !math.IsNaN(v) && !math.IsInf(v, 0) {
			xy = append(xy, plotter.XY{X: float64(r.Step), Y: v})
		}
	}
	if len(xy) <= maxPlottedPoints {
		return xy
	}
	stride := (len(xy) + maxPlottedPoints - 1) / maxPlottedPoints
	thin := make(plotter.XYs, 0, maxPlottedPoints+1)
	for i := 0; i < len(xy); i += stride {
		thin = append(thin, xy[i])
	}
	if last := xy[len(xy)-1]; thin[len(thin)-1] != last {
		thin = append(thin, last)
	}
	return thin
}
