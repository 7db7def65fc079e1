#!/usr/bin/env python3
"""torch.optim.AdamW with nanoGPT's two parameter groups, for cli's TestDecayParamsMatchTorch.

Reads JSON from stdin: {"params": [{"name", "shape", "init", "grads": [[...] per step]}],
"lr", "betas", "eps", "weight_decay"}. Builds the groups as nanoGPT's
GPT.configure_optimizers does (decayed: p.dim() >= 2; not decayed: the rest), steps
AdamW (single-tensor implementation) once per gradient, in float64, and writes
{"decay": [names], "no_decay": [names], "params": {name: [values after the last step]}}.
"""
import json
import sys

import torch

torch.set_default_dtype(torch.float64)
spec = json.load(sys.stdin)
params = {}
for p in spec["params"]:
    params[p["name"]] = torch.nn.Parameter(torch.tensor(p["init"]).reshape(p["shape"]))
# nanoGPT, model.py, configure_optimizers:
decay_params = [p for n, p in params.items() if p.dim() >= 2]
nodecay_params = [p for n, p in params.items() if p.dim() < 2]
optim_groups = [
    {"params": decay_params, "weight_decay": spec["weight_decay"]},
    {"params": nodecay_params, "weight_decay": 0.0},
]
opt = torch.optim.AdamW(optim_groups, lr=spec["lr"], betas=tuple(spec["betas"]), eps=spec["eps"], foreach=False)
steps = len(spec["params"][0]["grads"])
for s in range(steps):
    for p in spec["params"]:
        params[p["name"]].grad = torch.tensor(p["grads"][s]).reshape(p["shape"])
    opt.step()
json.dump({
    "decay": [n for n, p in params.items() if p.dim() >= 2],
    "no_decay": [n for n, p in params.items() if p.dim() < 2],
    "params": {n: p.detach().reshape(-1).tolist() for n, p in params.items()},
}, sys.stdout)
