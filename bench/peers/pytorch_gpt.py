#!/usr/bin/env python3
"""detrain's GPT in PyTorch: a one-step cross-check against float64, and training-step throughput.

The module (python/detrain/torch_models.py) mirrors models/gpt.cpp layer for layer and name for
name: GPT-2's pre-LN blocks, learned positions, a tied head without bias, layer norm with eps
1e-5, GELU in its tanh form, causal attention with scale 1/sqrt(head size), qkv as one (3C, C)
linear layer (q, k, v in that order, head h at columns h*D .. h*D + D - 1 of each). Byte tokens:
a vocabulary of 256.

check FILE [FILE ...]: each FILE is written by build/bench/dt_gpt_step (one detrain step under
one --impl preset). From its initial weights and batch, PyTorch computes the loss, the gradients
and one AdamW step (lr 3e-3, weight decay 0.01, as dt_gpt_step) in float32 and in float64. Prints
one JSON object: per FILE and for PyTorch float32, the error against float64 of the loss, of the
gradients and of the update (weights after the step minus before, taken in float64), as relative
L2 norms over all parameters and as the largest per-tensor relative error.

bench: median training-step time of the default GPT (4 blocks, width 128, 4 heads) on a fixed
random batch of --batch sequences of --context bytes: forward, cross-entropy, zero_grad, backward
and an Adam step (lr 1e-4), what BM_TrainStep/gpt times for detrain. --mode eager or compile
(torch.compile of the module, inductor's defaults). Prints one JSON object.

Best settings, set here or by compare_gpt.py: torch.set_num_threads(T); scaled_dot_product_attention
(PyTorch's fused CPU attention kernel); Adam with fused=True (one CPU kernel for all parameters)
where PyTorch has it (2.4 and later).

usage: pytorch_gpt.py check FILE [FILE ...] [--threads T]
       pytorch_gpt.py bench [--mode eager|compile] [--threads T] [--batch B] [--context T]
                            [--steps S] [--warmup W]
"""
import argparse
import json
import statistics
import struct
import sys
import time

import os

import numpy as np
import torch
import torch.nn.functional as F


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from peer_common import torch_models  # noqa: E402

GPT = torch_models().GPT  # models/gpt.cpp layer for layer, name for name
VOCAB = 256
STEP_LR, STEP_WD = 3e-3, 0.01  # dt_gpt_step's AdamW step


def read_safetensors(path):
    """name -> NumPy array, for the dtypes dt_gpt_step writes (F32, I64)."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    body = data[8 + n:]
    dtypes = {"F32": np.float32, "I64": np.int64}
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        out[name] = np.frombuffer(body[a:b], dtype=dtypes[info["dtype"]]).reshape(info["shape"])
    return out, header.get("__metadata__", {})


def torch_step(tensors, dtype, names):
    """Loss, gradients and weights after one AdamW step, from the file's initial weights."""
    tokens = torch.from_numpy(tensors["tokens"].copy())
    b, t = tokens.shape
    width = tensors["init.wte.weight"].shape[1]
    layers = sum(1 for n in names if n.endswith(".ln_1.weight"))
    heads = 4  # dt_gpt_step's default GPT
    net = GPT(layers, heads, width, tensors["init.wpe.weight"].shape[0]).to(dtype)
    state = {n: torch.from_numpy(tensors["init." + n].astype(np.float64)).to(dtype) for n in names}
    net.load_state_dict(state, strict=True)
    opt = torch.optim.AdamW(net.parameters(), lr=STEP_LR, weight_decay=STEP_WD, eps=1e-8)
    loss = F.cross_entropy(net(tokens), torch.from_numpy(tensors["targets"].copy()))
    opt.zero_grad()
    loss.backward()
    params = dict(net.named_parameters())
    grads = {n: params[n].grad.detach().double().numpy().copy() for n in names}
    opt.step()
    after = {n: params[n].detach().double().numpy().copy() for n in names}
    return float(loss.detach()), grads, after


def errors(got, ref, names):
    """Relative L2 error over all parameters and the largest per-tensor one."""
    num = sum(float(np.sum((got[n] - ref[n]) ** 2)) for n in names)
    den = sum(float(np.sum(ref[n] ** 2)) for n in names)
    per = [float(np.linalg.norm(got[n] - ref[n]) / max(np.linalg.norm(ref[n]), 1e-300))
           for n in names]
    worst = int(np.argmax(per))
    return {"rel_l2": (num / den) ** 0.5, "max_tensor_rel_l2": per[worst],
            "max_tensor": names[worst]}


def check(files, threads):
    torch.set_num_threads(threads)
    first, _ = read_safetensors(files[0])
    names = [k[len("init."):] for k in first if k.startswith("init.")]
    init = {n: first["init." + n].astype(np.float64) for n in names}
    loss64, grad64, after64 = torch_step(first, torch.float64, names)
    update64 = {n: after64[n] - init[n] for n in names}

    def report(loss, grads, after):
        return {"loss": loss, "loss_rel_error": abs(loss - loss64) / abs(loss64),
                "grad": errors(grads, grad64, names),
                "update": errors({n: after[n] - init[n] for n in names}, update64, names)}

    result = {"torch_version": torch.__version__, "threads": threads, "loss_float64": loss64,
              "parameters": len(names)}
    loss32, grad32, after32 = torch_step(first, torch.float32, names)
    result["pytorch_float32"] = report(loss32, grad32, after32)
    for path in files:
        t, meta = read_safetensors(path)
        if any(not np.array_equal(t["init." + n], first["init." + n]) for n in names) or \
                not np.array_equal(t["tokens"], first["tokens"]):
            sys.exit(f"{path}: other initial weights or tokens than {files[0]}")
        result["detrain_" + meta.get("impl", path)] = report(
            float(t["loss"][0]), {n: t["grad." + n].astype(np.float64) for n in names},
            {n: t["step." + n].astype(np.float64) for n in names})
    print(json.dumps(result, indent=2))
    return 0


def bench(a):
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net = GPT(context=a.context)
    net.train()
    fused = tuple(int(x) for x in torch.__version__.split(".")[:2]) >= (2, 4)
    opt = torch.optim.Adam(net.parameters(), lr=1e-4, **({"fused": True} if fused else {}))
    model = torch.compile(net) if a.mode == "compile" else net
    tokens = torch.randint(0, VOCAB, (a.batch, a.context))
    targets = torch.roll(tokens.reshape(-1), -1)
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(tokens), targets)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt)
    med = statistics.median(times)
    print(json.dumps({
        "peer": "pytorch", "torch_version": torch.__version__, "mode": a.mode, "model": "gpt",
        "threads": a.threads, "batch": a.batch, "context": a.context, "steps": a.steps,
        "adam": "fused" if fused else "for-each", "step_ms_min": 1e3 * min(times),
        "step_ms_median": 1e3 * med, "tokens_per_second": a.batch * a.context / med}))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    c = sub.add_parser("check", help="one step against float64 (files from dt_gpt_step)")
    c.add_argument("files", nargs="+")
    c.add_argument("--threads", type=int, default=2)
    b = sub.add_parser("bench", help="training-step throughput")
    b.add_argument("--mode", default="eager", choices=["eager", "compile"])
    b.add_argument("--threads", type=int, default=2)
    b.add_argument("--batch", type=int, default=8)
    b.add_argument("--context", type=int, default=128)
    b.add_argument("--steps", type=int, default=20)
    b.add_argument("--warmup", type=int, default=5)
    a = ap.parse_args()
    return check(a.files, a.threads) if a.cmd == "check" else bench(a)


if __name__ == "__main__":
    sys.exit(main())
