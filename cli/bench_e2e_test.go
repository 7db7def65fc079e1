package cli

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/locusml/locus/models/transformer"
)

// TestParseTrainTime reads back the time line that fit prints.
func TestParseTrainTime(t *testing.T) {
	var r e2eResult
	out := "locus train: …\ndone: 10 steps in 1s\ntime: steps 12.500s, evaluation 3.250s, checkpoints and plot 0.125s, data 0.010s, other 0.020s\n"
	if err := parseTrainTime(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.StepsS != 12.5 || r.EvalS != 3.25 || r.CheckpointS != 0.125 || r.DataS != 0.01 || r.OtherS != 0.02 {
		t.Errorf("parsed %+v", r)
	}
	if err := parseTrainTime("done\n", &r); err == nil {
		t.Error("no error without a time line")
	}
}

// TestParseTrainSummary reads the final losses from the summary line of locus train.
func TestParseTrainSummary(t *testing.T) {
	var r e2eResult
	out := "step 1500  train loss 1.2345  val bpc 1.7500  val loss 1.2130  val token_acc 0.6400  38000 tokens/s  1m2s\nrun: x  checkpoint: y\n"
	if err := parseTrainSummary(out, &r); err != nil {
		t.Fatal(err)
	}
	if r.TrainLoss != 1.2345 || r.ValLoss != 1.213 || r.ValBPC != 1.75 {
		t.Errorf("parsed %+v", r)
	}
	for _, bad := range []string{"done\n", "step 10  train loss 1.0  100 tokens/s\n", "step 10  train loss x  val loss 1  val bpc 2\n"} {
		if err := parseTrainSummary(bad, &r); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// e2eTestStreams writes the token streams of a small text corpus into a folder and
// returns the folder and the opened data.
func e2eTestStreams(t *testing.T) (string, *transformer.Data) {
	t.Helper()
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("func main() { fmt.Println(\"hello, world\") }\n", 60)), 0o644); err != nil {
		t.Fatal(err)
	}
	data, err := transformer.DataConfig{Task: transformer.CharLM, Corpus: text, SeqLen: 8, Batch: 4}.Open()
	if err != nil {
		t.Fatal(err)
	}
	streams := filepath.Join(dir, "data")
	if err := writeTokenStreams(streams, data.Corpus, data.Config.CorpusSHA256); err != nil {
		t.Fatal(err)
	}
	return streams, data
}

// TestTokenStreams reads back the files of writeTokenStreams as torch_train.py does: the
// ids, and their digest, which must be the one locus train records.
func TestTokenStreams(t *testing.T) {
	dir, data := e2eTestStreams(t)
	var meta struct {
		Format, Dtype, Train, Val, SHA256 string
		VocabSize                         int `json:"vocab_size"`
		TrainTokens                       int `json:"train_tokens"`
		ValTokens                         int `json:"val_tokens"`
	}
	b, err := os.ReadFile(filepath.Join(dir, "corpus.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &meta); err != nil {
		t.Fatal(err)
	}
	c := data.Corpus
	if meta.Format != "locus token streams v1" || meta.Dtype != "<u2" || meta.VocabSize != c.Vocab.Size() ||
		meta.TrainTokens != len(c.Train) || meta.ValTokens != len(c.Val) || meta.SHA256 != data.Config.CorpusSHA256 {
		t.Fatalf("corpus.json %+v", meta)
	}
	h := sha256.New()
	for _, s := range []struct {
		file string
		want []uint16
	}{{meta.Train, c.Train}, {meta.Val, c.Val}} {
		raw, err := os.ReadFile(filepath.Join(dir, s.file))
		if err != nil {
			t.Fatal(err)
		}
		if len(raw) != 2*len(s.want) {
			t.Fatalf("%s: %d bytes for %d ids", s.file, len(raw), len(s.want))
		}
		for i, id := range s.want {
			if got := binary.LittleEndian.Uint16(raw[2*i:]); got != id {
				t.Fatalf("%s: id %d is %d, want %d", s.file, i, got, id)
			}
			binary.Write(h, binary.LittleEndian, uint32(id))
		}
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != data.Config.CorpusSHA256 {
		t.Errorf("digest of the ids as uint32 %s, the data config's %s", got, data.Config.CorpusSHA256)
	}
}

// TestTorchTrainPeer runs bench/peers/torch_train.py for a few steps on small streams
// (with LOCUS_TEST_TORCH=1, where /usr/bin/python3 has torch and torch_peer.py is
// found: importing torch takes seconds, minutes on a loaded machine): it evaluates at
// the steps Locus does, and refuses streams whose digest is not corpus.json's.
func TestTorchTrainPeer(t *testing.T) {
	if os.Getenv("LOCUS_TEST_TORCH") != "1" {
		t.Skip("set LOCUS_TEST_TORCH=1 to run bench/peers/torch_train.py")
	}
	const python = "/usr/bin/python3"
	if exec.Command(python, "-c", "import torch").Run() != nil {
		t.Skip(python + " without torch")
	}
	peer, err := findPeer()
	if err != nil {
		t.Skip(err)
	}
	script, err := findUp(trainPeerPath, trainPeerEnv, "test")
	if err != nil {
		t.Fatal(err)
	}
	dir, data := e2eTestStreams(t)
	run := func() ([]byte, error) {
		cmd := exec.Command(python, script, "--peer", peer, "--data", dir, "--steps", "5", "--batch", "4", "--seqlen", "8",
			"--eval-every", "2", "--eval-n", "9", "--threads", "1")
		var stderr strings.Builder
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, stderr.String())
		}
		return out, nil
	}
	out, err := run()
	if err != nil {
		t.Fatal(err)
	}
	var p struct {
		e2ePeerResult
		NParams int `json:"n_params"`
		Evals   []struct {
			Step int     `json:"step"`
			Loss float64 `json:"loss"`
		} `json:"evals"`
	}
	if err := json.Unmarshal(lastLine(out), &p); err != nil {
		t.Fatal(err)
	}
	var steps []int
	for _, e := range p.Evals {
		steps = append(steps, e.Step)
	}
	if !slices.Equal(steps, []int{2, 4, 5}) || p.Config.CorpusSHA256 != data.Config.CorpusSHA256 {
		t.Errorf("evaluations at steps %v (want 2, 4, 5), digest %.12s", steps, p.Config.CorpusSHA256)
	}
	// A model of the default sizes over this vocabulary, as torch_peer.py counts them.
	V := data.Corpus.Vocab.Size()
	if want := 2*(4*(64*64+64)+64*256+256+256*64+64+4*64) + V*64 + 8*64 + 2*64 + 64*V + V; p.NParams != want {
		t.Errorf("%d parameters, want %d", p.NParams, want)
	}
	if !(p.ValLoss > 0 && p.ValLoss < 10) || math.Abs(p.ValBPC*math.Ln2-p.ValLoss) > 1e-4 || p.ValLoss != p.Evals[len(p.Evals)-1].Loss {
		t.Errorf("validation loss %g, bpc %g", p.ValLoss, p.ValBPC)
	}
	// Streams that are not what corpus.json describes are refused.
	raw, _ := os.ReadFile(filepath.Join(dir, "val.u16"))
	raw[0] ^= 1
	if err := os.WriteFile(filepath.Join(dir, "val.u16"), raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := run(); err == nil || !strings.Contains(err.Error(), "SHA-256") {
		t.Errorf("altered streams: %v, want an error about the SHA-256", err)
	}
}
