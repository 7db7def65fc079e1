#!/usr/bin/env python3
"""Generate reference.json: torch.optim trajectories that optim's tests compare against.

Run from this directory with Debian's python3-torch (1.13):

    /usr/bin/python3 gen_reference.py > reference.json

Everything is float64 and deterministic: the parameters and the three gradients of
each parameter are fixed closed-form values, not random draws. Every case starts from
the same initial parameters, sets p.grad to the step's gradient (no accumulation),
calls optimizer.step() (single-tensor implementations: foreach=False) and records
the parameters after each of the three steps.
"""
import json
import math

import torch

torch.set_default_dtype(torch.float64)

SHAPES = {"w": [2, 3], "b": [3], "ln.weight": [4]}


def values(name, shape, salt):
    n = math.prod(shape)
    return [round(math.sin(1.7 * i + 0.3 * salt + 0.01 * sum(map(ord, name))) * (1 + 0.25 * i), 6) for i in range(n)]


INIT = {k: values(k, s, 0) for k, s in SHAPES.items()}
GRADS = {k: [values(k, s, t + 1) for t in range(3)] for k, s in SHAPES.items()}

# Each case: torch optimizer, hyperparameters (torch names), optional groups
# (names, lr_scale, weight_decay), optional max_grad_norm (clip_grad_norm_ before
# every step) and optional warmup (LambdaLR with factor min(1, (s+1)/warmup)).
CASES = [
    dict(name="sgd_nesterov_wd", opt="SGD", hyper=dict(lr=0.1, momentum=0.9, nesterov=True, weight_decay=0.01)),
    dict(name="sgd_momentum_dampening", opt="SGD", hyper=dict(lr=0.05, momentum=0.8, dampening=0.3, weight_decay=0.02)),
    dict(name="sgd_plain", opt="SGD", hyper=dict(lr=0.1)),
    dict(name="adam_wd", opt="Adam", hyper=dict(lr=0.01, betas=[0.8, 0.95], eps=1e-6, weight_decay=0.1)),
    dict(name="adam_amsgrad", opt="Adam", hyper=dict(lr=0.02, betas=[0.9, 0.99], eps=1e-8, weight_decay=0.0, amsgrad=True)),
    dict(name="adamw", opt="AdamW", hyper=dict(lr=0.01, betas=[0.85, 0.98], eps=1e-7, weight_decay=0.3)),
    dict(name="adamw_amsgrad", opt="AdamW", hyper=dict(lr=0.01, betas=[0.9, 0.999], eps=1e-8, weight_decay=0.05, amsgrad=True)),
    dict(name="rmsprop_centered_momentum", opt="RMSprop",
         hyper=dict(lr=0.01, alpha=0.9, eps=1e-6, weight_decay=0.05, momentum=0.7, centered=True)),
    dict(name="rmsprop_plain", opt="RMSprop", hyper=dict(lr=0.01, alpha=0.99, eps=1e-8)),
    dict(name="adagrad_lr_decay", opt="Adagrad",
         hyper=dict(lr=0.1, lr_decay=0.05, weight_decay=0.02, initial_accumulator_value=0.1, eps=1e-10)),
    dict(name="adamw_groups_warmup_clip", opt="AdamW", hyper=dict(lr=0.02, betas=[0.9, 0.95], eps=1e-8, weight_decay=0.1),
         groups=[dict(params=["w"], lr_scale=1.0, weight_decay=0.1),
                 dict(params=["b", "ln.weight"], lr_scale=0.5, weight_decay=0.0)],
         max_grad_norm=1.5, warmup=3),
]


def run(case):
    params = {k: torch.tensor(INIT[k]).reshape(SHAPES[k]).requires_grad_(True) for k in SHAPES}
    hyper = dict(case["hyper"])
    if "betas" in hyper:
        hyper["betas"] = tuple(hyper["betas"])
    hyper["foreach"] = False
    cls = getattr(torch.optim, case["opt"])
    if "groups" in case:
        groups = [dict(params=[params[n] for n in g["params"]], lr=hyper["lr"] * g["lr_scale"],
                       weight_decay=g["weight_decay"]) for g in case["groups"]]
    else:
        groups = [dict(params=list(params.values()))]
    opt = cls(groups, **hyper)
    sched = None
    if "warmup" in case:
        w = case["warmup"]
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / w))
    steps, norms = [], []
    for t in range(3):
        for k, p in params.items():
            p.grad = torch.tensor(GRADS[k][t]).reshape(SHAPES[k])
        if "max_grad_norm" in case:
            norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), case["max_grad_norm"])))
        opt.step()
        if sched is not None:
            sched.step()
        steps.append({k: p.detach().flatten().tolist() for k, p in params.items()})
    out = {k: v for k, v in case.items()}
    out["steps"] = steps
    if norms:
        out["grad_norms"] = norms
    return out


def clip_case():
    grads = {k: torch.tensor(GRADS[k][0]).reshape(SHAPES[k]) for k in SHAPES}
    ps = []
    for k in SHAPES:
        p = torch.zeros(SHAPES[k], requires_grad=True)
        p.grad = grads[k].clone()
        ps.append(p)
    norm = torch.nn.utils.clip_grad_norm_(ps, 0.5)
    return dict(max_norm=0.5, norm=float(norm), grads={k: p.grad.flatten().tolist() for k, p in zip(SHAPES, ps)})


def main():
    ref = dict(
        torch_version=torch.__version__,
        shapes=SHAPES,
        init=INIT,
        grads=GRADS,
        cases=[run(c) for c in CASES],
        clip=clip_case(),
    )
    print(json.dumps(ref, indent=1))


if __name__ == "__main__":
    main()
