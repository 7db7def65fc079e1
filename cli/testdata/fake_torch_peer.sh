#!/bin/sh
# A stand-in for torch_peer.py in tests (run as: sh fake_torch_peer.sh WORKLOAD [options]):
# it reads torch_peer.py's size options with its defaults, and prints one JSON line as
# torch_peer.py does, with the model's config and n_params (the LM's count, as
# torch_peer.py's n_params) and its arguments in "argv". $FAKE_PEER_D, if set, replaces
# the width it was given, as a peer that ignored --d would.
w=$1; shift
argv="\"$w\""
T=64 B=32 D=64 H=4 L=2 F=0 V=65
[ "$w" = generate ] && B=1 # one sequence
while [ $# -gt 0 ]; do
	argv="$argv, \"$1\""
	case $1 in
	--seqlen) T=$2 ;;
	--batch) B=$2 ;;
	--d) D=$2 ;;
	--heads) H=$2 ;;
	--layers) L=$2 ;;
	--dff) F=$2 ;;
	--vocab) V=$2 ;;
	--steps|--warmup|--seed|--threads) ;;
	*) argv="$argv"; shift; continue ;;
	esac
	argv="$argv, \"$2\""
	shift 2
done
[ -n "$FAKE_PEER_D" ] && D=$FAKE_PEER_D # a peer that runs another model than asked
[ "$F" = 0 ] && F=$((4 * D))
N=$((V * D + T * D + L * (4 * (D * D + D) + D * F + F + F * D + D + 4 * D) + 2 * D + D * V + V))
printf '{"workload": "%s", "argv": [%s], "config": {"vocab": %d, "d_model": %d, "heads": %d, "layers": %d, "d_ff": %d, "context": %d, "batch": %d}, "n_params": %d, ' "$w" "$argv" "$V" "$D" "$H" "$L" "$F" "$T" "$B" "$N"
printf '"step": {"median_ms": 10.0, "p10_ms": 9.0, "p90_ms": 11.0, "mean_ms": 10.0, "min_ms": 9.0, "max_ms": 11.0, "n": 1}, "peak_rss_mib": 300.5, "other_cpu_cores": 0.0, "env": {"torch": "fake", "blas": "none"}}\n'
