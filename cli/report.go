package cli

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/locusml/locus/internal/regularfile"
	"github.com/locusml/locus/train"
)

func init() {
	register("report", "write a one-page HTML report of a run: configuration, metrics and pictures", runReport)
}

// reportFigure is one picture of the report, embedded as a data URI.
type reportFigure struct {
	Title   string
	Caption string
	Src     template.URL
}

// reportPage is what the report template shows.
type reportPage struct {
	Title, Subtitle          string
	Model, Data, TrainConfig string
	Columns                  []string
	Rows                     [][]string
	Figures                  []reportFigure
	Bandwidths               string
	Notes                    []string
	TableNote                string
	// Warnings are what was left out and why (also among Notes).
	Warnings []string

	history          []train.Record // the run's records, drawn in the curves
	loss, bandwidths *train.Chart   // the curves (nil: nothing to draw)
}

func runReport(args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("report", "-ckpt DIR -out report.html [-example N]", stderr)
	ckpt := fs.String("ckpt", "", "checkpoint or run directory")
	out := fs.String("out", "", "the HTML file to write (not inside the run)")
	example := fs.Int("example", 0, "the validation example whose attention the report draws")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	if *out == "" {
		return usageErrorf("missing -out FILE")
	}
	if *example < 0 {
		return usageErrorf("-example %d: want an index >= 0", *example)
	}
	ld, err := fromCheckpoint(*ckpt, stderr)
	if err != nil {
		return err
	}
	if err := checkOutFile("-out", *out, ld.ck); err != nil {
		return err
	}
	page, err := buildReport(ld, *example)
	if err != nil {
		return err
	}
	for _, w := range page.Warnings {
		fmt.Fprintf(stderr, "locus report: warning: %s\n", w)
	}
	var buf bytes.Buffer
	if err := reportTemplate.Execute(&buf, page); err != nil {
		return err
	}
	if err := regularfile.WriteFile(*out, func(w io.Writer) error { _, err := w.Write(buf.Bytes()); return err }); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s (%d KiB, %d pictures)\n", *out, (buf.Len()+1023)/1024, len(page.Figures))
	return nil
}

// Limits of what report reads and shows.
const (
	// maxPictureBytes bounds a picture of the run directory that the report embeds.
	maxPictureBytes = 32 << 20
	// maxTableRows bounds the metrics table (see tableRecords).
	maxTableRows = 200
)

// reportPictures are the pictures of a run directory that the report embeds, besides the
// curves it draws itself.
var reportPictures = []struct{ file, title, caption string }{
	{"denoised.png", "Denoised test images", "Clean, noisy and denoised test digits."},
}

// buildReport gathers the report of the checkpoint: its configuration, the metrics of
// the whole run (the run directory's metrics log up to the checkpoint's step) as curves
// and a table, the run's pictures and the pictures inspect draws.
func buildReport(ld *loaded, example int) (*reportPage, error) {
	ck := ld.ck
	run := runName(ck.Dir)
	p := &reportPage{
		Title:    "Locus run " + run,
		Subtitle: fmt.Sprintf("checkpoint %s, step %d: %s (locus %s, %s)", ck.Dir, ck.Step, ld.sess.Describe(), ck.Versions.Locus, ck.Versions.Go),
		Model:    indentJSON(ck.ModelConfig), Data: indentJSON(ck.DataConfig), TrainConfig: indentJSON(ck.TrainConfig),
	}
	runDir := filepath.Dir(filepath.Clean(ck.Dir))
	if _, err := os.Stat(filepath.Join(ck.Dir, train.LatestFile)); err == nil {
		runDir = ck.Dir // a run directory given as -ckpt
	}
	history := reportHistory(p, ck, runDir)
	p.history = history
	rows, thinned := tableRecords(history)
	p.Columns, p.Rows = metricsTable(rows)
	if thinned != "" {
		p.TableNote = thinned
	}
	// The curves are drawn afresh from the run's metrics, so that a run trained by an
	// older Locus gets today's plots.
	val := train.ValPrefix + train.MetricLoss
	if _, ok := lastMetric(history, val); !ok {
		val = ld.sess.BestMetric()
	}
	var err error
	if p.loss, err = train.LossChart(run+": training and validation loss", lossLabel(ld.sess), history, val); err != nil {
		return nil, err
	}
	if p.bandwidths, err = train.BandwidthChart(run+": learned bandwidths at each evaluation", bandwidthLabel(ld.sess), history); err != nil {
		return nil, err
	}
	for _, f := range []struct {
		c              *train.Chart
		title, caption string
	}{
		{p.loss, "Loss", "Training loss (smoothed for long runs, raw values faint) and validation metric at each evaluation."},
		{p.bandwidths, "Bandwidths", "The learned bandwidths at each evaluation, per layer and head."},
	} {
		if f.c == nil {
			continue
		}
		png, err := f.c.PNG(train.ChartWidth, train.ChartHeight)
		if err != nil {
			return nil, err
		}
		p.Figures = append(p.Figures, reportFigure{Title: f.title, Caption: f.caption, Src: pngURI(png)})
	}
	for _, f := range reportPictures {
		b, err := readRunPicture(runDir, f.file)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			p.warn(fmt.Sprintf("%s not embedded: %v", f.file, err))
			continue
		}
		p.Figures = append(p.Figures, reportFigure{Title: f.title, Caption: f.caption, Src: pngURI(b)})
	}
	var bw strings.Builder
	if err := printBandwidths(&bw, ld); err == nil {
		p.Bandwidths = bw.String()
	}
	title := fmt.Sprintf("%s, step %d: %s", run, ck.Step, ld.sess.Describe())
	if as, ok := attentionOf(ld.sess); ok {
		view, err := as.attention(ld.run, "", example)
		if err == nil {
			png, err := renderAttention(view, title+"\ninput: "+truncate(view.Input, 90))
			if err != nil {
				return nil, fmt.Errorf("draw attention: %w", err)
			}
			p.Figures = append(p.Figures, reportFigure{Title: "Attention", Caption: "Local-mean weights of every layer and head for validation example " + fmt.Sprint(example) + " (inspect -attention).", Src: pngURI(png)})
		} else if errors.Is(err, errUsage) {
			return nil, err // -example out of range: the user's mistake, not the run's
		} else {
			p.Notes = append(p.Notes, "no attention map: "+err.Error())
		}
	}
	if png, err := renderKernels(ld, title); err == nil {
		p.Figures = append(p.Figures, reportFigure{Title: "Kernels", Caption: "Each layer's kernel profile at its learned bandwidths (inspect -kernels).", Src: pngURI(png)})
	} else {
		p.Notes = append(p.Notes, "no kernel profiles: "+err.Error())
	}
	return p, nil
}

// reportHistory returns the run's metrics up to the checkpoint's step: the run
// directory's metrics log (train.ReadMetrics), or the checkpoint's own records where the
// run directory has none (a checkpoint copied away from its run, or one written when
// checkpoints held the whole history). A log that cannot be read is a warning.
func reportHistory(p *reportPage, ck *train.Checkpoint, runDir string) []train.Record {
	all, err := train.ReadMetrics(runDir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			p.warn(fmt.Sprintf("%s not shown: %v; the table and curves show the checkpoint's own records", train.MetricsFile, unwrapPath(err)))
		}
		return ck.History
	}
	var h []train.Record
	for _, r := range all {
		if r.Step <= ck.Step {
			h = append(h, r)
		}
	}
	if len(h) < len(ck.History) {
		return ck.History
	}
	return h
}

// tableRecords returns the records the metrics table shows: all of them up to
// maxTableRows; for a longer run, the evaluations (the records with validation
// metrics), thinned evenly to maxTableRows with the first and last kept when there are
// more, and a note saying so. The curves always draw every record.
func tableRecords(h []train.Record) ([]train.Record, string) {
	if len(h) <= maxTableRows {
		return h, ""
	}
	sel, what := h, "record"
	for _, r := range h {
		for k := range r.Metrics {
			if strings.HasPrefix(k, train.ValPrefix) {
				if what == "record" {
					sel, what = nil, "evaluation"
				}
				sel = append(sel, r)
				break
			}
		}
	}
	how := fmt.Sprintf("every %s", what)
	if len(sel) > maxTableRows {
		stride := (len(sel) + maxTableRows - 2) / (maxTableRows - 1)
		var thin []train.Record
		for i := 0; i < len(sel)-1; i += stride {
			thin = append(thin, sel[i])
		}
		sel = append(thin, sel[len(sel)-1])
		how = fmt.Sprintf("every %d-th %s and the last", stride, what)
	}
	return sel, fmt.Sprintf("The table shows %d of the run's %d records: %s (%s has them all, the plots draw them all).", len(sel), len(h), how, train.MetricsFile)
}

// readRunPicture reads a PNG of the run directory: a regular file, not a symbolic link
// (which could point at someone else's file), of at most maxPictureBytes.
func readRunPicture(runDir, name string) ([]byte, error) {
	b, err := regularfile.ReadFileNoFollow(filepath.Join(runDir, name), maxPictureBytes)
	if err != nil {
		return nil, unwrapPath(err)
	}
	if !bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) {
		return nil, fmt.Errorf("%s: not a PNG image", filepath.Join(runDir, name))
	}
	return b, nil
}

// warn records a problem that leaves something out of the report: shown on the page
// and printed by runReport.
func (p *reportPage) warn(msg string) {
	p.Warnings = append(p.Warnings, msg)
	p.Notes = append(p.Notes, "warning: "+msg)
}

func pngURI(b []byte) template.URL {
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b))
}

func indentJSON(raw json.RawMessage) string {
	var b bytes.Buffer
	if len(raw) == 0 || json.Indent(&b, raw, "", "  ") != nil {
		return "(none)"
	}
	return b.String()
}

// metricsTable returns the columns (step, then the recorded metrics, bandwidths last)
// and rows of the metrics history.
func metricsTable(history []train.Record) ([]string, [][]string) {
	seen := map[string]bool{}
	for _, r := range history {
		for k := range r.Metrics {
			seen[k] = true
		}
	}
	var names []string
	for k := range seen {
		names = append(names, k)
	}
	rank := func(k string) int {
		switch {
		case k == train.MetricLoss:
			return 0
		case strings.HasPrefix(k, train.ValPrefix):
			return 1
		case strings.HasPrefix(k, train.BandwidthPrefix):
			return 3
		}
		return 2
	}
	sort.Slice(names, func(i, j int) bool {
		if a, b := rank(names[i]), rank(names[j]); a != b {
			return a < b
		}
		return names[i] < names[j]
	})
	cols := append([]string{"step"}, names...)
	var rows [][]string
	for _, r := range history {
		row := []string{fmt.Sprint(r.Step)}
		for _, k := range names {
			v, ok := r.Metrics[k]
			switch {
			case !ok:
				row = append(row, "")
			case math.IsNaN(v):
				row = append(row, "NaN")
			default:
				row = append(row, fmt.Sprintf("%.4g", v))
			}
		}
		rows = append(rows, row)
	}
	return cols, rows
}

var reportTemplate = template.Must(template.New("report").Parse(`<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{{.Title}}</title>
<style>
body { font-family: -apple-system, "Segoe UI", Helvetica, Arial, sans-serif; margin: 2em auto; max-width: 70em; padding: 0 1em; color: #222; background: #fff; }
h1 { margin-bottom: 0.2em; }
.sub { color: #555; margin-top: 0; }
pre { background: #f5f5f5; padding: 0.8em; font-size: 85%; white-space: pre-wrap; overflow-wrap: anywhere; }
.configs { display: flex; gap: 1em; flex-wrap: wrap; }
.configs div { flex: 1 1 20em; min-width: 0; }
table { border-collapse: collapse; font-size: 80%; display: block; overflow-x: auto; max-height: 30em; }
th, td { border: 1px solid #ddd; padding: 0.2em 0.5em; text-align: right; white-space: nowrap; }
th { background: #eee; position: sticky; top: 0; white-space: normal; overflow-wrap: anywhere; max-width: 8em; vertical-align: bottom; }
figure { margin: 1.5em 0; }
figure img { max-width: 100%; border: 1px solid #ddd; }
figcaption { color: #555; font-size: 90%; }
</style>
</head>
<body>
<h1>{{.Title}}</h1>
<p class="sub">{{.Subtitle}}</p>
<h2>Configuration</h2>
<div class="configs">
<div><h3>Model</h3><pre>{{.Model}}</pre></div>
<div><h3>Data</h3><pre>{{.Data}}</pre></div>
<div><h3>Training</h3><pre>{{.TrainConfig}}</pre></div>
</div>
{{if .Bandwidths}}<h3>Learned bandwidths</h3><pre>{{.Bandwidths}}</pre>{{end}}
<h2>Metrics</h2>
{{if .Rows}}<table>
<tr>{{range .Columns}}<th>{{.}}</th>{{end}}</tr>
{{range .Rows}}<tr>{{range .}}<td>{{.}}</td>{{end}}</tr>
{{end}}</table>{{if .TableNote}}<p class="sub">{{.TableNote}}</p>{{end}}{{else}}<p>No metrics recorded.</p>{{end}}
<h2>Pictures</h2>
{{range .Figures}}<figure><h3>{{.Title}}</h3><img src="{{.Src}}" alt="{{.Title}}"><figcaption>{{.Caption}}</figcaption></figure>
{{end}}
{{range .Notes}}<p class="sub">{{.}}</p>{{end}}
</body>
</html>
`))

// lastMetric returns the last recorded value of a metric.
func lastMetric(history []train.Record, name string) (float64, bool) {
	for i := len(history) - 1; i >= 0; i-- {
		if v, ok := history[i].Metrics[name]; ok {
			return v, true
		}
	}
	return 0, false
}
