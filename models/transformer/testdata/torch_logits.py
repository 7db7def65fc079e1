#!/usr/bin/env python3
"""torch_logits.py -- PyTorch's logits for the Go LM's weights (the fixture of
TestTorchLogits, see README.md beside this file).

    /usr/bin/python3 torch_logits.py [--weights torch_lm.safetensors]
        [--out torch_lm_logits.safetensors] [--peer PATH/torch_peer.py]

Loads the weights that Locus exported (train.ExportSafetensors) into the
reference `LM` class of shared/peers/torch_peer.py with load_state_dict(strict=True),
so every name and shape must match exactly, draws ids (B=2, T=64, uniform over the
vocabulary, torch.Generator seed 0), and writes the ids (I64), torch's float32
logits [B*T, V] (F32) and the same computed in float64 from the same weights
("logits64", F64) as safetensors. It also prints one JSON line with the
float32-vs-float64 discrepancy of torch itself, for the Go-side tolerance.

torch 1.13 has no safetensors package: the reader and writer below are ~30 lines
(u64-LE header length, JSON header padded with spaces to a multiple of 8, raw
little-endian data).
"""

import argparse
import importlib.util
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
ap.add_argument("--weights", default=os.path.join(HERE, "torch_lm.safetensors"))
ap.add_argument("--out", default=os.path.join(HERE, "torch_lm_logits.safetensors"))
ap.add_argument("--peer", default=os.environ.get(
    "LOCUS_TORCH_PEER", os.path.join(HERE, "..", "..", "..", "..", "shared", "peers", "torch_peer.py")))
ap.add_argument("--batch", type=int, default=2)
ap.add_argument("--seed", type=int, default=0)
args = ap.parse_args()

# torch_peer.py parses sys.argv and may re-exec itself to choose a BLAS when
# imported: give it a harmless command line and keep the current process.
os.environ["TORCH_PEER_BLAS_DONE"] = "1"
argv, sys.argv = sys.argv, [args.peer, "info", "--threads", "1"]
spec = importlib.util.spec_from_file_location("torch_peer", args.peer)
peer = importlib.util.module_from_spec(spec)
spec.loader.exec_module(peer)
sys.argv = argv

import numpy as np  # noqa: E402
import torch  # noqa: E402

DTYPES = {"F32": (np.float32, 4), "F64": (np.float64, 8), "I64": (np.int64, 8)}


def read_safetensors(path):
    with open(path, "rb") as f:
        raw = f.read()
    n, = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n].decode("utf-8"))
    meta = header.pop("__metadata__", {})
    data = raw[8 + n:]
    out = {}
    for name, info in header.items():
        dt, size = DTYPES[info["dtype"]]
        b, e = info["data_offsets"]
        a = np.frombuffer(data[b:e], dtype=np.dtype(dt).newbyteorder("<"))
        out[name] = a.astype(dt).reshape(info["shape"])
    return out, meta


def write_safetensors(path, tensors, meta):
    names = {np.dtype(np.float32): "F32", np.dtype(np.float64): "F64", np.dtype(np.int64): "I64"}
    header, blobs, off = {"__metadata__": {k: str(v) for k, v in meta.items()}}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        blob = a.astype(a.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": names[a.dtype], "shape": list(a.shape), "data_offsets": [off, off + len(blob)]}
        blobs.append(blob)
        off += len(blob)
    hb = json.dumps(header, separators=(",", ":")).encode("utf-8")
    hb += b" " * ((8 - len(hb) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(hb)))
        f.write(hb)
        for b in blobs:
            f.write(b)


weights, wmeta = read_safetensors(args.weights)
cfg = json.loads(wmeta["locus_config"])
assert cfg["arch"] == "lm" and cfg["kernel"] == "exponential" and cfg["bandwidth"] == "fixed" \
    and cfg["positions"] == "learned" and not cfg["post_ln"] and not cfg["tied"] \
    and cfg["activation"] == "gelu_tanh", f"not the standard configuration: {cfg}"
V, d, h, L, dff, T = cfg["vocab"], cfg["dim"], cfg["heads"], cfg["layers"], cfg["hidden"], cfg["max_len"]

torch.set_default_dtype(torch.float32)
model = peer.LM(V, d, h, L, dff, T, causal=True)
model.load_state_dict({k: torch.from_numpy(v.astype(np.float32)) for k, v in weights.items()}, strict=True)
model.eval()
g = torch.Generator().manual_seed(args.seed)
ids = torch.randint(0, V, (args.batch, T), generator=g)
with torch.no_grad():
    logits = model(ids).reshape(args.batch * T, V)
    model64 = peer.LM(V, d, h, L, dff, T, causal=True).double()
    model64.load_state_dict({k: torch.from_numpy(v.astype(np.float64)) for k, v in weights.items()}, strict=True)
    logits64 = model64(ids).reshape(args.batch * T, V)
f32_vs_f64 = float((logits.double() - logits64).abs().max())

meta = {"format": "pt", "source": os.path.basename(args.weights), "torch": torch.__version__,
        "model": f"torch_peer.LM(V={V}, d={d}, h={h}, L={L}, d_ff={dff}, T={T}, causal=True)",
        "ids": f"torch.randint(0, {V}, ({args.batch}, {T})), Generator seed {args.seed}",
        "f32_vs_f64_max_abs": f"{f32_vs_f64:.3g}"}
write_safetensors(args.out, {"ids": ids.numpy().astype(np.int64), "logits": logits.numpy(),
                             "logits64": logits64.numpy()}, meta)
back, _ = read_safetensors(args.out)
assert np.array_equal(back["ids"], ids.numpy()) and back["logits"].tobytes() == logits.numpy().tobytes()
assert back["logits64"].tobytes() == logits64.numpy().tobytes()
print(json.dumps({"out": args.out, "bytes": os.path.getsize(args.out), "logits_shape": list(logits.shape),
                  "max_abs_logit": float(logits.abs().max()), "f32_vs_f64_max_abs": f32_vs_f64,
                  "torch": torch.__version__}))
