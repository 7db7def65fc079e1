package optim

// An optimizer's moving averages (Adam's moments, the momentum buffers, RMSProp's
// averages) decay geometrically wherever the gradient is zero: a dead ReLU's weights, the
// embedding rows of tokens a batch lacks. On the way to zero they pass through the
// subnormal numbers, Adam's second moment (β2 = 0.999) for some 16 000 steps, and on x86
// every operation on a subnormal, or that makes one, takes a microcode assist: Adam's
// update of the 435 536 parameters of the dae workload took 5.4 ms with its moments
// subnormal against 0.25 ms, and the workload's optimizer step grew from 0.2 to 0.7–0.9
// ms over 1500 steps. Go does not set the processor's flush-to-zero mode, so the optimizers
// flush their state themselves: a value below the smallest normal number of its type in
// magnitude (1.2e-38 in float32) becomes 0, where it stays at no cost. Such a value's
// part in an update is nothing beside Eps (Adam: m/(√v + ε) with ε = 1e-8).

// smallestNormal returns the smallest positive normal number of T: 2⁻¹²⁶ or 2⁻¹⁰²².
func smallestNormal[T float]() T {
	var z T
	if _, ok := any(z).(float32); ok {
		return T(float32(0x1p-126))
	}
	return T(0x1p-1022)
}

// flushTiny returns x, or +0 where |x| < tiny (a subnormal, with tiny = smallestNormal);
// NaN is kept.
func flushTiny[T float](x, tiny T) T {
	if x < tiny && x > -tiny {
		return 0
	}
	return x
}
