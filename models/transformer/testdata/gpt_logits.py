"""PyTorch's logits of GPT-2-style LMs, for TestGPTOptionsMatchTorch.

Reads a JSON list of models on stdin, each {"config": Locus's transformer.Config,
"params": {name: {"shape": [...], "data": [...]}}, "ids": [[...], ...]}, and writes a JSON
list of float64 logits [B*T, V] on stdout. The model is written here from GPT-2's
definition (the semantics of nanoGPT's model.py, under Locus's parameter names): token and
learned position embeddings, pre-LN blocks of causal softmax attention (one fused
c_attn map, the concatenation of q, k and v, split into heads) and an MLP, a final
LayerNorm and the head, tied to the token embedding or its own. LayerNorms and Linear maps
take their biases when the config has them (no_bias false) and none otherwise; the
activation is nn.GELU's exact erf form or its tanh approximation. Every parameter name
the config implies must be given, and no other.
"""
import json
import math
import sys

import torch
import torch.nn.functional as F


def expected_names(cfg):
    bias = not cfg.get("no_bias", False)
    names = ["tok_emb.weight", "pos_emb.weight", "ln_f.weight"]
    if bias:
        names.append("ln_f.bias")
    if not cfg["tied"]:
        names.append("head.weight")
        if bias:
            names.append("head.bias")
    for i in range(cfg["layers"]):
        for m in ["ln1", "attn.q", "attn.k", "attn.v", "attn.o", "ln2", "ffn.fc1", "ffn.fc2"]:
            names.append("blocks.%d.%s.weight" % (i, m))
            if bias:
                names.append("blocks.%d.%s.bias" % (i, m))
    return set(names)


def logits(job):
    cfg = job["config"]
    assert cfg["arch"] == "lm" and not cfg["post_ln"] and cfg["positions"] == "learned", cfg
    p = {k: torch.tensor(v["data"], dtype=torch.float64).reshape(v["shape"]) for k, v in job["params"].items()}
    want = expected_names(cfg)
    if set(p) != want:
        raise SystemExit("parameter names differ: missing %s, extra %s" % (sorted(want - set(p)), sorted(set(p) - want)))
    act = {"gelu": lambda t: F.gelu(t), "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"), "relu": F.relu}[cfg["activation"]]
    d, nh = cfg["dim"], cfg["heads"]

    def ln(x, name):
        return F.layer_norm(x, (d,), p[name + ".weight"], p.get(name + ".bias"), 1e-5)

    def lin(x, name):
        return F.linear(x, p[name + ".weight"], p.get(name + ".bias"))

    ids = torch.tensor(job["ids"], dtype=torch.long)
    B, T = ids.shape
    x = p["tok_emb.weight"][ids] + p["pos_emb.weight"][:T]
    causal = torch.tril(torch.ones(T, T, dtype=torch.bool))
    for i in range(cfg["layers"]):
        b = "blocks.%d." % i
        h = ln(x, b + "ln1")
        w = torch.cat([p[b + "attn.%s.weight" % n] for n in "qkv"])
        bias = torch.cat([p[b + "attn.%s.bias" % n] for n in "qkv"]) if b + "attn.q.bias" in p else None
        q, k, v = F.linear(h, w, bias).split(d, dim=2)
        q, k, v = (t.view(B, T, nh, d // nh).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(d // nh))
        att = F.softmax(att.masked_fill(~causal, float("-inf")), dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, d)
        x = x + lin(y, b + "attn.o")
        x = x + lin(act(lin(ln(x, b + "ln2"), b + "ffn.fc1")), b + "ffn.fc2")
    x = ln(x, "ln_f")
    out = F.linear(x, p["tok_emb.weight"]) if cfg["tied"] else lin(x, "head")
    return out.reshape(B * T, -1).flatten().tolist()


def main():
    jobs = json.load(sys.stdin)
    with torch.no_grad():
        json.dump([logits(j) for j in jobs], sys.stdout)


if __name__ == "__main__":
    main()
