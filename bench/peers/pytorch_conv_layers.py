#!/usr/bin/python3
"""Per-layer times of PyTorch (Debian's python3-torch, oneDNN convolutions) on the repeating 3x3
convolution of each ResNet-18 (CIFAR) stage at batch 32, the counterpart of dt_bench's
conv_pass/resnet_s{1..4}_{forward,dgrad,wgrad} (bench/conv2d_bench.cpp). scripts/perf_report.py
runs both, interleaved, to show where the ResNet-18 step time goes.

Per stage: forward (no autograd) and backward (input and weight gradient of one conv, timed as
forward-with-autograd + backward minus the forward), best of --reps. Prints one JSON object:
{"torch": version, "threads": T, "stages": [{"stage": 1, "channels": 64, "hw": 32,
"forward_ms": .., "backward_ms": ..}, ...]}.

usage: pytorch_conv_layers.py [--threads T] [--reps R] [--batch B]
"""
import argparse
import json
import sys
import time

import torch


def best_ms(fn, reps):
    fn()
    fn()
    best = float("inf")
    for _ in range(reps):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best * 1e3


def stage(n, c, hw, reps):
    x = torch.randn(n, c, hw, hw, requires_grad=True)
    conv = torch.nn.Conv2d(c, c, 3, 1, 1, bias=False)
    g = torch.randn(n, c, hw, hw)

    def forward():
        with torch.no_grad():
            conv(x)

    def forward_backward():
        x.grad = None
        conv.weight.grad = None
        conv(x).backward(g)

    fwd = best_ms(forward, reps)
    both = best_ms(forward_backward, reps)
    return {"channels": c, "hw": hw, "forward_ms": fwd, "backward_ms": max(both - fwd, 0.0)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--batch", type=int, default=32)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    stages = []
    for s in range(4):
        r = stage(a.batch, 64 << s, 32 >> s, a.reps)
        r["stage"] = s + 1
        stages.append(r)
    json.dump({"torch": torch.__version__, "threads": a.threads, "stages": stages}, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
