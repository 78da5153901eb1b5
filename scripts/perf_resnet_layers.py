#!/usr/bin/python3
"""The ResNet-18 per-layer section of docs/results/performance.md (imported by scripts/perf_report.py).

Times the repeating 3x3 convolution of each ResNet-18 (CIFAR) stage at batch 32 and 2 threads:
detrain's deterministic kernels (dt_bench conv_pass/resnet_s*: forward, dgrad, wgrad) and
PyTorch's oneDNN convolutions (bench/peers/pytorch_conv_layers.py: forward, backward = dgrad +
wgrad), two interleaved rounds, best of each. It shows where the ResNet-18 step ratio comes from.
"""
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
from compare import peer_env  # noqa: E402  (the peer's best settings, one definition)


def detrain_ms(bench):
    env = dict(os.environ, OMP_NUM_THREADS="2")
    out = subprocess.run([bench, "--benchmark_filter=^conv_pass/resnet_s",
                          "--benchmark_repetitions=3", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True, env=env).stdout
    best = {}
    for b in json.loads(out)["benchmarks"]:
        if b.get("run_type") == "aggregate":
            continue
        name = b["run_name"].split("/")[1]  # resnet_s1_forward
        ms = b["real_time"] / 1e6 if b["time_unit"] == "ns" else b["real_time"]
        best[name] = min(best.get(name, float("inf")), ms)
    return best


def pytorch_ms(python):
    out = subprocess.run([python, os.path.join(ROOT, "bench", "peers", "pytorch_conv_layers.py"),
                          "--threads", "2"], check=True, capture_output=True, text=True,
                         env=peer_env(2)).stdout
    return json.loads(out)


def section(build, python="/usr/bin/python3"):
    title = "## ResNet-18 convolutions vs PyTorch\n\n"
    if subprocess.run([python, "-c", "import torch"], capture_output=True).returncode != 0:
        return title + "Skipped: python3-torch missing (scripts/setup.sh --peers).\n"
    bench = os.path.join(build, "bench", "dt_bench")
    ours, peer = {}, None
    for _ in range(2):  # interleaved rounds; best of each side
        for k, v in detrain_ms(bench).items():
            ours[k] = min(ours.get(k, float("inf")), v)
        p = pytorch_ms(python)
        if peer is None:
            peer = p
        else:
            for a, b in zip(peer["stages"], p["stages"]):
                a["forward_ms"] = min(a["forward_ms"], b["forward_ms"])
                a["backward_ms"] = min(a["backward_ms"], b["backward_ms"])
    rows = ["| stage | map | channels | GFLOP per pass | detrain fwd (ms) | PyTorch fwd (ms) | "
            "fwd ratio | detrain dgrad + wgrad (ms) | PyTorch bwd (ms) | bwd ratio |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for st in peer["stages"]:
        s, c, hw = st["stage"], st["channels"], st["hw"]
        gflop = 2.0 * 32 * c * c * 9 * hw * hw / 1e9
        f = ours[f"resnet_s{s}_forward"]
        b = ours[f"resnet_s{s}_dgrad"] + ours[f"resnet_s{s}_wgrad"]
        rows.append(f"| {s} | {hw}×{hw} | {c} | {gflop:.2f} | {f:.1f} ({gflop / f * 1e3:.0f} "
                    f"GFLOP/s) | {st['forward_ms']:.1f} ({gflop / st['forward_ms'] * 1e3:.0f} "
                    f"GFLOP/s) | {st['forward_ms'] / f:.2f}× | {b:.1f} | {st['backward_ms']:.1f} "
                    f"| {st['backward_ms'] / b:.2f}× |")
    return (title + "The 3×3 convolution that repeats in each stage, batch 32, 2 threads; detrain "
            "deterministic (tree) kernels vs PyTorch " + peer["torch"] + " (oneDNN), best of two "
            "interleaved rounds; ratio = PyTorch time / detrain time (> 1: detrain faster).\n\n" +
            "\n".join(rows) + "\n")
