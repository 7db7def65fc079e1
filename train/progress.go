package train

import (
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

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
		if strings.HasPrefix(k, TrainPrefix) || strings.HasPrefix(k, ValPrefix) {
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

// barPrinter draws the progress bar of schollz/progressbar, fitted to the terminal.
// The library draws the percentage, the bar, the count of this Run's steps and
// [elapsed:time left], always; the description before them shows the loss, the
// validation metric, the learning rate and the throughput, and after a Resume the step
// the Run started from. As the width allows, the loss is kept first, then the bar, the
// start, the validation metric, the throughput and the learning rate; below barColumns
// columns the bar is hidden. The width is read from the terminal at every redraw, so the line
// follows a resize; when Out is not a terminal it is defaultBarWidth. Records with
// evaluations and messages are printed as lines above the bar.
type barPrinter struct {
	w     io.Writer
	bar   *progressbar.ProgressBar
	fd    int // the terminal's file descriptor; -1 when Out is not one
	items string
	steps int
	best  string // the validation metric to show
	start int    // the step the Run started from
	total int    // the bar's total: the steps of this Run

	last  Progress  // the latest step's progress
	drawn bool      // the bar is on the current line
	shown time.Time // when the bar was last drawn
	ended bool      // done or close ran
}

// defaultBarWidth is the width of a bar drawn to an Out that is not a terminal.
const defaultBarWidth = 80

// barThrottle is the shortest time between two redraws of the bar.
const barThrottle = 100 * time.Millisecond

// The bar is drawn on terminals of barColumns or more: minBarCells wide when it fits
// after the loss, and wider by what the other fields leave, up to maxBarCells.
const barColumns, minBarCells, maxBarCells = 60, 10, 30

var (
	themeBar   = progressbar.ThemeDefault
	themeNoBar = progressbar.Theme{Saucer: "█", SaucerPadding: " "} // no edges; drawn 0 cells wide
)

func newBarPrinter(l *Loop) *barPrinter {
	p := &barPrinter{w: l.Out, fd: -1, items: l.itemsName(), steps: l.Steps, best: l.Best, start: l.step,
		total: max(l.Steps-l.step, 1)}
	if f, ok := l.Out.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		p.fd = int(f.Fd())
	}
	p.last = Progress{Step: l.step, Steps: l.Steps}
	// The bar counts this Run's steps, so that its rate and time left are right after a
	// Resume. It is throttled here, not by the library, so that it can be drawn again
	// at once below a message. ANSI codes: a redraw returns to the start of the line and
	// erases the rest of it, instead of overwriting the widest line drawn with spaces,
	// which wrap once the terminal is narrower.
	p.bar = progressbar.NewOptions(p.total,
		progressbar.OptionSetWriter(l.Out),
		progressbar.OptionShowCount(),
		progressbar.OptionSetPredictTime(true),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(0),
		progressbar.OptionUseANSICodes(true),
		progressbar.OptionSetRenderBlankState(false),
	)
	p.bar.StartWithoutRender() // the elapsed time counts from the Run's start
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
	// The full bar is drawn by done: once full, the library draws it no more.
	if pr.Step-p.start < p.total && time.Since(p.shown) >= barThrottle {
		p.draw()
	}
}

// draw draws the bar of the latest progress over the current line.
func (p *barPrinter) draw() {
	p.fit(p.last, p.width())
	p.bar.Set(p.last.Step - p.start) // with the count shown, Set draws the bar
	p.drawn, p.shown = true, time.Now()
}

// fit sets the bar's description and width so that its line for pr takes at most width
// columns. Options set them without drawing; draw's Set then draws the line once.
func (p *barPrinter) fit(pr Progress, width int) {
	done := pr.Step - p.start
	var eta time.Duration // the time left at the Run's rate
	if left := p.total - done; done > 0 && left > 0 {
		eta = time.Duration(float64(pr.Elapsed) / float64(done) * float64(left))
	}
	// What the library draws besides the description and the bar's cells: the
	// percentage padded to 5 columns and a space, the bar's edges, then
	// " (done/total) [elapsed:left]". Its times are whole seconds; its time left follows
	// the rate of the last few seconds, which can be slower than the Run's, so room is
	// kept for ten times the Run's estimate.
	used := len(" 100% ") + len(fmt.Sprintf(" (%d/%d) [", done, p.total)) +
		durationWidth(pr.Elapsed+time.Second) + len(":") + durationWidth(10*eta+time.Second) + len("]")
	// The description's fields in the order they are shown; each is kept, in the order
	// of the loop below (the bar among them), while the line fits.
	const (
		fFrom = iota
		fLoss
		fVal
		fLR
		fRate
		fBar // not in the description: the library draws it
		nFields
	)
	var text [nFields]string
	if p.start > 0 {
		text[fFrom] = fmt.Sprintf("from step %d:", p.start)
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
	cells := -1 // the bar's cells; -1: no bar
	var desc strings.Builder
	var shown [nFields]bool
	for _, f := range []int{fLoss, fBar, fFrom, fVal, fRate, fLR} {
		if f == fBar {
			if width+1 >= barColumns && used+len("||")+minBarCells <= width {
				cells, used = minBarCells, used+len("||")+minBarCells
			}
			continue
		}
		// A field and a space (the last one's is not drawn: the percentage is padded).
		if n := utf8.RuneCountInString(text[f]) + 1; text[f] != "" && used+n <= width {
			shown[f], used = true, used+n
		}
	}
	for f := range fBar {
		if shown[f] {
			if desc.Len() > 0 {
				desc.WriteByte(' ')
			}
			desc.WriteString(text[f])
		}
	}
	theme, barWidth := themeNoBar, 0
	if cells >= 0 {
		theme, barWidth = themeBar, min(cells+width-used, maxBarCells)
	}
	progressbar.OptionSetDescription(desc.String())(p.bar)
	progressbar.OptionSetTheme(theme)(p.bar)
	progressbar.OptionSetWidth(barWidth)(p.bar)
}

// durationWidth is the width of the longest time.Duration string of whole seconds up
// to d: "9s", "59s", "9m59s", "59m59s", then hours and "h59m59s".
func durationWidth(d time.Duration) int {
	switch {
	case d < 10*time.Second:
		return 2
	case d < time.Minute:
		return 3
	case d < 10*time.Minute:
		return 5
	case d < time.Hour:
		return 6
	}
	return len(strconv.Itoa(int(d/time.Hour))) + len("h59m59s")
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

// lines prints lines above the bar and draws the bar again below them, unless it is
// full: done draws that.
func (p *barPrinter) lines(ls []string) {
	if p.drawn {
		p.bar.Clear()
	}
	for _, l := range ls {
		fmt.Fprintln(p.w, l)
	}
	p.drawn = false
	if done := p.last.Step - p.start; !p.ended && done > 0 && done < p.total {
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
	if pr.Step > p.start {
		p.draw()
	}
	if p.drawn {
		fmt.Fprintln(p.w)
	}
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
