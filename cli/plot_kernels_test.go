package cli

import (
	"bytes"
	"math"
	"path/filepath"
	"strings"
	"testing"

	"gonum.org/v1/plot/vg"
)

// TestKernelChartsTellTheModel: kernels.png of a fixed-bandwidth model says so and
// draws its window as a position panel (1 inside |s − t| < W, 0 outside); a learned
// relbias is drawn per head from the checkpoint's biases; the bandwidth's unit follows
// the kernel.
func TestKernelChartsTellTheModel(t *testing.T) {
	dir := t.TempDir()
	fixed := filepath.Join(dir, "fixed")
	trainTiny(t, fixed, "-steps", "3", "-eval-every", "3", "-kernel", "gaussian * window(3)")
	ld, err := fromCheckpoint(fixed, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	fig, err := kernelCharts(ld)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fig.Subtitle, "fixed bandwidth") || strings.Contains(fig.Subtitle, "learned") {
		t.Errorf("subtitle %q, want a fixed bandwidth", fig.Subtitle)
	}
	if len(fig.Rows) != 1 || len(fig.Rows[0]) != 2 {
		t.Fatalf("%d rows, want one layer with a content and a position panel", len(fig.Rows))
	}
	content, pos := fig.Rows[0][0], fig.Rows[0][1]
	if content.Plot.Title.Text != "blocks.0.attn: gaussian" || content.Plot.X.Label.Text != "distance ‖q − k‖" || len(content.Entries) != 1 {
		t.Errorf("content panel %q, x %q, legend %q", content.Plot.Title.Text, content.Plot.X.Label.Text, content.Entries)
	}
	if pos.Plot.Title.Text != "blocks.0.attn: window(3)" || pos.Plot.X.Label.Text != "key offset s − t (positions)" || strings.Join(pos.Entries, "|") != "all heads" {
		t.Errorf("position panel %q, x %q, legend %q", pos.Plot.Title.Text, pos.Plot.X.Label.Text, pos.Entries)
	}
	for _, p := range pos.Series["all heads"] {
		want := 0.0
		if math.Abs(p.X) < 3 {
			want = 1
		}
		if p.Y != want {
			t.Errorf("window(3) at offset %g: %g, want %g", p.X, p.Y, want)
		}
	}
	if got := bandwidthLabel(ld.sess); got != "bandwidth h (units of the distance ‖q − k‖)" {
		t.Errorf("bandwidth label %q", got)
	}

	learned := filepath.Join(dir, "learned")
	trainTiny(t, learned, "-steps", "3", "-eval-every", "3", "-kernel", "exponential * relbias(2) * distance(0.5)", "-bandwidth", "head")
	ld, err = fromCheckpoint(learned, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if fig, err = kernelCharts(ld); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(fig.Subtitle, "learned bandwidth") {
		t.Errorf("subtitle %q", fig.Subtitle)
	}
	pos = fig.Rows[0][len(fig.Rows[0])-1]
	if strings.Join(pos.Entries, "|") != "head 0|head 1" || pos.Plot.Title.Text != "blocks.0.attn: relbias(2) * distance(0.5)" {
		t.Fatalf("position panel %q, legend %q", pos.Plot.Title.Text, pos.Entries)
	}
	bias := floats(kernelParam(ld.ck, "blocks.0.attn", ".kernel.position.0", ".weight"))
	for h, name := range pos.Entries {
		for _, p := range pos.Series[name] {
			r := int(p.X)
			want := math.Exp(bias[h*5+min(max(r, -2), 2)+2] - 0.5*math.Abs(p.X))
			if math.Abs(p.Y-want) > 1e-9 {
				t.Errorf("head %d at offset %d: %g, want %g", h, r, p.Y, want)
			}
		}
	}
	if got := bandwidthLabel(ld.sess); got != "bandwidth h (units of the score q·k)" {
		t.Errorf("bandwidth label %q", got)
	}
	if _, err := renderKernels(ld, "title"); err != nil {
		t.Fatal(err)
	}
}

// TestFigureHeaderFits: a long title is wrapped to the figure's width, its height grows.
func TestFigureHeaderFits(t *testing.T) {
	title := "ldae, step 20: mnist, ldae in=784 width=256 levels=2 prototypes=128 heads=4 kernel=gaussian h0=2 h_min=0.05 noise=gaussian(0.3)"
	w := 14.5 * vg.Centimeter
	hd := newFigureHeader(title, "MSE per pixel vs clean, these 16 test images: denoised 0.07106, noisy input 0.04842", w)
	if len(hd.lines) < 3 {
		t.Fatalf("lines %q, want the title wrapped", hd.lines)
	}
	for i, l := range hd.lines {
		if lw := headerStyle(hd.sizes[i]).Width(l); lw > w-2*headerMargin {
			t.Errorf("line %q is %.0f wide in a figure of %.0f", l, lw, w)
		}
	}
	short := newFigureHeader("run", "sub", w)
	if hd.height <= short.height {
		t.Errorf("wrapped header %.0f high, a two-line one %.0f", hd.height, short.height)
	}
}
