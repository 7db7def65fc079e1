#!/bin/sh
# Length sweep of the char-LM train step (d=64, 4 heads, 2 layers, batch 8), each run in
# its own process so that peak RSS is its own; prints one JSON line per run (locus bench
# -json). Usage: bench/seqlen_sweep.sh [lengths...] (default 256 ... 8192).
#
# SWEEP=attention (the default): exact attention, windowed attention
# (exponential * window(128)) and random features (m = 64), each with the default
# tiling choice (auto). T = 8192 exact runs 1 step without warm-up (about a minute of CPU).
# SWEEP=tiling: exact and windowed attention with the stored weights (-tiling never, up
# to T = 2048) and tiled (-tiling always).
set -e
bin=$(mktemp -d /tmp/locus-sweep-XXXX)/locus
go build -o "$bin" ./cmd/locus
lengths=${*:-256 512 1024 2048 4096 8192}
run() { # T steps warmup flags... (sh has no local variables: _-names, not the loop's)
	_t=$1 _steps=$2 _warmup=$3
	shift 3
	"$bin" bench -workload charlm -seqlen "$_t" -batch 8 -steps "$_steps" -warmup "$_warmup" -json "$@"
}
for T in $lengths; do
	steps=5
	[ "$T" -ge 2048 ] && steps=3
	[ "$T" -ge 4096 ] && steps=2
	case ${SWEEP:-attention} in
	attention)
		if [ "$T" -ge 8192 ]; then
			run "$T" 1 0
		else
			run "$T" $steps 1
		fi
		run "$T" $steps 1 -kernel "exponential * window(128)"
		run "$T" $steps 1 -random-features 64
		;;
	tiling)
		for kernel in exponential "exponential * window(128)"; do
			for tiling in never always; do
				# The stored weights need B·H·T² floats per layer (about 14 GB at T=4096).
				[ "$tiling" = never ] && [ "$T" -gt 2048 ] && continue
				run "$T" $steps 1 -kernel "$kernel" -tiling $tiling
			done
		done
		;;
	*)
		echo "SWEEP=$SWEEP: want attention or tiling" >&2
		exit 2
		;;
	esac
done
