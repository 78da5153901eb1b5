#!/usr/bin/python3
"""detrain vs PyTorch, training-step throughput on the same machine in the same run (issue 5).

For every model, REPS rounds; each round runs detrain's step benchmark (bench/train_step_bench.cpp,
--impl deterministic and fast) and then PyTorch's (bench/peers/pytorch_train.py) with the same
batch and thread count, so slow phases of a shared machine hit both. Reports per model the
median over rounds of images/s and of the ratio detrain/PyTorch, as Markdown (stdout) and JSON
(--json FILE).

PyTorch gets its best settings, reported with the results: torch.set_num_threads(T),
OPENBLAS_NUM_THREADS=1, ATEN_CPU_CAPABILITY=avx512 when the CPU has AVX-512, and
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed from its environment (this project's machines may
set them to force AVX2 OpenBLAS kernels; only the peer's command unsets them).

usage: bench/peers/compare.py [--bench build/bench/dt_bench] [--threads 2] [--reps 3]
                              [--models smallcnn,mediumcnn_k3,...] [--json out.json]
                              [--python /usr/bin/python3]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# name in BM_TrainStep -> (pytorch model, kernel size, batch); batches as train_step_bench.cpp
MODELS = {
    "smallcnn": ("smallcnn", 3, 128),
    "smallcnn-bn": ("smallcnn-bn", 3, 128),
    "mediumcnn_k1": ("mediumcnn", 1, 64),
    "mediumcnn_k3": ("mediumcnn", 3, 64),
    "mediumcnn_k5": ("mediumcnn", 5, 64),
    "mediumcnn_k7": ("mediumcnn", 7, 64),
    "resnet18": ("resnet18", 3, 128),
}


def has_avx512():
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            return " avx512f" in f.read()
    except OSError:
        return False


def peer_env(threads):
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env["OPENBLAS_NUM_THREADS"] = "1"
    env["OMP_NUM_THREADS"] = str(threads)
    if has_avx512():
        env["ATEN_CPU_CAPABILITY"] = "avx512"
    return env


def detrain_step(bench, model, threads):
    """images/s of detrain's deterministic and fast presets (median step of the case)."""
    flt = f"^BM_TrainStep/{model}/deterministic/threads:{threads}/"
    out = subprocess.run([bench, f"--benchmark_filter={flt}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    batch = MODELS[model][2]
    return batch / (b["med_ms"] / 1e3), batch / (b["fast_med_ms"] / 1e3)


def pytorch_step(model, threads, python):
    name, k, batch = MODELS[model]
    # Enough steps for a steady median; ResNet-18 at batch 128 takes seconds per step.
    steps = 30 if name.startswith("smallcnn") or (k <= 3 and name != "resnet18") else 8
    out = subprocess.run([python, os.path.join(HERE, "pytorch_train.py"), "--model", name,
                          "--kernel-size", str(k), "--threads", str(threads), "--batch",
                          str(batch), "--steps", str(steps), "--warmup", "3"],
                         check=True, capture_output=True, text=True, env=peer_env(threads)).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build/bench/dt_bench")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--models", default="smallcnn,mediumcnn_k1,mediumcnn_k3,mediumcnn_k5,mediumcnn_k7")
    ap.add_argument("--json")
    # Debian's python3-torch is installed for the system interpreter, which need not be the
    # python3 first on PATH (nor the one running this script).
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="interpreter that has Debian's python3-torch (default /usr/bin/python3)")
    a = ap.parse_args()
    results = []
    for model in a.models.split(","):
        if model not in MODELS:
            sys.exit(f"unknown model {model}; known: {', '.join(MODELS)}")
        det, fast, peer, ratio = [], [], [], []
        for rep in range(a.reps):
            d, f = detrain_step(a.bench, model, a.threads)
            p = pytorch_step(model, a.threads, a.python)
            det.append(d)
            fast.append(f)
            peer.append(p["images_per_second"])
            ratio.append(d / p["images_per_second"])
            print(f"{model} round {rep + 1}: detrain {d:.0f} img/s, pytorch "
                  f"{p['images_per_second']:.0f} img/s", file=sys.stderr)
        results.append({"model": model, "batch": MODELS[model][2], "threads": a.threads,
                        "detrain_deterministic_img_s": statistics.median(det),
                        "detrain_fast_img_s": statistics.median(fast),
                        "pytorch_img_s": statistics.median(peer),
                        "ratio_deterministic_vs_pytorch": statistics.median(ratio),
                        "rounds": a.reps, "pytorch": p})
    env = peer_env(a.threads)
    print(f"PyTorch {results[0]['pytorch']['torch_version']}, {a.threads} threads, "
          f"OPENBLAS_NUM_THREADS=1, ATEN_CPU_CAPABILITY={env.get('ATEN_CPU_CAPABILITY', 'default')}, "
          f"OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset for the peer; medians of {a.reps} "
          "interleaved rounds.\n")
    print("| model | batch | detrain deterministic (img/s) | detrain fast (img/s) | "
          "PyTorch (img/s) | detrain / PyTorch |")
    print("|---|---|---|---|---|---|")
    for r in results:
        print(f"| {r['model']} | {r['batch']} | {r['detrain_deterministic_img_s']:.0f} | "
              f"{r['detrain_fast_img_s']:.0f} | {r['pytorch_img_s']:.0f} | "
              f"{r['ratio_deterministic_vs_pytorch']:.2f}× |")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
