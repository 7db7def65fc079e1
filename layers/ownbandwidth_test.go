package layers

import (
	"strings"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// A standalone bandwidth is fixed or learned as one value; the modes that need an
// attention layer, and bad values, are errors naming the field.
func TestNewBandwidth(t *testing.T) {
	ps, err := autodiff.NewParams(autodiff.Float64, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		cfg  BandwidthConfig
		want string
	}{
		{BandwidthConfig{Mode: BandwidthHead}, "Mode = head, want fixed or layer"},
		{BandwidthConfig{Mode: BandwidthKNN}, "Mode = knn, want fixed or layer"},
		{BandwidthConfig{Mode: BandwidthLayer, Init: -1}, "Init = -1"},
		{BandwidthConfig{Mode: BandwidthLayer, Init: 0.1, Min: 0.2}, "must exceed Min"},
	} {
		if _, err := NewBandwidth(ps.Scope("x"), c.cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: error %v, want one containing %q", c.cfg, err, c.want)
		}
	}
	fixed, err := NewBandwidth(ps.Scope("f"), BandwidthConfig{})
	if err != nil {
		t.Fatal(err)
	}
	if fixed.Value() != 1 || ps.Get("f.bandwidth.rho") != nil {
		t.Errorf("fixed default: h = %g and parameter %v, want 1 and none", fixed.Value(), ps.Get("f.bandwidth.rho"))
	}
	learned, err := NewBandwidth(ps.Scope("l"), BandwidthConfig{Mode: BandwidthLayer, Init: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if h := learned.Value(); h < 0.3-1e-12 || h > 0.3+1e-12 || ps.Get("l.bandwidth.rho") == nil {
		t.Errorf("learned: h = %g, parameter %v; want 0.3 and l.bandwidth.rho", h, ps.Get("l.bandwidth.rho"))
	}
}
