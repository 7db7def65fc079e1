package train

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// printer shows training progress on Loop.Out.
type printer interface {
	step(p Progress)  // after every step
	record(r Record)  // a metrics record was written
	message(s string) // an event worth a line: checkpoint, early stop, ...
	done(p Progress)  // training ended normally
	close()           // release the output
}

func newPrinter(l *Loop) printer {
	if l.Out == nil {
		return nopPrinter{}
	}
	f, isFile := l.Out.(*os.File)
	if l.forceBar || (isFile && term.IsTerminal(int(f.Fd()))) {
		return newBarPrinter(l)
	}
	return &linePrinter{w: l.Out, steps: l.Steps, items: l.itemsName()}
}

type nopPrinter struct{}

func (nopPrinter) step(Progress)  {}
func (nopPrinter) record(Record)  {}
func (nopPrinter) message(string) {}
func (nopPrinter) done(Progress)  {}
func (nopPrinter) close()         {}

// linePrinter writes one line per record, for logs and pipes.
type linePrinter struct {
	w     io.Writer
	steps int
	items string
}

func (p *linePrinter) step(Progress) {}

func (p *linePrinter) record(r Record) { fmt.Fprintln(p.w, formatRecord(r, p.steps, p.items)) }

func (p *linePrinter) message(s string) { fmt.Fprintln(p.w, s) }

func (p *linePrinter) done(pr Progress) {
	fmt.Fprintf(p.w, "done: %d steps in %s\n", pr.Step, pr.Elapsed.Round(time.Millisecond))
}

func (p *linePrinter) close() {}

// formatRecord renders a record as "step 100/200 loss 0.4123 val_loss 0.43 lr 1e-03
// grad_norm 0.532 1.2k tokens/s".
func formatRecord(r Record, steps int, items string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "step %d/%d", r.Step, steps)
	if v, ok := r.Metrics[MetricLoss]; ok {
		fmt.Fprintf(&b, "  loss %s", formatValue(v))
	}
	for _, k := range slices.Sorted(maps.Keys(r.Metrics)) {
		if strings.HasPrefix(k, ValPrefix) {
			fmt.Fprintf(&b, "  %s %s", k, formatValue(r.Metrics[k]))
		}
	}
	if v, ok := r.Metrics[MetricLR]; ok {
		fmt.Fprintf(&b, "  lr %.3g", v)
	}
	if v, ok := r.Metrics[MetricGradNorm]; ok {
		fmt.Fprintf(&b, "  grad_norm %.3g", v)
	}
	if v, ok := r.Metrics[MetricItemsPerS]; ok {
		fmt.Fprintf(&b, "  %s %s/s", humanize(v), items)
	} else if v, ok := r.Metrics[MetricStepsPerS]; ok {
		fmt.Fprintf(&b, "  %s steps/s", humanize(v))
	}
	return b.String()
}

// formatValue shows a metric with 4 significant digits.
func formatValue(v float64) string { return fmt.Sprintf("%.4g", v) }

// humanize shows a rate with a k/M suffix.
func humanize(v float64) string {
	switch a := math.Abs(v); {
	case a >= 1e6:
		return fmt.Sprintf("%.3gM", v/1e6)
	case a >= 1e3:
		return fmt.Sprintf("%.3gk", v/1e3)
	}
	return fmt.Sprintf("%.3g", v)
}

// barPrinter draws a progress bar whose description shows the latest loss, validation
// metric, learning rate and throughput; records with evaluations and messages are
// printed as lines above it.
type barPrinter struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	items string
	steps int
	best  string // the validation metric to show
	start int    // the step the Run started from
}

func newBarPrinter(l *Loop) *barPrinter {
	p := &barPrinter{w: l.Out, items: l.itemsName(), steps: l.Steps, best: l.Best, start: l.step}
	// The bar counts this Run's steps, so that its rate and time left are right after a
	// Resume; the description shows the step of the whole run.
	p.bar = progressbar.NewOptions(max(l.Steps-l.step, 1),
		progressbar.OptionSetWriter(l.Out),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetWidth(20),
		progressbar.OptionSetRenderBlankState(false),
	)
	return p
}

// step updates the bar. The bar's count is the step (after a Resume, the steps of this
// Run, with the step it started from in the description), so the description does not
// repeat it: the bar renders when the description changes, and a second count one
// step behind would show.
func (p *barPrinter) step(pr Progress) {
	var b strings.Builder
	if p.start > 0 {
		fmt.Fprintf(&b, "from step %d: ", p.start)
	}
	fmt.Fprintf(&b, "loss %s", formatValue(pr.Loss))
	if name, v, ok := p.valMetric(pr.Eval); ok {
		fmt.Fprintf(&b, " %s %s", name, formatValue(v))
	}
	fmt.Fprintf(&b, " lr %.2g", pr.LR)
	if pr.ItemsPerSec > 0 {
		fmt.Fprintf(&b, " %s %s/s", humanize(pr.ItemsPerSec), p.items)
	}
	p.bar.Set(pr.Step - p.start)
	p.bar.Describe(b.String())
}

// valMetric picks the evaluation metric to show: Best if it is one, else the loss.
func (p *barPrinter) valMetric(m Metrics) (string, float64, bool) {
	if name, ok := strings.CutPrefix(p.best, ValPrefix); ok {
		if v, ok := m[name]; ok {
			return p.best, v, true
		}
	}
	if v, ok := m[MetricLoss]; ok {
		return metricValLoss, v, true
	}
	return "", 0, false
}

func (p *barPrinter) record(r Record) {
	for k := range r.Metrics {
		if strings.HasPrefix(k, ValPrefix) {
			p.message(formatRecord(r, p.steps, p.items))
			return
		}
	}
}

func (p *barPrinter) message(s string) {
	p.bar.Clear()
	fmt.Fprintln(p.w, s)
}

func (p *barPrinter) done(pr Progress) {
	p.bar.Finish()
	fmt.Fprintf(p.w, "\ndone: %d steps in %s\n", pr.Step, pr.Elapsed.Round(time.Millisecond))
}

func (p *barPrinter) close() { p.bar.Exit() }
