//go:build !amd64 || purego

package compact

var hasAVX2 = false // a variable for the tests

func tricubeValuesAVX2(k, r *float32, n int, c float32) { panic("compact: no AVX2") }

func tricubeGradsAVX2(gr, r *float32, n int, ih float32, s *[8]float32) {
	panic("compact: no AVX2")
}

func epanechnikovGradsAVX2(gr, x *float32, n int, hh float32, s *[8]float32) {
	panic("compact: no AVX2")
}
