#!/usr/bin/env bash
# nanoGPT's shakespeare_char CPU recipe (its README's command) and Locus's
# configs/shakespeare_char_cpu.json, side by side on the same text and machine, one after
# the other, for each seed: val loss at iteration 2000 and the whole run's wall time.
#
# Usage: bench/nanogpt_compare.sh NANOGPT_DIR [SEEDS] [OUT_DIR]
#   NANOGPT_DIR  a checkout of github.com/karpathy/nanoGPT (run unmodified; PyTorch 1.13 works)
#   SEEDS        how many seeds (default 3); OUT_DIR the logs and runs (default: a new temp dir)
# Environment: TEXT (default ../shared/data/tinyshakespeare/input.txt beside the checkout),
# PYTHON (default /usr/bin/python3), THREADS (default 2, for both).
# Run it on a quiet machine: other jobs slow PyTorch's OpenMP far more than Locus.
set -euo pipefail
[ $# -ge 1 ] || { sed -n '2,12p' "$0"; exit 2; }
nano=$(cd "$1" && pwd)
seeds=${2:-3}
out=${3:-$(mktemp -d)}
mkdir -p "$out"; out=$(cd "$out" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
text=${TEXT:-$root/../shared/data/tinyshakespeare/input.txt}
python=${PYTHON:-/usr/bin/python3}
threads=${THREADS:-2}
. "$(dirname "$0")/peer_blas.sh"
[ -f "$text" ] || { echo "no text at $text (set TEXT)"; exit 2; }
[ -f "$nano/train.py" ] || { echo "$nano has no train.py: not a nanoGPT checkout"; exit 2; }

go build -o "$out/locus" "$root/cmd/locus"
# nanoGPT's own data preparation over the same text (prepare.py downloads only when
# input.txt is missing), in a copy, so that the checkout is left as it is.
work="$out/nanogpt"
rm -rf "$work" && cp -r "$nano" "$work"
cp "$text" "$work/data/shakespeare_char/input.txt"
(cd "$work/data/shakespeare_char" && "$python" prepare.py > "$out/prepare.log")

now() { date +%s.%N; }
echo "seed,nanogpt_val_loss,nanogpt_wall_s,locus_val_loss,locus_wall_s,ratio" > "$out/results.csv"
for ((s = 0; s < seeds; s++)); do
  # nanoGPT fixes its seed at 1337; seed s adds s to it from outside, its code unchanged.
  t0=$(now)
  (cd "$work" && OMP_NUM_THREADS=$threads "$python" -c '
import runpy, sys, torch
s = int(sys.argv.pop(1))
seed = torch.manual_seed
torch.manual_seed = lambda x: seed(x + s)
sys.argv[0] = "train.py"
runpy.run_path("train.py", run_name="__main__")' "$s" config/train_shakespeare_char.py --device=cpu --compile=False \
    --eval_iters=20 --log_interval=1 --block_size=64 --batch_size=12 --n_layer=4 --n_head=4 --n_embd=128 \
    --max_iters=2000 --lr_decay_iters=2000 --dropout=0.0 --out_dir="$out/nanogpt-out-$s") > "$out/nanogpt-$s.log" 2>&1
  t1=$(now)
  nval=$(sed -n 's/^step 2000: .*val loss \([0-9.]*\).*/\1/p' "$out/nanogpt-$s.log")
  "$out/locus" train -config "$root/configs/shakespeare_char_cpu.json" -data "$text" -seed "$s" -threads "$threads" \
    -out "$out/locus-$s" > "$out/locus-$s.log" 2>&1
  t2=$(now)
  lval=$("$python" -c 'import json,sys; r=[json.loads(l) for l in open(sys.argv[1])]; print([x for x in r if "val_loss" in x][-1]["val_loss"])' "$out/locus-$s/metrics.jsonl")
  line=$(awk -v s="$s" -v nv="$nval" -v lv="$lval" -v t0="$t0" -v t1="$t1" -v t2="$t2" \
    'BEGIN { printf "%d,%s,%.1f,%.4f,%.1f,%.3f", s, nv, t1 - t0, lv, t2 - t1, (t2 - t1) / (t1 - t0) }')
  echo "$line" | tee -a "$out/results.csv"
done
echo "results: $out/results.csv"
