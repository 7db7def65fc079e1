#!/usr/bin/env python3
# -*- coding: utf-8 -*-
r"""
torch_train.py -- a whole PyTorch char-LM training run, the peer of
`locus train -task charlm` as `locus bench -workload e2e -compare` runs it.

    /usr/bin/python3 bench/peers/torch_train.py --peer ../shared/peers/torch_peer.py --data DIR \
        [--steps 1500] [--batch 32] [--seqlen 64] [--eval-every 250] [--eval-n 1600] \
        [--lr 1e-3] [--seed 0] [--threads 2] [--blas auto]

The model, its initialisation, the optimizer and the loss are torch_peer.py's own (LM,
gpt_init, make_adam, lm_ce: imported from --peer, not copied): LM(V, d=64, h=4, L=2,
d_ff=256, T=64, causal), gpt init after torch.manual_seed(seed), Adam(lr, .9/.999, 1e-8),
mean next-token cross-entropy.  Those are `locus train -task charlm`'s defaults (-dmodel 64
-heads 4 -layers 2 -dff 256 -seqlen 64, -optim adam with -lr 1e-3).

The data is the token streams Locus trains on, written by `locus bench -workload e2e
-compare` into DIR (the format Locus documents in cli/bench_e2e.go):
    DIR/corpus.json   {"format": "locus token streams v1", "vocab_size": V, "dtype": "<u2",
                       "train": "train.u16", "val": "val.u16", "sha256": S, ...}
    DIR/train.u16, DIR/val.u16   the ids, uint16 little-endian, no header
S is the SHA-256 of the training then validation ids as uint32 little-endian, the digest
Locus records in a run's data config (corpus_sha256); it is checked here.

The loop does what Locus's does (train.Loop with the charlm data and CorpusMetrics):
  * every step draws --batch windows of seqlen+1 ids at uniformly random offsets of the
    training split (its own torch.Generator, seed+1; Go's generator cannot be reproduced,
    the distribution is the same), inputs = the first seqlen, targets = the last seqlen;
    zero_grad(set_to_none) + forward + loss + backward + Adam step; the loss is read back
    (Locus logs it every step);
  * every --eval-every steps and after the last step: model.eval(), torch.no_grad(),
    --eval-n // --batch batches of --batch validation windows drawn from a generator
    seeded with seed+2 at every evaluation (the same windows each time, as Locus);
    loss = the mean of the batch means, bits per character = loss / ln 2, next-character
    accuracy; then model.train().
No checkpoints, metrics file or plot (Locus writes all three).

Output: one JSON line on stdout: wall_s (from the start of this script, import of torch
included), loop_s and its split steps_s / eval_s / data_s / other_s, the evaluations, the
final validation loss and bpc, the environment.
"""

import argparse
import ast
import hashlib
import importlib.util
import json
import math
import os
import sys
import time

T_START = time.perf_counter()


def parse_args():
    p = argparse.ArgumentParser(description="PyTorch char-LM training loop, the peer of locus train -task charlm")
    p.add_argument("--peer", required=True, help="path of torch_peer.py (LM, gpt_init, make_adam, lm_ce)")
    p.add_argument("--data", required=True, help="folder with corpus.json, train.u16, val.u16 (written by locus bench -workload e2e -compare)")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--seqlen", type=int, default=64)
    p.add_argument("--eval-every", type=int, default=250)
    p.add_argument("--eval-n", type=int, default=1600, help="validation windows per evaluation")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--blas", default="auto", help="as torch_peer.py --blas")
    a = p.parse_args()
    for name in ("steps", "batch", "seqlen", "eval_n", "threads"):
        if getattr(a, name) <= 0:
            p.error(f"--{name.replace('_', '-')} must be > 0, got {getattr(a, name)}")
    if a.eval_every < 0:
        p.error(f"--eval-every must be >= 0, got {a.eval_every}")
    return a


ARGS = parse_args()


def select_blas(path):
    """torch_peer.py re-executes the interpreter at import, with sys.argv, to load the BLAS
    of its --blas. Imported from here, that would run the peer instead of this script; so
    this script re-executes itself first with the LD_LIBRARY_PATH the peer would set (its
    _LIB and BLAS_DIRS, read from its source without running it) and
    TORCH_PEER_BLAS_DONE=1, which makes the peer's own re-execution a no-op."""
    if os.environ.get("TORCH_PEER_BLAS_DONE") == "1":
        return
    if not os.path.isfile(path):
        sys.exit(f"torch_train.py: --peer {path}: no such file")
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    keep = [n for n in tree.body if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id in ("_LIB", "BLAS_DIRS") for t in n.targets)]
    ns = {}
    exec(compile(ast.Module(body=keep, type_ignores=[]), path, "exec"), ns)
    if "BLAS_DIRS" not in ns:
        sys.exit(f"torch_train.py: --peer {path}: no BLAS_DIRS in it (not torch_peer.py?)")
    dirs = ns["BLAS_DIRS"]
    choice = ARGS.blas
    if choice == "auto":
        choice = "openblas-openmp" if os.path.exists(dirs["openblas-openmp"][0] + "/libblas.so.3") else "system"
    env = dict(os.environ)
    env["TORCH_PEER_BLAS_DONE"] = "1"
    if choice != "system":
        if choice not in dirs:
            sys.exit(f"torch_train.py: --blas {choice}: want auto, system or one of {', '.join(sorted(dirs))}")
        if not os.path.exists(dirs[choice][0] + "/libblas.so.3"):
            sys.exit(f"torch_train.py: --blas {choice}: {dirs[choice][0]}/libblas.so.3 not found")
        env["LD_LIBRARY_PATH"] = ":".join(dirs[choice] + [p for p in env.get("LD_LIBRARY_PATH", "").split(":") if p])
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def import_peer(path):
    """Imports torch_peer.py as a module. It parses sys.argv at import: it is given its
    `info` subcommand's with this run's --threads, --seed and --blas, so that it sets the
    thread variables before importing torch and calls torch.set_num_threads."""
    argv = [path, "info", "--threads", str(ARGS.threads), "--seed", str(ARGS.seed), "--blas", ARGS.blas]
    saved = sys.argv
    sys.argv = argv
    try:
        spec = importlib.util.spec_from_file_location("torch_peer", path)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
    finally:
        sys.argv = saved
    return mod


select_blas(ARGS.peer)
PEER = import_peer(ARGS.peer)  # sets the thread variables, imports torch, set_num_threads

import numpy as np  # noqa: E402
import torch  # noqa: E402

T_IMPORTED = time.perf_counter()


def load_streams(folder):
    with open(os.path.join(folder, "corpus.json"), encoding="utf-8") as f:
        meta = json.load(f)
    if meta.get("format") != "locus token streams v1":
        sys.exit(f"torch_train.py: {folder}/corpus.json: format {meta.get('format')!r}, want 'locus token streams v1'")
    if meta.get("dtype") != "<u2":
        sys.exit(f"torch_train.py: {folder}/corpus.json: dtype {meta.get('dtype')!r}, want '<u2'")
    splits = {}
    for name in ("train", "val"):
        a = np.fromfile(os.path.join(folder, meta[name]), dtype="<u2")
        if a.size != meta[name + "_tokens"]:
            sys.exit(f"torch_train.py: {meta[name]}: {a.size} ids, corpus.json says {meta[name + '_tokens']}")
        splits[name] = a
    V = int(meta["vocab_size"])
    for name, a in splits.items():
        if a.size and int(a.max()) >= V:
            sys.exit(f"torch_train.py: {meta[name]}: id {int(a.max())} >= vocab_size {V}")
    digest = hashlib.sha256(np.concatenate([splits["train"], splits["val"]]).astype("<u4").tobytes()).hexdigest()
    if digest != meta["sha256"]:
        sys.exit(f"torch_train.py: the ids' SHA-256 {digest[:12]} is not corpus.json's {meta['sha256'][:12]}")
    return V, torch.from_numpy(splits["train"].astype(np.int64)), torch.from_numpy(splits["val"].astype(np.int64)), digest


def windows(ids, gen, n, t):
    """n windows of t+1 consecutive ids at uniformly random offsets in [0, len-t)."""
    off = torch.randint(0, ids.numel() - t, (n, 1), generator=gen)
    w = ids[off + torch.arange(t + 1)]
    return w[:, :t].contiguous(), w[:, 1:].contiguous()


def evaluate(model, val, batches, batch, t, seed):
    gen = torch.Generator().manual_seed(seed)
    model.eval()
    loss_sum, correct, total = 0.0, 0, 0
    with torch.no_grad():
        for _ in range(batches):
            inp, tgt = windows(val, gen, batch, t)
            logits = model(inp)
            loss_sum += float(PEER.lm_ce(logits, tgt))
            correct += int((logits.argmax(dim=-1) == tgt).sum())
            total += tgt.numel()
    model.train()
    loss = loss_sum / batches
    return {"loss": loss, "bpc": loss / math.log(2), "token_acc": correct / total}


def main():
    V, train_ids, val_ids, digest = load_streams(ARGS.data)
    T, B = ARGS.seqlen, ARGS.batch
    for name, ids in (("training", train_ids), ("validation", val_ids)):
        if ids.numel() <= T:
            sys.exit(f"torch_train.py: the {name} split has {ids.numel()} ids, too few for a window of {T}+1")
    torch.manual_seed(ARGS.seed)
    model = PEER.gpt_init(PEER.LM(V, 64, 4, 2, 256, T, causal=True))
    opt = PEER.make_adam(model, ARGS.lr)
    gen = torch.Generator().manual_seed(ARGS.seed + 1)
    eval_batches = max(1, ARGS.eval_n // B)
    model.train()
    t_data = t_steps = t_eval = 0.0
    evals, loss = [], float("nan")
    t_loop = time.perf_counter()
    for step in range(1, ARGS.steps + 1):
        t0 = time.perf_counter()
        inp, tgt = windows(train_ids, gen, B, T)
        t1 = time.perf_counter()
        opt.zero_grad(set_to_none=True)
        out = PEER.lm_ce(model(inp), tgt)
        out.backward()
        opt.step()
        loss = float(out.detach())
        t2 = time.perf_counter()
        t_data += t1 - t0
        t_steps += t2 - t1
        if (ARGS.eval_every > 0 and step % ARGS.eval_every == 0) or step == ARGS.steps:
            m = evaluate(model, val_ids, eval_batches, B, T, ARGS.seed + 2)
            t_eval += time.perf_counter() - t2
            evals.append({"step": step, **{k: round(v, 5) for k, v in m.items()}})
            print(f"step {step}  train loss {loss:.4f}  val loss {m['loss']:.4f}  bpc {m['bpc']:.4f}", file=sys.stderr)
    loop = time.perf_counter() - t_loop
    wall = time.perf_counter() - T_START
    res = {
        "workload": "e2e",
        "config": {"vocab": V, "d_model": 64, "heads": 4, "layers": 2, "d_ff": 256, "context": T, "batch": B,
                   "lr": ARGS.lr, "steps": ARGS.steps, "eval_every": ARGS.eval_every, "eval_n": eval_batches * B,
                   "train_tokens": train_ids.numel(), "val_tokens": val_ids.numel(), "corpus_sha256": digest},
        "n_params": PEER.n_params(model),
        "wall_s": round(wall, 3),
        "import_s": round(T_IMPORTED - T_START, 3),
        "loop_s": round(loop, 3),
        "steps_s": round(t_steps, 3),
        "step_ms": round(t_steps / ARGS.steps * 1e3, 3),
        "eval_s": round(t_eval, 3),
        "data_s": round(t_data, 3),
        "other_s": round(loop - t_steps - t_eval - t_data, 3),
        "train_loss": round(loss, 5),
        "evals": evals,
        "val_loss": evals[-1]["loss"] if evals else None,
        "val_bpc": evals[-1]["bpc"] if evals else None,
        "cpu_s": round(PEER._own_cpu_s(), 3),
        "peak_rss_mib": PEER.peak_rss_mib(),
        "env": PEER.env_info(),
    }
    print(json.dumps(res), flush=True)


if __name__ == "__main__":
    main()
