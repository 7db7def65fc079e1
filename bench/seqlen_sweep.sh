#!/bin/sh
# Length sweep of the char-LM train step (d=64, 4 heads, 2 layers, batch 8): exact attention
# with the stored weights and tiled, and windowed attention (exponential * window(128)),
# each run in its own process so that peak RSS is its own. Usage: bench/seqlen_sweep.sh
# [lengths...]; prints one JSON line per run (locus bench -json).
set -e
go build -o /tmp/locus-sweep ./cmd/locus
lengths=${*:-256 512 1024 2048 4096 8192}
for T in $lengths; do
	steps=5
	[ "$T" -ge 2048 ] && steps=3
	[ "$T" -ge 4096 ] && steps=2
	for kernel in exponential "exponential * window(128)"; do
		for tiling in never always; do
			# The stored weights need B·H·T² floats per layer (about 14 GB at T=4096).
			[ "$tiling" = never ] && [ "$T" -gt 2048 ] && continue
			/tmp/locus-sweep bench -workload charlm -seqlen "$T" -batch 8 -steps $steps -warmup 1 \
				-kernel "$kernel" -tiling $tiling -json
		done
	done
done
