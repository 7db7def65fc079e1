package cli

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/models/transformer"
)

// The e2e workload is a whole `locus train -task charlm` run as issue 18 times it: 1500
// steps of batch 32, evaluating (1600 validation windows) and checkpointing every 250
// steps, in a temporary run directory, as a child process. With -compare,
// bench/peers/torch_train.py trains the same model on the same token streams in PyTorch
// first (no checkpoints on its side).
const (
	e2eSteps     = 1500
	e2eEvalEvery = 250
	e2eEvalN     = 1600
	e2eBatch     = 32
	e2eSeqLen    = 64
	e2eLR        = 1e-3 // locus train's Adam default
)

// trainPeerPath is torch_train.py's path in the repository; $LOCUS_TORCH_TRAIN
// overrides where it is looked for.
var trainPeerPath = filepath.Join("bench", "peers", "torch_train.py")

const trainPeerEnv = "LOCUS_TORCH_TRAIN"

// e2eResult is the e2e workload's measurement: the child's wall time and where the
// training loop's part of it went (train.Summary.Time), in seconds.
type e2eResult struct {
	Workload    string  `json:"workload"`
	Steps       int     `json:"steps"`
	WallS       float64 `json:"wall_s"`  // the whole process: start, corpus, model, loop
	SetupS      float64 `json:"setup_s"` // wall minus the loop
	StepsS      float64 `json:"steps_s"`
	StepMs      float64 `json:"step_ms"` // mean
	EvalS       float64 `json:"eval_s"`
	CheckpointS float64 `json:"checkpoint_s"`
	DataS       float64 `json:"data_s"`
	OtherS      float64 `json:"other_s"`
	CPUS        float64 `json:"cpu_s"` // the child's user + system time
	TrainLoss   float64 `json:"train_loss"`
	ValLoss     float64 `json:"val_loss"` // the last evaluation's
	ValBPC      float64 `json:"val_bpc"`
}

// e2ePeerResult is the part of torch_train.py's JSON line that -compare prints, with
// the child's wall and CPU time as this process measured them.
type e2ePeerResult struct {
	WallS     float64 `json:"wall_s"` // the script's own, from its start
	ImportS   float64 `json:"import_s"`
	LoopS     float64 `json:"loop_s"`
	StepsS    float64 `json:"steps_s"`
	StepMs    float64 `json:"step_ms"`
	EvalS     float64 `json:"eval_s"`
	DataS     float64 `json:"data_s"`
	OtherS    float64 `json:"other_s"`
	TrainLoss float64 `json:"train_loss"`
	ValLoss   float64 `json:"val_loss"`
	ValBPC    float64 `json:"val_bpc"`
	Config    struct {
		CorpusSHA256 string `json:"corpus_sha256"`
	} `json:"config"`
	ProcessWallS float64 `json:"process_wall_s"` // measured here: interpreter start to exit
	ProcessCPUS  float64 `json:"process_cpu_s"`
}

// e2eOptions are the e2e workload's settings.
type e2eOptions struct {
	steps, threads int
	compare        bool
	python, peer   string // -compare: the interpreter and torch_peer.py
	asJSON         bool
}

// runE2E runs the e2e workload.
func runE2E(o e2eOptions, stdout, stderr io.Writer) error {
	dir, err := os.MkdirTemp("", "locus-e2e-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	var peer *e2ePeerResult
	var digest string
	if o.compare {
		if peer, digest, err = runE2EPeer(o, dir, stderr); err != nil {
			return err
		}
	}
	r, err := runE2ELocus(o, dir, digest, stderr)
	if err != nil {
		return err
	}
	if o.asJSON {
		var v any = r
		if peer != nil {
			v = map[string]any{"workload": "e2e", "torch": peer, "locus": r, "ratio": r.WallS / peer.ProcessWallS}
		}
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		fmt.Fprintln(stdout, string(b))
		return nil
	}
	fmt.Fprintf(stdout, "e2e: locus train -task charlm, %d steps of batch %d, evaluation (%d windows) and checkpoint every %d: wall %.1f s (CPU %.1f s)\n",
		o.steps, e2eBatch, e2eEvalN, e2eEvalEvery, r.WallS, r.CPUS)
	fmt.Fprintf(stdout, "  steps %.1f s (%.1f ms/step), evaluation %.1f s, checkpoints and plot %.2f s, data %.2f s, other %.2f s, setup %.2f s\n",
		r.StepsS, r.StepMs, r.EvalS, r.CheckpointS, r.DataS, r.OtherS, r.SetupS)
	fmt.Fprintf(stdout, "  final train loss %.4f, validation loss %.4f (%.4f bits per character)\n", r.TrainLoss, r.ValLoss, r.ValBPC)
	if peer != nil {
		p := peer
		fmt.Fprintf(stdout, "PyTorch (%s, same model and token streams, no checkpoints): wall %.1f s (CPU %.1f s)\n", trainPeerPath, p.ProcessWallS, p.ProcessCPUS)
		fmt.Fprintf(stdout, "  steps %.1f s (%.1f ms/step), evaluation %.1f s, data %.2f s, other %.2f s, setup (interpreter, import torch, data) %.2f s\n",
			p.StepsS, p.StepMs, p.EvalS, p.DataS, p.OtherS, p.ProcessWallS-p.LoopS)
		fmt.Fprintf(stdout, "  final train loss %.4f, validation loss %.4f (%.4f bits per character)\n", p.TrainLoss, p.ValLoss, p.ValBPC)
		fmt.Fprintf(stdout, "ratio Locus/PyTorch: wall %.2f, outside the step %.2f (%.1f s / %.1f s); validation loss Locus − PyTorch %+.4f\n",
			r.WallS/p.ProcessWallS, (r.WallS-r.StepsS)/(p.ProcessWallS-p.StepsS), r.WallS-r.StepsS, p.ProcessWallS-p.StepsS, r.ValLoss-p.ValLoss)
	}
	return nil
}

// runE2ELocus runs locus train in dir/run and returns its measurement. A digest, if
// not empty, is the corpus digest the run must record (the streams the peer trained on).
func runE2ELocus(o e2eOptions, dir, digest string, stderr io.Writer) (*e2eResult, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	run := filepath.Join(dir, "run")
	args := []string{"train", "-task", "charlm", "-steps", strconv.Itoa(o.steps), "-batch", strconv.Itoa(e2eBatch),
		"-eval-every", strconv.Itoa(e2eEvalEvery), "-eval-n", strconv.Itoa(e2eEvalN), "-out", run}
	if o.threads > 0 {
		args = append(args, "-threads", strconv.Itoa(o.threads))
	}
	fmt.Fprintf(stderr, "running locus %s\n", strings.Join(args, " "))
	cmd := exec.Command(exe, args...)
	var errBuf bytes.Buffer
	cmd.Stderr = &errBuf
	t0 := time.Now()
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("e2e: %w\n%s", err, errBuf.String())
	}
	r := &e2eResult{Workload: "e2e", Steps: o.steps, WallS: time.Since(t0).Seconds()}
	if ps := cmd.ProcessState; ps != nil {
		r.CPUS = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	if err := parseTrainTime(errBuf.String(), r); err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	if err := parseTrainSummary(string(out), r); err != nil {
		return nil, fmt.Errorf("e2e: %w", err)
	}
	r.SetupS = r.WallS - r.StepsS - r.EvalS - r.CheckpointS - r.DataS - r.OtherS
	r.StepMs = r.StepsS / float64(o.steps) * 1e3
	if digest != "" {
		var d transformer.DataConfig
		rc, err := readRunConfig(filepath.Join(run, runConfigFile))
		if err == nil {
			err = json.Unmarshal(rc.DataConfig, &d)
		}
		if err != nil {
			return nil, fmt.Errorf("e2e: the run's config: %w", err)
		}
		if d.CorpusSHA256 != digest {
			return nil, fmt.Errorf("e2e: locus train read a corpus with token digest %.12s, the PyTorch run was given %.12s", d.CorpusSHA256, digest)
		}
	}
	return r, nil
}

// runE2EPeer writes the token streams of the charlm corpus into dir/data and runs
// torch_train.py on them; it returns its result and the streams' digest.
func runE2EPeer(o e2eOptions, dir string, stderr io.Writer) (*e2ePeerResult, string, error) {
	script, err := findUp(trainPeerPath, trainPeerEnv, "-workload e2e -compare")
	if err != nil {
		return nil, "", err
	}
	// The data of `locus train -task charlm` with its defaults (the Go source corpus).
	data, err := transformer.DataConfig{Task: transformer.CharLM, SeqLen: e2eSeqLen, MaxBytes: datasets.DefaultMaxBytes, Batch: e2eBatch}.Open()
	if err != nil {
		return nil, "", err
	}
	streams := filepath.Join(dir, "data")
	if err := writeTokenStreams(streams, data.Corpus, data.Config.CorpusSHA256); err != nil {
		return nil, "", err
	}
	threads := o.threads
	if threads == 0 {
		threads = runtime.GOMAXPROCS(0) // what the Locus run gets
	}
	args := []string{script, "--peer", o.peer, "--data", streams, "--steps", strconv.Itoa(o.steps), "--batch", strconv.Itoa(e2eBatch),
		"--seqlen", strconv.Itoa(e2eSeqLen), "--eval-every", strconv.Itoa(e2eEvalEvery), "--eval-n", strconv.Itoa(e2eEvalN),
		"--lr", strconv.FormatFloat(e2eLR, 'g', -1, 64), "--threads", strconv.Itoa(threads)}
	blas := checkPeerBLAS(o.python, stderr)
	fmt.Fprintf(stderr, "running %s %s\n", o.python, strings.Join(args, " "))
	cmd := exec.Command(o.python, args...)
	cmd.Env = blas.Env()
	var errBuf bytes.Buffer
	cmd.Stderr = io.MultiWriter(stderr, &errBuf) // its progress: a line per evaluation
	t0 := time.Now()
	out, err := cmd.Output()
	if err != nil {
		return nil, "", fmt.Errorf("e2e: %s: %w\n%s", script, err, errBuf.String())
	}
	var p e2ePeerResult
	if err := json.Unmarshal(lastLine(out), &p); err != nil {
		return nil, "", fmt.Errorf("e2e: %s: %w", script, err)
	}
	p.ProcessWallS = time.Since(t0).Seconds()
	if ps := cmd.ProcessState; ps != nil {
		p.ProcessCPUS = (ps.UserTime() + ps.SystemTime()).Seconds()
	}
	if p.Config.CorpusSHA256 != data.Config.CorpusSHA256 {
		return nil, "", fmt.Errorf("e2e: %s trained on streams with digest %.12s, want %.12s", script, p.Config.CorpusSHA256, data.Config.CorpusSHA256)
	}
	return &p, data.Config.CorpusSHA256, nil
}

// parseTrainSummary reads the final losses from the "step N  train loss …  val loss …"
// line that `locus train` prints on stdout.
func parseTrainSummary(out string, r *e2eResult) error {
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "step ") || !strings.Contains(line, "train loss") {
			continue
		}
		f := strings.Fields(line)
		var got int
		for i := 0; i+2 < len(f); i++ {
			var dst *float64
			switch {
			case f[i] == "train" && f[i+1] == "loss":
				dst = &r.TrainLoss
			case f[i] == "val" && f[i+1] == transformer.MetricLoss:
				dst = &r.ValLoss
			case f[i] == "val" && f[i+1] == transformer.MetricBPC:
				dst = &r.ValBPC
			default:
				continue
			}
			v, err := strconv.ParseFloat(f[i+2], 64)
			if err != nil {
				return fmt.Errorf("locus train's summary %q: %w", line, err)
			}
			*dst = v
			got++
		}
		if got != 3 {
			return fmt.Errorf("locus train's summary %q lacks the train loss, val loss or val bpc", line)
		}
		return nil
	}
	return fmt.Errorf("no summary line in the output of locus train:\n%s", out)
}

// writeTokenStreams writes a corpus's training and validation ids into the folder dir
// for torch_train.py, in the format "locus token streams v1":
//
//	corpus.json  {"format": "locus token streams v1", "vocab_size": V, "vocab": …,
//	              "dtype": "<u2", "train": "train.u16", "val": "val.u16",
//	              "train_tokens": n, "val_tokens": m, "sha256": digest}
//	train.u16, val.u16  the ids, uint16 little-endian, no header
//
// digest is the corpus's token digest (transformer.DataConfig.CorpusSHA256: SHA-256 of
// the training then validation ids as uint32 little-endian), which the reader checks.
func writeTokenStreams(dir string, c *datasets.Corpus, digest string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for _, s := range []struct {
		name string
		ids  []uint16
	}{{"train.u16", c.Train}, {"val.u16", c.Val}} {
		err := regularfile.WriteFile(filepath.Join(dir, s.name), func(w io.Writer) error {
			var b [2]byte
			for _, id := range s.ids {
				binary.LittleEndian.PutUint16(b[:], id)
				if _, err := w.Write(b[:]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("token streams: %w", err)
		}
	}
	meta, err := json.MarshalIndent(map[string]any{
		"format": "locus token streams v1", "vocab_size": c.Vocab.Size(), "vocab": c.Vocab.String(),
		"dtype": "<u2", "train": "train.u16", "val": "val.u16",
		"train_tokens": len(c.Train), "val_tokens": len(c.Val), "sha256": digest,
	}, "", "  ")
	if err != nil {
		return err
	}
	return regularfile.WriteFile(filepath.Join(dir, "corpus.json"), func(w io.Writer) error { _, err := w.Write(append(meta, '\n')); return err })
}

// parseTrainTime reads the "time: steps …" line `locus train` prints at the end.
func parseTrainTime(out string, r *e2eResult) error {
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "time: "); ok {
			_, err := fmt.Sscanf(rest, "steps %fs, evaluation %fs, checkpoints and plot %fs, data %fs, other %fs",
				&r.StepsS, &r.EvalS, &r.CheckpointS, &r.DataS, &r.OtherS)
			return err
		}
	}
	return fmt.Errorf("no time line in the output of locus train:\n%s", out)
}
