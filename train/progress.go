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
	"unicode/utf8"

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
	return &linePrinter{w: l.Out, steps: l.Steps, items: l.itemsName(), start: l.step}
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
	start int // the step the Run started from
}

func (p *linePrinter) step(Progress) {}

func (p *linePrinter) record(r Record) { fmt.Fprintln(p.w, formatRecord(r, p.steps, p.items)) }

func (p *linePrinter) message(s string) { fmt.Fprintln(p.w, s) }

func (p *linePrinter) done(pr Progress) {
	fmt.Fprintln(p.w, doneLine(pr, p.start))
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

// barPrinter draws a one-line progress bar that fits the terminal: the step count and
// the time left always, then, as the width allows, the loss, the percentage, the bar,
// the validation metric, the throughput, the learning rate and the elapsed time.
// Records with evaluations and messages are printed as lines above it. The width is
// read from the terminal at every redraw, so the bar follows a resize; when Out is not
// a terminal it is defaultBarWidth.
type barPrinter struct {
	w     io.Writer
	fd    int // the terminal's file descriptor; -1 when Out is not one
	items string
	steps int
	best  string // the validation metric to show
	start int    // the step the Run started from

	last  Progress  // the latest step's progress
	drawn bool      // the bar is on the current line
	shown time.Time // when the bar was last drawn
	ended bool      // done or close ran
}

// defaultBarWidth is the width of a bar drawn to an Out that is not a terminal.
const defaultBarWidth = 80

// barThrottle is the shortest time between two redraws of the bar.
const barThrottle = 100 * time.Millisecond

// eraseLine returns the cursor to the start of the line and erases it.
const eraseLine = "\r\x1b[K"

func newBarPrinter(l *Loop) *barPrinter {
	p := &barPrinter{w: l.Out, fd: -1, items: l.itemsName(), steps: l.Steps, best: l.Best, start: l.step}
	if f, ok := l.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.fd = int(f.Fd())
	}
	p.last = Progress{Step: l.step, Steps: l.Steps}
	return p
}

// width returns the number of columns the bar may use: one less than the terminal's,
// so that writing the last column never makes the terminal wrap.
func (p *barPrinter) width() int {
	w := defaultBarWidth
	if p.fd >= 0 {
		if cols, _, err := term.GetSize(p.fd); err == nil && cols > 0 {
			w = cols
		}
	}
	return max(w-1, 1)
}

func (p *barPrinter) step(pr Progress) {
	p.last = pr
	if time.Since(p.shown) >= barThrottle {
		p.draw()
	}
}

// draw writes the bar of the latest progress over the current line.
func (p *barPrinter) draw() {
	fmt.Fprint(p.w, eraseLine+p.line(p.last, p.width()))
	p.drawn, p.shown = true, time.Now()
}

// line lays out the bar of pr in at most width columns.
func (p *barPrinter) line(pr Progress, width int) string {
	done := pr.Step - p.start // the steps of this Run, which give its rate
	var eta time.Duration
	if left := pr.Steps - pr.Step; done > 0 && left > 0 {
		eta = time.Duration(float64(pr.Elapsed) / float64(done) * float64(left))
	}
	fraction := 1.0
	if pr.Steps > 0 {
		fraction = min(max(float64(pr.Step)/float64(pr.Steps), 0), 1)
	}
	// The fields in the order they are shown; each is kept, in the order of keep, while
	// the line fits.
	const (
		fCount = iota
		fBar
		fPercent
		fLoss
		fVal
		fLR
		fRate
		fElapsed
		fETA
		nFields // the number of fields
	)
	text := [nFields]string{
		fCount:   fmt.Sprintf("%d/%d", pr.Step, pr.Steps),
		fPercent: fmt.Sprintf("%3.0f%%", 100*fraction),
		fElapsed: "elapsed " + formatDuration(pr.Elapsed),
		fETA:     "eta " + formatDuration(eta),
	}
	if done > 0 {
		text[fLoss] = "loss " + formatValue(pr.Loss)
		text[fLR] = fmt.Sprintf("lr %.2g", pr.LR)
	}
	if name, v, ok := p.valMetric(pr.Eval); ok {
		text[fVal] = name + " " + formatValue(v)
	}
	if pr.ItemsPerSec > 0 {
		text[fRate] = humanize(pr.ItemsPerSec) + " " + p.items + "/s"
	}
	// On a terminal of barColumns or more, the bar takes minBar cells when it fits after
	// the loss and the percentage, and what the other fields leave, up to maxBar.
	const minBar, maxBar, barColumns = 10, 30, 60
	if width+1 >= barColumns {
		text[fBar] = strings.Repeat(" ", minBar+2)
	}
	keep := []int{fCount, fETA, fLoss, fPercent, fBar, fVal, fRate, fLR, fElapsed}
	var shown [nFields]bool
	used := -1 // columns of the fields shown, with a space between two
	for _, f := range keep {
		n := utf8.RuneCountInString(text[f])
		if n == 0 {
			continue
		}
		if used+1+n > width && f != fCount && f != fETA {
			continue
		}
		shown[f], used = true, used+1+n
	}
	if shown[fBar] {
		cells := min(minBar+width-used, maxBar)
		full := int(fraction * float64(cells))
		text[fBar] = "|" + strings.Repeat("█", full) + strings.Repeat(" ", cells-full) + "|"
	}
	var b strings.Builder
	for f := range nFields {
		if !shown[f] {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(text[f])
	}
	return truncateColumns(b.String(), width)
}

// truncateColumns cuts s to at most n runes (the bar's characters are one column each).
func truncateColumns(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}

// formatDuration shows a duration to the second: "45s", "3m07s", "2h05m".
func formatDuration(d time.Duration) string {
	s := int64(d.Round(time.Second) / time.Second)
	switch {
	case s < 60:
		return fmt.Sprintf("%ds", s)
	case s < 3600:
		return fmt.Sprintf("%dm%02ds", s/60, s%60)
	}
	return fmt.Sprintf("%dh%02dm", s/3600, s/60%60)
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
			p.lines(wrapFields(formatRecord(r, p.steps, p.items), p.width()))
			return
		}
	}
}

func (p *barPrinter) message(s string) { p.lines([]string{s}) }

// lines prints lines above the bar and draws the bar again below them.
func (p *barPrinter) lines(ls []string) {
	if p.drawn {
		fmt.Fprint(p.w, eraseLine)
	}
	for _, l := range ls {
		fmt.Fprintln(p.w, l)
	}
	p.drawn = false
	if !p.ended && p.last.Step > p.start {
		p.draw()
	}
}

// wrapFields breaks a record line between its fields (which formatRecord separates by
// two spaces) so that each line fits width; continuation lines are indented.
func wrapFields(s string, width int) []string {
	var out []string
	cur := ""
	for _, f := range strings.Split(s, "  ") {
		switch {
		case cur == "":
			cur = f
		case utf8.RuneCountInString(cur)+2+utf8.RuneCountInString(f) <= width:
			cur += "  " + f
		default:
			out = append(out, cur)
			cur = "    " + f
		}
	}
	return append(out, cur)
}

func (p *barPrinter) done(pr Progress) {
	p.last = pr
	p.draw()
	fmt.Fprintln(p.w)
	p.drawn, p.ended = false, true
	fmt.Fprintln(p.w, doneLine(pr, p.start))
}

// close ends the bar's line, so that what is printed next (an error) starts a line.
func (p *barPrinter) close() {
	if p.drawn {
		fmt.Fprintln(p.w)
		p.drawn = false
	}
	p.ended = true
}

// doneLine is the last line of a Run that started at step start: the steps it ran,
// with their numbers after a Resume.
func doneLine(pr Progress, start int) string {
	ran := pr.Step - start
	took := pr.Elapsed.Round(time.Millisecond)
	if start == 0 {
		return fmt.Sprintf("done: %d steps in %s", ran, took)
	}
	if ran == 0 {
		return fmt.Sprintf("done: no steps to run (the run was already at step %d) in %s", pr.Step, took)
	}
	return fmt.Sprintf("done: %d steps (steps %d-%d) in %s", ran, start+1, pr.Step, took)
}
