# nanoGPT's own GPT.generate (its model.py, imported unmodified from a checkout) at the baby
# GPT's size with random weights: the time of 256 new tokens from a one-token prompt, greedy
# (top_k=1), median of 3, and the process's peak RSS; the side-by-side for
#   locus bench -workload generate -dmodel 384 -heads 6 -layers 6 -dff 1536 -seqlen 256 -new-tokens 256
# Usage: /usr/bin/python3 bench/nanogpt_generate.py NANOGPT_DIR [THREADS]
# (set OPENBLAS_CORETYPE as bench/peer_blas.sh says where OpenBLAS does not know the processor)
import resource, sys, time
import torch
sys.path.insert(0, sys.argv[1])
from model import GPT, GPTConfig

torch.set_num_threads(int(sys.argv[2]) if len(sys.argv) > 2 else 2)
torch.manual_seed(0)
m = GPT(GPTConfig(block_size=256, vocab_size=65, n_layer=6, n_head=6, n_embd=384, dropout=0.0, bias=False)).eval()
idx = torch.zeros((1, 1), dtype=torch.long)
runs = []
with torch.no_grad():
    m.generate(idx, 16, top_k=1)  # warm-up
    for _ in range(3):
        t0 = time.perf_counter()
        m.generate(idx, 256, top_k=1)
        runs.append(time.perf_counter() - t0)
runs.sort()
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print("nanoGPT generate: 256 tokens in %.2f s (runs %s), %.1f tokens/s, peak RSS %.0f MiB"
      % (runs[1], ", ".join("%.2f" % r for r in runs), 256 / runs[1], rss))
