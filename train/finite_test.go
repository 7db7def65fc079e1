package train

import (
	"context"
	"errors"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestNaNWeightsNeverReachLATEST: an optimizer state gone NaN makes the weights NaN
// while the loss of that step is still finite; the checkpoint is refused and LATEST
// keeps the last good one.
func TestNaNWeightsNeverReachLATEST(t *testing.T) {
	dir := t.TempDir()
	l := newLoop(t, 20, dir)
	l.CheckpointEvery = 5
	l.Hooks = []Hook{{Every: 1, Func: func(context.Context, Progress) error {
		if l.Step() == 7 {
			st := l.Optimizer.State()
			for name, ts := range st {
				if strings.HasSuffix(name, ".exp_avg_sq") {
					ts.Data().([]float32)[0] = float32(math.NaN())
				}
			}
			if err := l.Optimizer.LoadState(st); err != nil {
				return err
			}
		}
		return nil
	}}}
	_, err := l.Run(context.Background())
	if !errors.Is(err, ErrDiverged) {
		t.Fatalf("Run: %v, want ErrDiverged", err)
	}
	if got := latest(t, dir); got != stepDirName(5) {
		t.Errorf("LATEST is %s, want %s", got, stepDirName(5))
	}
	if _, err := LoadCheckpoint(dir); err != nil {
		t.Errorf("the run's latest checkpoint does not load: %v", err)
	}
}

// TestNonFiniteCheckpointIsRefused: NaN or Inf weights and optimizer state on disk are
// refused with the file and the tensor's name.
func TestNonFiniteCheckpointIsRefused(t *testing.T) {
	for _, file := range []string{ModelFile, OptimizerFile} {
		for _, v := range []float64{math.NaN(), math.Inf(-1)} {
			dir := t.TempDir()
			if _, err := newLoop(t, 5, dir).Run(context.Background()); err != nil {
				t.Fatal(err)
			}
			ck := mustLoad(t, dir)
			ts := ck.Params
			if file == OptimizerFile {
				ts = ck.Optimizer
			}
			name := slices.Sorted(maps.Keys(ts))[len(ts)-1]
			switch d := ts[name].Data().(type) {
			case []float32:
				d[len(d)-1] = float32(v)
			case []float64:
				d[len(d)-1] = v
			}
			if err := SaveCheckpoint(ck.Dir, ck); err != nil {
				t.Fatal(err)
			}
			_, err := LoadCheckpoint(dir)
			want := filepath.Join(ck.Dir, file) + `: damaged values: tensor "` + name + `" holds ` + formatValue(v)
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("load with %v in %s: %v\nwant %q", v, file, err, want)
			}
		}
	}
}
