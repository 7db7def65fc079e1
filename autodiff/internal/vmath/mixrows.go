package vmath

import (
	"fmt"
	"math"
)

// MixRow is one row of a block for the row-block loops (MixScores2Rows,
// ExpShiftSum2Rows, ScaleFlushRows, MixShareRows, MixCoefs2Rows): its slices and
// scalars in, its results out. A block's rows are independent, so one call over them
// all lets the CPU overlap one row's chain of work (a largest score, then its
// exponentials, then their sum) with the next's, with no call per row. A row of no
// elements (E0 empty) is skipped. Every slice a loop reads must be at least as long as
// the row's E0 (KK and CS only where a term is a distance): a loop panics at the first
// row that is not, after doing the rows before it.
//
//	loop          E0  E1  P  CS  S0     S1     S2  R0, R1, …
//	MixScores2    e0  e1                                the largest score
//	ExpShiftSum2  e0  e1             s0     s1         sum0, sum1
//	ScaleFlush    x                  a
//	MixShare      d   g   p          shift  delta  f   sg, sd
//	MixCoefs2     d   g      cs                        gxb, sdb, gxa, sda
//
// Dots, KK and QQ are the loops' dots, kk and qq.
type MixRow struct {
	E0, E1, Dots, KK, P, CS []float32
	QQ, S0, S1, S2          float32
	R0, R1, R2, R3          float32
}

// The offsets the assembly loops read a MixRow at (checked by TestMixRowLayout).
const (
	mixRowE0   = 0
	mixRowE1   = 24
	mixRowDots = 48
	mixRowKK   = 72
	mixRowP    = 96
	mixRowCS   = 120
	mixRowQQ   = 144
	mixRowS0   = 148
	mixRowS1   = 152
	mixRowS2   = 156
	mixRowR0   = 160
	mixRowR1   = 164
	mixRowR2   = 168
	mixRowR3   = 172
	mixRowSize = 176
)

// needs says which slices beside E0 a row-block loop reads.
type needs struct{ e1, dots, kk, p, cs bool }

// checkRows is the assembly loops' check for the Go loops: it panics (shortRow) at the
// first row one of whose slices in need is shorter than its E0.
func checkRows(rows []MixRow, need needs) {
	for i := range rows {
		r := &rows[i]
		n := len(r.E0)
		if need.e1 && len(r.E1) < n || need.dots && len(r.Dots) < n || need.kk && len(r.KK) < n ||
			need.p && len(r.P) < n || need.cs && len(r.CS) < n {
			shortRow(rows, i)
		}
	}
}

// shortRow panics, naming row i of rows, one of whose slices that a row-block loop reads
// is shorter than its E0 (the assembly loops check them as they go).
func shortRow(rows []MixRow, i int) {
	r := &rows[i]
	panic(fmt.Sprintf("vmath: row %d of %d elements: e1 %d, dots %d, kk %d, p %d, cs %d", i, len(r.E0), len(r.E1), len(r.Dots), len(r.KK), len(r.P), len(r.CS)))
}

// MixScores2Rows sets each row's R0 to MixScores2(E0, E1, Dots, QQ, KK, a, b), with the
// same bits; a row of no elements gets −Inf.
func MixScores2Rows(rows []MixRow, a, b Comp) {
	if hasAVX2 && hasAVX512 && len(rows) > 0 {
		if bad := mixScores2Rows512(&rows[0], len(rows), a.C, b.C, int(a.Term), int(b.Term), b.Rational); bad >= 0 {
			shortRow(rows, bad)
		}
		return
	}
	checkRows(rows, needs{e1: true, dots: true, kk: distances(a, b)})
	for i := range rows {
		r := &rows[i]
		r.R0 = float32(math.Inf(-1))
		if len(r.E0) > 0 {
			r.R0 = MixScores2(r.E0, r.E1, r.Dots, r.QQ, r.KK, a, b)
		}
	}
}

// ExpShiftSum2Rows sets each row's R0, R1 to ExpShiftSum2(E0, E1, S0, S1, values1), with
// the same bits; a row of no elements gets 0, 0.
func ExpShiftSum2Rows(rows []MixRow, values1 bool) {
	if hasAVX2 && hasAVX512 && len(rows) > 0 {
		if bad := expShiftSum2Rows512(&rows[0], len(rows), values1); bad >= 0 {
			shortRow(rows, bad)
		}
		return
	}
	checkRows(rows, needs{e1: true})
	for i := range rows {
		r := &rows[i]
		r.R0, r.R1 = 0, 0
		if len(r.E0) > 0 {
			r.R0, r.R1 = ExpShiftSum2(r.E0, r.E1, r.S0, r.S1, values1)
		}
	}
}

// ScaleFlushRows is ScaleFlush(E0, S0) for each row, with the same bits.
func ScaleFlushRows(rows []MixRow) {
	if hasAVX2 && hasAVX512 && len(rows) > 0 {
		scaleFlushRows512(&rows[0], len(rows))
		return
	}
	for i := range rows {
		ScaleFlush(rows[i].E0, rows[i].S0)
	}
}

// MixShareRows sets each row's E1 (g) and E0 (d), and R0, R1, to MixShare(E1, E0, P,
// Dots, QQ, KK, a, S0, S1, S2), with the same bits; a row of no elements gets 0, 0.
func MixShareRows(rows []MixRow, a Comp) {
	if hasAVX2 && hasAVX512 && len(rows) > 0 {
		if bad := mixShareRows512(&rows[0], len(rows), a.C, int(a.Term), a.Rational); bad >= 0 {
			shortRow(rows, bad)
		}
		return
	}
	checkRows(rows, needs{e1: true, dots: true, p: true, kk: a.Term != TermDot})
	for i := range rows {
		r := &rows[i]
		r.R0, r.R1 = 0, 0
		if len(r.E0) > 0 {
			r.R0, r.R1 = MixShare(r.E1[:len(r.E0)], r.E0, r.P, r.Dots, r.QQ, r.KK, a, r.S0, r.S1, r.S2)
		}
	}
}

// MixCoefs2Rows sets each row's E0 (d) and R0..R3 to MixCoefs2(E0, E1, Dots, QQ, KK, CS,
// b, a), with the same bits, the rows in order (they may share their CS); a row of no
// elements gets zeros.
func MixCoefs2Rows(rows []MixRow, b, a Comp) {
	if hasAVX2 && hasAVX512 && len(rows) > 0 {
		ca := a.C
		if a.Rational {
			ca = a.A // RatioGrad's constant, as MixCoefs2 passes it
		}
		if bad := mixCoefs2Rows512(&rows[0], len(rows), b.C, ca, int(b.Term), int(a.Term), a.Rational); bad >= 0 {
			shortRow(rows, bad)
		}
		return
	}
	checkRows(rows, needs{e1: true, dots: true, kk: distances(a, b), cs: distances(a, b)})
	for i := range rows {
		r := &rows[i]
		r.R0, r.R1, r.R2, r.R3 = 0, 0, 0, 0
		if len(r.E0) > 0 {
			r.R0, r.R1, r.R2, r.R3 = MixCoefs2(r.E0, r.E1, r.Dots, r.QQ, r.KK, r.CS, b, a)
		}
	}
}
