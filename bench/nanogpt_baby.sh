#!/usr/bin/env bash
# nanoGPT's "baby GPT" (config/train_shakespeare_char.py: 6 layers, 384 wide, 6 heads,
# context 256, dropout 0.2) and Locus's configs/shakespeare_char.json, side by side on the
# same text and machine, one after the other, for each batch size: the first ITERS
# iterations of the recipe's schedule (the cosine still decays over 5000), then one
# evaluation. Prints ms per iteration (the median over iterations 2..ITERS for nanoGPT,
# over Locus's 10-step windows after the first), peak RSS (getrusage, /usr/bin/time) and
# both val losses at iteration ITERS.
#
# Usage: bench/nanogpt_baby.sh NANOGPT_DIR [ITERS] [BATCHES] [OUT_DIR]
#   NANOGPT_DIR  a checkout of github.com/karpathy/nanoGPT (run unmodified; PyTorch 1.13 works)
#   ITERS        iterations per run (default 20; a multiple of 10), BATCHES e.g. "64 16"
#                (default), OUT_DIR the logs and runs (default: a new temp dir)
# Environment: TEXT, PYTHON, THREADS (default 2, for both), EVAL_ITERS (default 5: the
# recipe's 200 batches of 64 take longer than the iterations themselves on a CPU).
# Run it on a quiet machine: other jobs slow PyTorch's OpenMP far more than Locus.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,16p' "$0"; exit 2; }
nano=$(cd "$1" && pwd)
iters=${2:-20}
batches=${3:-64 16}
out=${4:-$(mktemp -d)}
mkdir -p "$out"; out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
text=${TEXT:-$root/../shared/data/tinyshakespeare/input.txt}
python=${PYTHON:-/usr/bin/python3}
threads=${THREADS:-2}
. "$(dirname "$0")/peer_blas.sh"
evals=${EVAL_ITERS:-5}
[ -f "$text" ] || { echo "no text at $text (set TEXT)"; exit 2; }
[ -f "$nano/train.py" ] || { echo "$nano has no train.py: not a nanoGPT checkout"; exit 2; }
[ $((iters % 10)) -eq 0 ] && [ "$iters" -ge 20 ] || { echo "ITERS $iters: want a multiple of 10, at least 20"; exit 2; }
[ -x /usr/bin/time ] || { echo "/usr/bin/time is missing (Debian: apt-get install time)"; exit 2; }

go build -o "$out/locus" "$root/cmd/locus"
work="$out/nanogpt"
rm -rf "$work" && cp -r "$nano" "$work"
cp "$text" "$work/data/shakespeare_char/input.txt"
(cd "$work/data/shakespeare_char" && "$python" prepare.py > "$out/prepare.log")

echo "batch,iters,nanogpt_ms_per_iter,locus_ms_per_iter,ratio,nanogpt_peak_rss_mib,locus_peak_rss_mib,nanogpt_val_loss,locus_val_loss" > "$out/results.csv"
for b in $batches; do
  (cd "$work" && OMP_NUM_THREADS=$threads /usr/bin/time -f '%M' -o "$out/nanogpt-b$b.rss" "$python" train.py \
    config/train_shakespeare_char.py --device=cpu --compile=False --batch_size="$b" --max_iters="$iters" \
    --eval_interval="$iters" --eval_iters="$evals" --log_interval=1 --out_dir="$out/nanogpt-out-b$b") > "$out/nanogpt-b$b.log" 2>&1
  nms=$(sed -n 's/^iter \([0-9]*\): .*time \([0-9.]*\)ms.*/\1 \2/p' "$out/nanogpt-b$b.log" |
    awk '$1 >= 2 { print $2 }' | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }')
  nval=$(sed -n "s/^step $iters: .*val loss \([0-9.]*\).*/\1/p" "$out/nanogpt-b$b.log")
  /usr/bin/time -f '%M' -o "$out/locus-b$b.rss" "$out/locus" train -config "$root/configs/shakespeare_char.json" \
    -data "$text" -batch "$b" -steps "$iters" -decay-steps 4900 -eval-every "$iters" -eval-iters "$evals" \
    -threads "$threads" -out "$out/locus-b$b" > "$out/locus-b$b.log" 2>&1
  read -r lms lval < <("$python" -c '
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
windows = [1000 / r["steps_per_s"] for r in rows if "steps_per_s" in r][1:]
print("%.1f" % statistics.median(windows), [r for r in rows if "val_loss" in r][-1]["val_loss"])' "$out/locus-b$b/metrics.jsonl")
  line=$(awk -v b="$b" -v n="$iters" -v nms="$nms" -v lms="$lms" -v nr="$(cat "$out/nanogpt-b$b.rss")" \
    -v lr="$(cat "$out/locus-b$b.rss")" -v nv="$nval" -v lv="$lval" \
    'BEGIN { printf "%d,%d,%.1f,%.1f,%.3f,%.0f,%.0f,%s,%.4f", b, n, nms, lms, lms / nms, nr / 1024, lr / 1024, nv, lv }')
  echo "$line" | tee -a "$out/results.csv"
done
echo "results: $out/results.csv"
