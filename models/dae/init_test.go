package dae

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
	"testing"

	"github.com/locusml/locus/autodiff"
)

// paramDigest hashes the names, shapes and float32 values of ps in creation order.
func paramDigest(ps *autodiff.Params) string {
	h := sha256.New()
	var buf [4]byte
	for _, p := range ps.List() {
		fmt.Fprintf(h, "%s%v;", p.Name(), p.Shape())
		for _, v := range p.Float32s() {
			binary.LittleEndian.PutUint32(buf[:], math.Float32bits(v))
			h.Write(buf[:])
		}
	}
	return fmt.Sprintf("%x", h.Sum(nil)[:12])
}

// TestInitUnchanged pins the initial parameters of both default models for seed 7. The
// digests were recorded with the package's former private linear layer, before it was
// replaced by layers.Linear: the names, shapes, order of random draws and values are
// the same, so checkpoints and results of earlier runs stay reproducible.
func TestInitUnchanged(t *testing.T) {
	for _, tc := range []struct {
		cfg  Config
		want string
	}{
		{DefaultConfig(), "170871c614bdc9f9905470f9"},
		{DefaultLocalizedConfig(), "c637e48884a9299bb07bd572"},
	} {
		ps, err := autodiff.NewParams(autodiff.Float32, 7)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := New(tc.cfg, ps); err != nil {
			t.Fatal(err)
		}
		if got := paramDigest(ps); got != tc.want {
			t.Errorf("%s: initial parameters digest %s, want %s", tc.cfg.Kind, got, tc.want)
		}
	}
}
