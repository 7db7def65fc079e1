package vmath

// ScoreGrad sets d[i] = (scale·p[i])·(d[i] − delta): the gradient of the scores of one
// softmax row, with p the row's weights, d the gradient of the loss with respect to the
// weights on entry and delta = Σ p[i]·d[i] (or any value equal to it, such as the
// attention output row's dot product with its gradient). Both paths round alike: the two
// products and the difference are each rounded to float32, no fused multiply-add.
func ScoreGrad(d, p []float32, delta, scale float32) {
	p = p[:len(d)]
	n := 0
	if hasAVX2 {
		n = len(d) &^ 7
		if n > 0 {
			scoreGradAVX2(&d[0], &p[0], n, delta, scale)
		}
	}
	for i := n; i < len(d); i++ {
		d[i] = scale * p[i] * (d[i] - delta)
	}
}
