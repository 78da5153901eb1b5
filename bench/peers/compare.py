#!/usr/bin/python3
"""detrain vs the peers a user picks today, training-step throughput on one machine in one run.

Peers (each at its best settings; those not installed are skipped and named):
  pytorch-1.13      Debian's python3-torch, eager (--python)
  pytorch-2         PyTorch 2.x from PyPI in .venv-peers (--venv-python), eager
  pytorch-2-cl      the same, model and batch channels-last (oneDNN's NHWC convolutions)
  pytorch-2-compile the same, under torch.compile (Inductor, default mode)
  jax               JAX from PyPI in .venv-peers, the whole step jitted, NHWC
Shapes: those of BM_TrainStep (bench/train_step_bench.cpp), the batch included.

For every model, REPS rounds; each round runs detrain's step benchmark (the deterministic and
exact presets, each step adjacent to a `fast` step) and then every peer, so slow phases of a
shared machine hit all of them. Per model it reports the medians over rounds of images/s, of
the ratio detrain deterministic / best peer (the peer with the highest median) and of exact's
step time / deterministic's, as Markdown (stdout) and JSON (--json FILE).

Settings given to every peer (peer_env, reported): OMP_NUM_THREADS=T, OPENBLAS_NUM_THREADS=1,
ATEN_CPU_CAPABILITY=avx512 where the CPU has AVX-512, and OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE
removed (this project's machines may set them; only the peers' commands unset them). Each
peer script adds its own (pytorch_train.py, jax_train.py).

usage: bench/peers/compare.py [--bench build/bench/dt_bench] [--threads 2] [--reps 3]
                              [--models smallcnn,mediumcnn_k3,resnet18] [--peers a,b,...]
                              [--python /usr/bin/python3] [--venv-python .venv-peers/bin/python]
                              [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
# name in BM_TrainStep -> (peer model, kernel size, batch); as kShapes in train_step_bench.cpp
MODELS = {
    "smallcnn": ("smallcnn", 3, 128),
    "smallcnn-bn": ("smallcnn-bn", 3, 128),
    "mediumcnn_k1": ("mediumcnn", 1, 64),
    "mediumcnn_k3": ("mediumcnn", 3, 64),
    "mediumcnn_k5": ("mediumcnn", 5, 64),
    "mediumcnn_k7": ("mediumcnn", 7, 64),
    "resnet18": ("resnet18", 3, 128),
}
# peer -> (interpreter option, script, extra flags, module it needs)
PEERS = {
    "pytorch-1.13": ("python", "pytorch_train.py", [], "torch"),
    "pytorch-2": ("venv_python", "pytorch_train.py", [], "torch"),
    "pytorch-2-cl": ("venv_python", "pytorch_train.py", ["--channels-last"], "torch"),
    "pytorch-2-compile": ("venv_python", "pytorch_train.py", ["--compile"], "torch"),
    "jax": ("venv_python", "jax_train.py", [], "jax"),
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
    """(deterministic images/s, exact images/s, exact / deterministic step time). Each preset's
    step runs adjacent to a `fast` step; the time ratio is that of their ratios to `fast`."""
    flt = f"^BM_TrainStep/{model}/(deterministic|exact)/threads:{threads}/"
    out = subprocess.run([bench, f"--benchmark_filter={flt}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    by = {b["name"].split("/")[2]: b for b in json.loads(out)["benchmarks"]}
    det, exact = by["deterministic"], by["exact"]
    batch = MODELS[model][2]
    return (batch / (det["med_ms"] / 1e3), batch / (exact["med_ms"] / 1e3),
            exact["med_vs_fast"] / det["med_vs_fast"])


def peer_step(peer, model, threads, interpreter):
    name, k, batch = MODELS[model]
    _, script, extra, _ = PEERS[peer]
    # Enough steps for a steady median; ResNet-18 at batch 128 takes seconds per step.
    steps = 30 if name.startswith("smallcnn") else 8 if name == "resnet18" else 15
    out = subprocess.run([interpreter, os.path.join(HERE, script), "--model", name,
                          "--kernel-size", str(k), "--threads", str(threads), "--batch",
                          str(batch), "--steps", str(steps), "--warmup", "3"] + extra,
                         check=True, capture_output=True, text=True, env=peer_env(threads)).stdout
    return json.loads(out.strip().splitlines()[-1])


def available(peers, interpreters):
    """The peers whose interpreter imports their module; prints the others with the reason."""
    ok = []
    for peer in peers:
        option, _, _, module = PEERS[peer]
        python = interpreters[option]
        found = os.path.exists(python) and subprocess.run(
            [python, "-c", f"import {module}"], capture_output=True).returncode == 0
        if found:
            ok.append(peer)
        else:
            print(f"compare: skipping {peer}: {python} cannot import {module} "
                  "(hint: scripts/setup.sh --peers)", file=sys.stderr)
    return ok


def table(results, peers):
    head = ["model", "batch", "detrain deterministic", "detrain exact"] + peers + [
        "best peer", "deterministic / best", "exact / deterministic time"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for r in results:
        cells = [r["model"], str(r["batch"]), f"{r['deterministic_img_s']:.0f}",
                 f"{r['exact_img_s']:.0f}"]
        cells += [f"{r['peers'][p]['img_s']:.0f}" for p in peers]
        ratio = f"{r['ratio_vs_best']:.2f}×" if r["ratio_vs_best"] else "n/a"
        cells += [r["best_peer"], ratio, f"{r['exact_vs_det']:.2f}×"]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\nusage:")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--bench", default=os.path.join(ROOT, "build", "bench", "dt_bench"),
                    help="detrain's benchmark binary (default build/bench/dt_bench)")
    ap.add_argument("--threads", type=int, default=2,
                    help="threads for detrain and every peer (default 2)")
    ap.add_argument("--reps", type=int, default=3,
                    help="interleaved rounds per model; medians are reported (default 3)")
    ap.add_argument("--models", default="smallcnn,mediumcnn_k3,resnet18",
                    help="BM_TrainStep models, comma-separated (default "
                         "smallcnn,mediumcnn_k3,resnet18)")
    ap.add_argument("--peers", default=",".join(PEERS), help="subset of " + ",".join(PEERS))
    # Debian's python3-torch is installed for the system interpreter, which need not be the
    # python3 first on PATH (nor the one running this script).
    ap.add_argument("--python", default="/usr/bin/python3",
                    help="interpreter with Debian's python3-torch (default /usr/bin/python3)")
    ap.add_argument("--venv-python", default=os.path.join(ROOT, ".venv-peers", "bin", "python"),
                    help="interpreter with PyPI's torch and jax (scripts/setup.sh --peers)")
    ap.add_argument("--json", help="also write every figure to this JSON file")
    a = ap.parse_args()
    for model in a.models.split(","):
        if model not in MODELS:
            sys.exit(f"compare: unknown model {model}; known: {', '.join(MODELS)}")
    for peer in a.peers.split(","):
        if peer not in PEERS:
            sys.exit(f"compare: unknown peer {peer}; known: {', '.join(PEERS)}")
    interpreters = {"python": a.python, "venv_python": a.venv_python}
    peers = available(a.peers.split(","), interpreters)
    results = []
    for model in a.models.split(","):
        det, exact, exact_vs_det = [], [], []
        runs = {p: [] for p in peers}
        for rep in range(a.reps):
            d, e, ratio = detrain_step(a.bench, model, a.threads)
            det.append(d)
            exact.append(e)
            exact_vs_det.append(ratio)
            line = f"{model} round {rep + 1}: detrain {d:.0f} img/s (exact {e:.0f})"
            for p in peers:
                runs[p].append(peer_step(p, model, a.threads, interpreters[PEERS[p][0]]))
                line += f", {p} {runs[p][-1]['images_per_second']:.0f}"
            print(line, file=sys.stderr)
        med = {p: statistics.median(r["images_per_second"] for r in runs[p]) for p in peers}
        best = max(med, key=med.get) if med else None
        results.append({
            "model": model, "batch": MODELS[model][2], "threads": a.threads, "rounds": a.reps,
            "deterministic_img_s": statistics.median(det), "exact_img_s": statistics.median(exact),
            "exact_vs_det": statistics.median(exact_vs_det),
            "peers": {p: {"img_s": med[p], "settings": runs[p][-1]} for p in peers},
            "best_peer": best or "none",
            # per round, detrain against the best peer's figure of the same round
            "ratio_vs_best": statistics.median(
                d / r["images_per_second"] for d, r in zip(det, runs[best])) if best else 0.0,
        })
    env = peer_env(a.threads)
    print(f"{a.threads} threads; medians of {a.reps} interleaved rounds. Peers: "
          f"OPENBLAS_NUM_THREADS=1, ATEN_CPU_CAPABILITY={env.get('ATEN_CPU_CAPABILITY', 'default')}"
          ", OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset. Cells: images per second.\n")
    versions = sorted({f"{p}: " + (s.get("torch_version") or s.get("jax_version", "?"))
                       for r in results for p, v in r["peers"].items()
                       for s in [v["settings"]]})
    print("Versions: " + "; ".join(versions) + "\n")
    print(table(results, peers))
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(results, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
