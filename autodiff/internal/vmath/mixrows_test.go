package vmath

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"unsafe"
)

// TestMixRowLayout checks the offsets the assembly loops read a MixRow at.
func TestMixRowLayout(t *testing.T) {
	var r MixRow
	got := []uintptr{unsafe.Offsetof(r.E0), unsafe.Offsetof(r.E1), unsafe.Offsetof(r.Dots), unsafe.Offsetof(r.KK),
		unsafe.Offsetof(r.P), unsafe.Offsetof(r.CS), unsafe.Offsetof(r.QQ), unsafe.Offsetof(r.S0), unsafe.Offsetof(r.S1),
		unsafe.Offsetof(r.S2), unsafe.Offsetof(r.R0), unsafe.Offsetof(r.R1), unsafe.Offsetof(r.R2), unsafe.Offsetof(r.R3), unsafe.Sizeof(r)}
	want := []uintptr{mixRowE0, mixRowE1, mixRowDots, mixRowKK, mixRowP, mixRowCS, mixRowQQ, mixRowS0, mixRowS1,
		mixRowS2, mixRowR0, mixRowR1, mixRowR2, mixRowR3, mixRowSize}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("MixRow layout: offset %d is %d, the assembly reads %d", i, got[i], want[i])
		}
	}
}

// guarded returns a copy of x with eight guard values after it, and its first len(x).
func guarded(x []float32) []float32 {
	y := append(append(make([]float32, 0, len(x)+8), x...), 5, 5, 5, 5, 5, 5, 5, 5)
	return y[:len(x)]
}

// checkGuards fails when a loop wrote past x (guarded's).
func checkGuards(t *testing.T, what string, x []float32) {
	t.Helper()
	for i, v := range x[len(x):cap(x)] {
		if v != 5 {
			t.Fatalf("%s wrote [%d] = %v past its row", what, len(x)+i, v)
		}
	}
}

// TestMixRows checks the row-block loops against the one-row loops, bit for bit, over
// blocks of rows of every length in mixLengths (empty ones included) with their own
// queries' norms and shifts, special values among the inputs, on each path; and that no
// loop writes past a row.
func TestMixRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(73, 74))
	type row struct{ dots, kk, x0 []float32 }
	var in []row
	for _, n := range append(mixLengths, mixLengths...) {
		dots, kk, _ := mixInputs(rng, n)
		in = append(in, row{dots, kk, elemInput(rng, n)})
	}
	qqs := []float32{0, 1.25, 3, float32(math.Inf(1))}
	onEachPath(func(avx bool) {
		for _, ta := range mixTerms {
			for _, b := range mixSecond() {
				a := Comp{C: -1.3, Term: ta}
				rows := make([]MixRow, len(in))
				want := make([]MixRow, len(in))
				for i, r := range in {
					n, qq := len(r.dots), qqs[i%len(qqs)]
					for _, m := range []*MixRow{&rows[i], &want[i]} {
						*m = MixRow{E0: guarded(make([]float32, n)), E1: guarded(make([]float32, n)), Dots: r.dots, KK: r.kk, QQ: qq}
					}
					want[i].R0 = float32(math.Inf(-1))
					if n > 0 {
						want[i].R0 = MixScores2(want[i].E0, want[i].E1, r.dots, qq, r.kk, a, b)
					}
				}
				MixScores2Rows(rows, a, b)
				for i := range rows {
					g, w := &rows[i], &want[i]
					checkGuards(t, "MixScores2Rows", g.E0)
					checkGuards(t, "MixScores2Rows", g.E1)
					if j, k := mixDiff(g.E0, w.E0), mixDiff(g.E1, w.E1); j >= 0 || k >= 0 || !mixSame(g.R0, w.R0) && g.R0 != w.R0 {
						t.Fatalf("avx2=%v terms %d,%d rational %v row %d (n=%d): MixScores2Rows differs from MixScores2 at e0[%d], e1[%d]; largest %v, want %v",
							avx, ta, b.Term, b.Rational, i, len(g.E0), j, k, g.R0, w.R0)
					}
				}
				// ExpShiftSum2Rows from the rows' own inputs and shifts, a finite one for
				// every row.
				for i, r := range in {
					s0, s1 := float32(i%5)-2, float32(i%3)*0.75-0.5
					for _, m := range []*MixRow{&rows[i], &want[i]} {
						copy(m.E0, r.x0)
						m.S0, m.S1 = s0, s1
					}
					want[i].R0, want[i].R1 = 0, 0
					if len(r.x0) > 0 {
						want[i].R0, want[i].R1 = ExpShiftSum2(want[i].E0, want[i].E1, s0, s1, b.Rational)
					}
				}
				ExpShiftSum2Rows(rows, b.Rational)
				for i := range rows {
					g, w := &rows[i], &want[i]
					checkGuards(t, "ExpShiftSum2Rows", g.E0)
					if j := mixDiff(g.E0, w.E0); j >= 0 || !mixSame(g.R0, w.R0) || !mixSame(g.R1, w.R1) {
						t.Fatalf("avx2=%v values %v row %d (n=%d): ExpShiftSum2Rows differs from ExpShiftSum2 at e0[%d]; sums %v, %v, want %v, %v",
							avx, b.Rational, i, len(g.E0), j, g.R0, g.R1, w.R0, w.R1)
					}
				}
				for i := range rows {
					f := float32(i%4)*0.3 + 1e-38
					rows[i].S0, want[i].S0 = f, f
					ScaleFlush(want[i].E0, f)
				}
				ScaleFlushRows(rows)
				for i := range rows {
					g, w := &rows[i], &want[i]
					checkGuards(t, "ScaleFlushRows", g.E0)
					if j := mixDiff(g.E0, w.E0); j >= 0 {
						t.Fatalf("avx2=%v row %d (n=%d): ScaleFlushRows [%d] = %v, want %v", avx, i, len(g.E0), j, g.E0[j], w.E0[j])
					}
				}
				// MixShareRows, then MixCoefs2Rows with every row adding into one cs, from
				// the rows' products d (x0), weights (the scaled values) and shifts.
				cs, wcs := guarded(make([]float32, 64)), guarded(make([]float32, 64))
				for i, r := range in {
					n := len(r.x0)
					p := append([]float32(nil), want[i].E0...)
					for _, m := range []*MixRow{&rows[i], &want[i]} {
						copy(m.E0, r.x0)
						m.P, m.S0, m.S1, m.S2 = p, float32(i%3)-1, 0.25*float32(i%5), 1.5-0.1*float32(i%7)
						m.CS = wcs[:n]
						if m == &rows[i] {
							m.CS = cs[:n]
						}
					}
					w := &want[i]
					w.R0, w.R1 = 0, 0
					if n > 0 {
						w.R0, w.R1 = MixShare(w.E1, w.E0, p, r.dots, w.QQ, r.kk, b, w.S0, w.S1, w.S2)
					}
				}
				MixShareRows(rows, b)
				for i := range rows {
					g, w := &rows[i], &want[i]
					checkGuards(t, "MixShareRows", g.E0)
					checkGuards(t, "MixShareRows", g.E1)
					if j, k := mixDiff(g.E0, w.E0), mixDiff(g.E1, w.E1); j >= 0 || k >= 0 || !mixSame(g.R0, w.R0) || !mixSame(g.R1, w.R1) {
						t.Fatalf("avx2=%v term %d rational %v row %d (n=%d): MixShareRows differs from MixShare at d[%d], g[%d]; sums %v, %v, want %v, %v",
							avx, b.Term, b.Rational, i, len(g.E0), j, k, g.R0, g.R1, w.R0, w.R1)
					}
				}
				for i := range want {
					w := &want[i]
					w.R0, w.R1, w.R2, w.R3 = 0, 0, 0, 0
					if len(w.E0) > 0 {
						w.R0, w.R1, w.R2, w.R3 = MixCoefs2(w.E0, w.E1, w.Dots, w.QQ, w.KK, w.CS, a, b)
					}
				}
				MixCoefs2Rows(rows, a, b)
				checkGuards(t, "MixCoefs2Rows", cs)
				if j := mixDiff(cs, wcs); j >= 0 {
					t.Fatalf("avx2=%v terms %d,%d rational %v: MixCoefs2Rows cs[%d] = %v, want %v", avx, ta, b.Term, b.Rational, j, cs[j], wcs[j])
				}
				for i := range rows {
					g, w := &rows[i], &want[i]
					checkGuards(t, "MixCoefs2Rows", g.E0)
					if j := mixDiff(g.E0, w.E0); j >= 0 || !mixSame(g.R0, w.R0) || !mixSame(g.R1, w.R1) || !mixSame(g.R2, w.R2) || !mixSame(g.R3, w.R3) {
						t.Fatalf("avx2=%v terms %d,%d rational %v row %d (n=%d): MixCoefs2Rows differs from MixCoefs2 at d[%d]; sums %v, want %v",
							avx, ta, b.Term, b.Rational, i, len(g.E0), j, []float32{g.R0, g.R1, g.R2, g.R3}, []float32{w.R0, w.R1, w.R2, w.R3})
					}
				}
			}
		}
	})
}

// TestMixRowsShort checks that each row-block loop refuses a row one of whose slices is
// shorter than its E0, on each path, naming the row.
func TestMixRowsShort(t *testing.T) {
	lin, dist := Comp{C: 1}, Comp{C: 1, Term: TermDist}
	loops := []struct {
		name  string
		short func(r *MixRow)
		run   func(rows []MixRow)
	}{
		{"MixScores2Rows e1", func(r *MixRow) { r.E1 = r.E1[:3] }, func(rows []MixRow) { MixScores2Rows(rows, lin, lin) }},
		{"MixScores2Rows dots", func(r *MixRow) { r.Dots = r.Dots[:3] }, func(rows []MixRow) { MixScores2Rows(rows, lin, lin) }},
		{"MixScores2Rows kk", func(r *MixRow) { r.KK = r.KK[:3] }, func(rows []MixRow) { MixScores2Rows(rows, lin, dist) }},
		{"ExpShiftSum2Rows e1", func(r *MixRow) { r.E1 = r.E1[:3] }, func(rows []MixRow) { ExpShiftSum2Rows(rows, false) }},
		{"MixShareRows p", func(r *MixRow) { r.P = r.P[:3] }, func(rows []MixRow) { MixShareRows(rows, lin) }},
		{"MixShareRows kk", func(r *MixRow) { r.KK = nil }, func(rows []MixRow) { MixShareRows(rows, dist) }},
		{"MixCoefs2Rows dots", func(r *MixRow) { r.Dots = r.Dots[:3] }, func(rows []MixRow) { MixCoefs2Rows(rows, lin, lin) }},
		{"MixCoefs2Rows cs", func(r *MixRow) { r.CS = r.CS[:3] }, func(rows []MixRow) { MixCoefs2Rows(rows, lin, dist) }},
	}
	onEachPath(func(avx bool) {
		for _, l := range loops {
			rows := make([]MixRow, 2)
			for i := range rows {
				e := func() []float32 { return make([]float32, 4) }
				rows[i] = MixRow{E0: e(), E1: e(), Dots: e(), KK: e(), P: e(), CS: e()}
			}
			l.short(&rows[1])
			func() {
				defer func() {
					if msg, _ := recover().(string); !strings.Contains(msg, "row 1 of 4") {
						t.Errorf("avx2=%v avx512=%v %s: panic %q, want one naming row 1", avx, hasAVX512, l.name, msg)
					}
				}()
				l.run(rows)
			}()
		}
	})
}
