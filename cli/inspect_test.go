package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"image/png"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/locusml/locus/datasets"
	"github.com/locusml/locus/train"
)

// readView reads the attention.json that inspect -attention wrote beside its picture
// and checks that attention.png is a PNG.
func readView(t *testing.T, dir string) attentionView {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "attention.png"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := png.Decode(bytes.NewReader(b)); err != nil {
		t.Fatalf("attention.png: %v", err)
	}
	var v attentionView
	b, err = os.ReadFile(filepath.Join(dir, "attention.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, &v); err != nil {
		t.Fatal(err)
	}
	return v
}

// TestAttentionMapIsTheModels trains a one-layer reversal encoder, draws its attention
// for a validation example and checks the drawn matrices against softmax(q·k/√dh)
// recomputed from the checkpoint's weights in float64: embeddings, LayerNorm, the query
// and key maps, per head.
func TestAttentionMapIsTheModels(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	const dim, heads = 16, 2
	code, _, stderr := runCLI(t, "train", "-task", "reverse", "-seqlen", "6", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32",
		"-batch", "16", "-steps", "10", "-eval-every", "10", "-eval-n", "20", "-out", run)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "pics")
	code, stdout, stderr := runCLI(t, "inspect", "-ckpt", run, "-attention", "-example", "4", "-out", out)
	if code != 0 || !strings.Contains(stdout, "attention.png") {
		t.Fatalf("inspect -attention: exit %d %q %s", code, stdout, stderr)
	}
	v := readView(t, out)
	if len(v.Maps) != heads {
		t.Fatalf("%d maps, want %d", len(v.Maps), heads)
	}
	ck, err := train.LoadCheckpoint(run)
	if err != nil {
		t.Fatal(err)
	}
	p := func(name string) []float64 {
		t.Helper()
		d, ok := ck.Params[name]
		if !ok {
			t.Fatalf("no parameter %s", name)
		}
		return floats(d)
	}
	var ids []int
	for _, s := range v.Maps[0].Keys {
		var id int
		if err := json.Unmarshal([]byte(s), &id); err != nil {
			t.Fatalf("key label %q", s)
		}
		ids = append(ids, id)
	}
	tok, pos := p("tok_emb.weight"), p("pos_emb.weight")
	lnW, lnB := p("blocks.0.ln1.weight"), p("blocks.0.ln1.bias")
	qW, qB, kW, kB := p("blocks.0.attn.q.weight"), p("blocks.0.attn.q.bias"), p("blocks.0.attn.k.weight"), p("blocks.0.attn.k.bias")
	n := len(ids)
	q, k := make([][]float64, n), make([][]float64, n)
	for i, id := range ids {
		x := make([]float64, dim)
		var mean, vr float64
		for c := range dim {
			x[c] = tok[id*dim+c] + pos[i*dim+c]
			mean += x[c] / dim
		}
		for c := range dim {
			vr += (x[c] - mean) * (x[c] - mean) / dim
		}
		for c := range dim {
			x[c] = (x[c]-mean)/math.Sqrt(vr+1e-5)*lnW[c] + lnB[c]
		}
		q[i], k[i] = make([]float64, dim), make([]float64, dim)
		for o := range dim {
			q[i][o], k[i][o] = qB[o], kB[o]
			for c := range dim {
				q[i][o] += qW[o*dim+c] * x[c]
				k[i][o] += kW[o*dim+c] * x[c]
			}
		}
	}
	dh := dim / heads
	for _, m := range v.Maps {
		for a := range n {
			s := make([]float64, n)
			var z float64
			for b := range n {
				for c := m.Head * dh; c < (m.Head+1)*dh; c++ {
					s[b] += q[a][c] * k[b][c] / math.Sqrt(float64(dh))
				}
			}
			for b := range n {
				s[b] = math.Exp(s[b])
				z += s[b]
			}
			for b := range n {
				if got, want := m.Weights[a][b], s[b]/z; math.Abs(got-want) > 1e-5 || !m.Visible[a][b] {
					t.Fatalf("head %d: weight[%d][%d] = %g (visible %v), want %g", m.Head, a, b, got, m.Visible[a][b], want)
				}
			}
		}
	}
}

// TestAttentionCharLMKernelExpression draws a char LM with a kernel expression and
// per-head bandwidths: causal and window cells are hidden, rows sum to 1.
func TestAttentionCharLMKernelExpression(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	code, _, stderr := runCLI(t, "train", "-task", "charlm", "-data", text, "-seqlen", "16", "-kernel", "gaussian * window(4) * relbias(2)",
		"-bandwidth", "head", "-layers", "2", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "8", "-steps", "10", "-eval-every", "5", "-eval-n", "16", "-out", run)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "pics")
	if code, stdout, stderr := runCLI(t, "inspect", "-ckpt", run, "-attention", "-input", "the lazy dog", "-out", out); code != 0 {
		t.Fatalf("inspect -attention: exit %d %q %s", code, stdout, stderr)
	}
	v := readView(t, out)
	if len(v.Maps) != 4 || v.Maps[3].Layer != "blocks.1.attn" || strings.Join(v.Maps[0].Keys, "") != "the·lazy·dog" {
		t.Fatalf("maps: %d, last %s, keys %q", len(v.Maps), v.Maps[len(v.Maps)-1].Layer, v.Maps[0].Keys)
	}
	for _, m := range v.Maps {
		for a, row := range m.Weights {
			var sum float64
			for b, w := range row {
				if want := b <= a && a-b < 4; m.Visible[a][b] != want || (!want && w != 0) {
					t.Fatalf("%s head %d [%d][%d]: visible %v weight %g", m.Layer, m.Head, a, b, m.Visible[a][b], w)
				}
				sum += w
			}
			if math.Abs(sum-1) > 1e-5 {
				t.Fatalf("%s head %d row %d sums to %g", m.Layer, m.Head, a, sum)
			}
		}
	}
	// Bad inputs: one line, exit status, nothing written.
	bad := filepath.Join(dir, "bad")
	blocker := filepath.Join(dir, "file")
	os.WriteFile(blocker, nil, 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-input", "the ~ dog"}, `byte '~' at offset 4 is not in the vocabulary`},
		{[]string{"-example", "100000"}, "-example 100000 is out of range"},
		{[]string{"-input", "x", "-example", "1"}, "not both"},
		{[]string{"-input", strings.Repeat("the ", 10)}, "more than the model's 16"},
	} {
		args := append([]string{"inspect", "-ckpt", run, "-attention", "-out", bad}, tc.args...)
		code, _, stderr := runCLI(t, args...)
		if code == 0 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want one line with %q", tc.args, code, stderr, tc.want)
		}
		if _, err := os.Stat(bad); !os.IsNotExist(err) {
			t.Errorf("%v: %s was created", tc.args, bad)
		}
	}
	code, _, stderr = runCLI(t, "inspect", "-ckpt", run, "-attention", "-out", filepath.Join(blocker, "sub"))
	if code != 1 || strings.Count(strings.TrimSpace(stderr), "\n") > 0 || !strings.Contains(stderr, "output folder") {
		t.Errorf("unwritable -out: exit %d, %q", code, stderr)
	}
}

func TestAttentionLocalizedDAE(t *testing.T) {
	if _, err := datasets.DefaultMNISTDir(); err != nil {
		t.Skipf("MNIST not found: %v", err)
	}
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, "train", "-model", "ldae", "-steps", "2", "-batch", "16", "-eval-every", "2", "-eval-n", "20", "-out", run); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "pics")
	if code, stdout, stderr := runCLI(t, "inspect", "-ckpt", run, "-attention", "-example", "3", "-out", out); code != 0 {
		t.Fatalf("inspect -attention: exit %d %q %s", code, stdout, stderr)
	}
	v := readView(t, out)
	if len(v.Maps) == 0 || len(v.Maps[0].Weights) != 1 || len(v.Maps[0].Keys) != 128 {
		t.Fatalf("maps %d, first %dx%d", len(v.Maps), len(v.Maps[0].Weights), len(v.Maps[0].Keys))
	}
	if code, _, stderr := runCLI(t, "inspect", "-ckpt", run, "-attention", "-example", "10000", "-out", out); code != 2 || !strings.Contains(stderr, "out of range") {
		t.Errorf("-example 10000: exit %d %q", code, stderr)
	}
}

// TestBandwidthsLoggedPlottedPrinted: a per-head bandwidth run logs every head's
// bandwidth at each evaluation, draws bandwidths.png, and inspect prints the table; a
// fixed-bandwidth checkpoint has none to show.
func TestBandwidthsLoggedPlottedPrinted(t *testing.T) {
	dir := t.TempDir()
	small := []string{"-task", "reverse", "-seqlen", "6", "-layers", "2", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "16", "-steps", "20", "-eval-every", "10", "-eval-n", "20"}
	head, query, fixed := filepath.Join(dir, "head"), filepath.Join(dir, "query"), filepath.Join(dir, "fixed")
	for _, r := range []struct {
		dir  string
		args []string
	}{{head, []string{"-bandwidth", "head"}}, {query, []string{"-bandwidth", "query"}}, {fixed, nil}} {
		if code, _, stderr := runCLI(t, append(append([]string{"train", "-out", r.dir}, small...), r.args...)...); code != 0 {
			t.Fatalf("train %v: exit %d\n%s", r.args, code, stderr)
		}
	}
	b, err := os.ReadFile(filepath.Join(head, train.MetricsFile))
	if err != nil {
		t.Fatal(err)
	}
	var withBW int
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r train.Record
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Metrics["bandwidth.blocks.1.attn.head1"]; ok {
			withBW++
		}
	}
	if withBW != 2 {
		t.Errorf("%d records with bandwidths, want 2 (one per evaluation):\n%s", withBW, b)
	}
	for _, d := range []string{head, query} {
		f, err := os.Open(filepath.Join(d, train.BandwidthPlotFile))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := png.Decode(f); err != nil {
			t.Errorf("%s: %v", d, err)
		}
		f.Close()
	}
	if _, err := os.Stat(filepath.Join(fixed, train.BandwidthPlotFile)); !os.IsNotExist(err) {
		t.Errorf("a fixed-bandwidth run drew %s", train.BandwidthPlotFile)
	}
	code, stdout, stderr := runCLI(t, "inspect", "-ckpt", head, "-bandwidths")
	if code != 0 || !strings.Contains(stdout, "head 1") || !strings.Contains(stdout, "blocks.1.attn") {
		t.Errorf("inspect -bandwidths: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI(t, "inspect", "-ckpt", query, "-bandwidths")
	if code != 0 || !strings.Contains(stdout, "quartiles") || !strings.Contains(stdout, "█") {
		t.Errorf("inspect -bandwidths (query): exit %d\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI(t, "inspect", "-ckpt", fixed, "-bandwidths")
	if code != 1 || !strings.Contains(stderr, "no learned bandwidths") || strings.Count(strings.TrimSpace(stderr), "\n") > 0 {
		t.Errorf("inspect -bandwidths (fixed): exit %d %q", code, stderr)
	}
}

// TestKernelsAndReport draws the kernels of a char LM with a kernel expression and
// per-head bandwidths and writes its report; when Chromium is installed, the report is
// rendered headless and its screenshot must not be blank.
func TestKernelsAndReport(t *testing.T) {
	dir := t.TempDir()
	// A long corpus path: the page must wrap it, not scroll sideways.
	long := filepath.Join(dir, strings.Repeat("a-rather-long-folder-name_", 4), strings.Repeat("and-another-one_", 4))
	if err := os.MkdirAll(long, 0o755); err != nil {
		t.Fatal(err)
	}
	text := filepath.Join(long, "text.txt")
	if err := os.WriteFile(text, []byte(strings.Repeat("the quick brown fox jumps over the lazy dog. ", 100)), 0o644); err != nil {
		t.Fatal(err)
	}
	run := filepath.Join(dir, "run")
	code, _, stderr := runCLI(t, "train", "-task", "charlm", "-data", text, "-seqlen", "16", "-kernel", "mixture(gaussian, laplacian) * relbias(3)",
		"-bandwidth", "head", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32", "-batch", "8", "-steps", "10", "-eval-every", "5", "-eval-n", "16", "-out", run)
	if code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	pics := filepath.Join(dir, "pics")
	if code, _, stderr := runCLI(t, "inspect", "-ckpt", run, "-kernels", "-out", pics); code != 0 {
		t.Fatalf("inspect -kernels: exit %d\n%s", code, stderr)
	}
	f, err := os.Open(filepath.Join(pics, "kernels.png"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := png.Decode(f); err != nil {
		t.Fatalf("kernels.png: %v", err)
	}
	report := filepath.Join(dir, "report.html")
	if code, stdout, stderr := runCLI(t, "report", "-ckpt", run, "-out", report); code != 0 || !strings.Contains(stdout, "pictures") {
		t.Fatalf("report: exit %d %q %s", code, stdout, stderr)
	}
	html, err := os.ReadFile(report)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"<!DOCTYPE html>", "mixture(gaussian, laplacian) * relbias(3)", "<th>val_loss</th>", "data:image/png;base64,", "head 1"} {
		if !bytes.Contains(html, []byte(want)) {
			t.Errorf("report lacks %q", want)
		}
	}
	if bytes.Contains(html, []byte(`src="file:`)) || bytes.Contains(html, []byte(`src="http`)) {
		t.Error("report links to files instead of embedding them")
	}
	if n := bytes.Count(html, []byte("data:image/png;base64,")); n < 4 {
		t.Errorf("report embeds %d pictures, want loss, bandwidths, attention and kernels", n)
	}
	checkRendered(t, report)
	// At a normal window size the page fits the window's width (the configuration's
	// JSON wraps) and its table shows a row per record of the run, under the header.
	records, err := train.ReadMetrics(run)
	if err != nil {
		t.Fatal(err)
	}
	if scrollW, windowW, rows, widePre, ok := probePage(t, report); ok {
		if scrollW > windowW {
			t.Errorf("the page is %d px wide in a window of %d: it scrolls sideways", scrollW, windowW)
		}
		if widePre > 0 {
			t.Errorf("%d configuration blocks scroll sideways instead of wrapping", widePre)
		}
		if rows != len(records)+1 {
			t.Errorf("the page's table has %d rows, want a header and %d records", rows, len(records))
		}
	}
}

// checkRendered screenshots an HTML file with headless Chromium, when installed, and
// checks that the page is not blank: a good share of its pixels are not background.
func checkRendered(t *testing.T, path string) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Logf("chromium not installed: the report is not rendered")
		return
	}
	shot := filepath.Join(t.TempDir(), "shot.png")
	abs, _ := filepath.Abs(path)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
		"--screenshot="+shot, "--window-size=1200,1600", "file://"+abs)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("chromium: %v\n%s", err, out)
	}
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	var ink, total int
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			if r < 0xe000 || g < 0xe000 || bl < 0xe000 {
				ink++
			}
			total++
		}
	}
	if frac := float64(ink) / float64(total); frac < 0.03 {
		t.Errorf("the rendered report is blank: %.1f%% of its pixels are not background", 100*frac)
	}
}

// TestAttentionEncDec draws an encoder–decoder: the encoder's self-attention over the
// source, then the decoder's causal self-attention and its cross-attention from the
// decoder's tokens to the source.
func TestAttentionEncDec(t *testing.T) {
	dir := t.TempDir()
	run := filepath.Join(dir, "run")
	if code, _, stderr := runCLI(t, "train", "-task", "reverse", "-arch", "encdec", "-seqlen", "6", "-layers", "1", "-dmodel", "16", "-heads", "2", "-dff", "32",
		"-batch", "16", "-steps", "5", "-eval-every", "5", "-eval-n", "20", "-out", run); code != 0 {
		t.Fatalf("train: exit %d\n%s", code, stderr)
	}
	out := filepath.Join(dir, "pics")
	if code, _, stderr := runCLI(t, "inspect", "-ckpt", run, "-attention", "-input", "1 2 3 4 5 6", "-out", out); code != 0 {
		t.Fatalf("inspect -attention: exit %d\n%s", code, stderr)
	}
	v := readView(t, out)
	var got []string
	for _, m := range v.Maps {
		got = append(got, m.Layer)
		if m.Layer == "dec.blocks.0.xattn" && (strings.Join(m.Keys, " ") != "1 2 3 4 5 6" || m.Queries[0] != "<s>") {
			t.Errorf("cross-attention: queries %q, keys %q", m.Queries, m.Keys)
		}
		if m.Layer == "dec.blocks.0.attn" && m.Visible[0][1] {
			t.Errorf("decoder self-attention is not causal")
		}
	}
	want := "enc.blocks.0.attn enc.blocks.0.attn dec.blocks.0.attn dec.blocks.0.attn dec.blocks.0.xattn dec.blocks.0.xattn"
	if strings.Join(got, " ") != want {
		t.Errorf("maps %v, want %s", got, want)
	}
	if code, _, stderr := runCLI(t, "inspect", "-ckpt", run, "-attention", "-input", "1 2 12", "-out", out); code != 2 || !strings.Contains(stderr, `token "12" at position 2 is not a symbol`) {
		t.Errorf("bad token: exit %d %q", code, stderr)
	}
}

// TestHeatMapDrawsTheMatrix: the heat map's cells are the map's weights, query 0 in the
// top row, hidden cells NaN (drawn grey) and visible zero weights 0.
func TestHeatMapDrawsTheMatrix(t *testing.T) {
	m := matrixGrid{w: [][]float64{{1, 0}, {0.25, 0.75}}, vis: [][]bool{{true, false}, {true, true}}}
	if c, r := m.Dims(); c != 2 || r != 2 {
		t.Fatalf("dims %d×%d", c, r)
	}
	// Row r of the grid is query len−1−r.
	if m.Z(0, 1) != 1 || !math.IsNaN(m.Z(1, 1)) || m.Z(0, 0) != 0.25 || m.Z(1, 0) != 0.75 {
		t.Errorf("cells %v %v %v %v", m.Z(0, 1), m.Z(1, 1), m.Z(0, 0), m.Z(1, 0))
	}
	m.w[1][0] = 0
	if m.Z(0, 0) != 0 {
		t.Errorf("a visible zero weight is drawn as %v, want 0", m.Z(0, 0))
	}
}
