#!/bin/sh
# Every kernel's char-LM train step against the exponential kernel's (issue 18, item 2), on
# each code path: `locus bench -workload charlm -threads 1 -kernel K -bandwidth B -json`, each
# run in its own process, every configuration once per round in the order below so that the
# machine's drift falls on all of them alike. Prints one markdown row per configuration: the
# median CPU ms per step of each path and, in brackets, its ratio to the exponential kernel's
# median at the fixed bandwidth on that path.
#
# Usage: bench/kernel_ratios.sh [paths...] (default avx512 avx2 generic). ROUNDS (default 3)
# and STEPS (default 50) apply to the vector paths; pure Go (generic) runs 1 round of 4 steps.
# RAW=file keeps every run's JSON line. CONFIGS replaces the list below (lines of
# kernel|bandwidth). PAIRED=1 runs the exponential kernel right before each configuration
# and reports the median of the per-pair ratios and their range instead, for differences
# smaller than the drift between rounds. Needs awk; a path the CPU lacks runs the best it has
# (LOCUS_CPU=avx512 on an AVX2-only machine runs the AVX2 kernels). On a machine whose load
# comes in bursts, BenchmarkKernelsAlternating (kernels_bench_test.go) measures the same
# ratios within one process, far steadier.
set -e
dir=$(mktemp -d /tmp/locus-kernels-XXXX)
bin=$dir/locus
go build -o "$bin" ./cmd/locus
paths=${*:-avx512 avx2 generic}
raw=${RAW:-$dir/raw.jsonl}
: >"$raw"
# kernel|bandwidth, one per line (the kernel specs hold spaces and commas).
configs='exponential|fixed
gaussian|fixed
laplacian|fixed
cauchy|fixed
epanechnikov|fixed
tricube|fixed
uniform|fixed
exponential|head
gaussian|head
laplacian|head
gaussian * window(8)|fixed
laplacian * relbias(4)|fixed
mixture(exponential, laplacian)|fixed
mixture(gaussian, cauchy)|fixed'
configs=${CONFIGS:-$configs}
run() { # path steps kernel bandwidth round pair (sh has no local variables: _-names)
	_line=$(LOCUS_CPU=$1 "$bin" bench -workload charlm -steps "$2" -threads 1 \
		-kernel "$3" -bandwidth "$4" -json)
	echo "$_line" >>"$raw"
	_ms=$(echo "$_line" | sed -n 's/.*"cpu_ms_per_step":\([0-9.eE+-]*\).*/\1/p')
	printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$1" "$3" "$4" "$_ms" "$5" "$6" >>"$dir/times.tsv"
	printf '%s round %d: %-34s %-5s %s ms\n' "$1" "$5" "$3" "$4" "$_ms" >&2
}
for path in $paths; do
	rounds=${ROUNDS:-3} steps=${STEPS:-50}
	if [ "$path" = generic ]; then
		rounds=1 steps=4
	fi
	r=1
	while [ $r -le "$rounds" ]; do
		echo "$configs" | while IFS='|' read -r kernel bw; do
			if [ -n "$PAIRED" ]; then
				[ "$kernel|$bw" = 'exponential|fixed' ] && continue
				run "$path" "$steps" exponential fixed "$r" "$kernel|$bw"
			fi
			run "$path" "$steps" "$kernel" "$bw" "$r" "$kernel|$bw"
		done
		r=$((r + 1))
	done
done
sorted='
function isort(s, a,    n, i, j, t) {
	n = split(s, a, " ")
	for (i = 2; i <= n; i++)
		for (j = i; j > 1 && a[j-1] + 0 > a[j] + 0; j--) { t = a[j]; a[j] = a[j-1]; a[j-1] = t }
	return n
}
function median(s,    a, n) {
	n = isort(s, a)
	return n % 2 ? a[(n+1)/2] : (a[n/2] + a[n/2+1]) / 2
}'
if [ -n "$PAIRED" ]; then
	awk -F'\t' -v paths="$paths" "$sorted"'
{
	key = $6 SUBSEP $1 SUBSEP $5
	if ($2 "|" $3 == "exponential|fixed") { base[key] = $4; next }
	if (!($6 in seen)) { seen[$6] = 1; order[++nk] = $6 }
	r[$1, $6] = r[$1, $6] " " $4 / base[key]
}
END {
	np = split(paths, p, " ")
	head = "| kernel | bandwidth |"; rule = "|---|---|"
	for (i = 1; i <= np; i++) { head = head " " p[i] " × exp, paired (range) |"; rule = rule "---|" }
	print head; print rule
	for (k = 1; k <= nk; k++) {
		split(order[k], kb, "|")
		row = "| `" kb[1] "` | " kb[2] " |"
		for (i = 1; i <= np; i++) {
			n = isort(r[p[i], order[k]], a)
			row = row sprintf(" %.3f (%.3f–%.3f) |", median(r[p[i], order[k]]), a[1], a[n])
		}
		print row
	}
}' "$dir/times.tsv"
	echo "runs: $raw" >&2
	exit 0
fi
awk -F'\t' -v paths="$paths" "$sorted"'
{
	key = $2 "|" $3
	if (!(key in seen)) { seen[key] = 1; order[++nk] = key }
	t[$1, key] = t[$1, key] " " $4
}
END {
	np = split(paths, p, " ")
	head = "| kernel | bandwidth |"; rule = "|---|---|"
	for (i = 1; i <= np; i++) { head = head " " p[i] " CPU ms (× exp) |"; rule = rule "---|" }
	print head; print rule
	for (i = 1; i <= np; i++) base[i] = median(t[p[i], "exponential|fixed"])
	for (k = 1; k <= nk; k++) {
		split(order[k], kb, "|")
		row = "| `" kb[1] "` | " kb[2] " |"
		for (i = 1; i <= np; i++) {
			m = median(t[p[i], order[k]])
			row = row sprintf(" %.2f (%.2f) |", m, m / base[i])
		}
		print row
	}
}' "$dir/times.tsv"
echo "runs: $raw" >&2
