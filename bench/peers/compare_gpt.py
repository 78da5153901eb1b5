#!/usr/bin/env python3
"""detrain's GPT against PyTorch: a one-step cross-check and training-step throughput.

1. Cross-check: build/bench/dt_gpt_step writes one detrain step (deterministic and exact) from
   seed 0; bench/peers/pytorch_gpt.py check recomputes it from the same initial weights and batch
   in PyTorch float32 and float64 and reports each one's error against float64.
2. Throughput: REPS interleaved rounds; each round runs BM_TrainStep/gpt/deterministic and
   /exact (each case also times the fast preset, step by step in between), then PyTorch eager,
   then PyTorch with torch.compile, all at the same batch (8), context (128) and threads. Reports
   medians over rounds of tokens/s and of the ratios.

PyTorch gets its best settings (reported): compare.py's peer_env (OMP_NUM_THREADS=T,
ATEN_CPU_CAPABILITY=avx512 where the CPU has it, OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE removed from
its environment only), torch.set_num_threads(T), the fused CPU Adam,
scaled_dot_product_attention.

usage: bench/peers/compare_gpt.py [--python .venv-peers/bin/python] [--bench build/bench/dt_bench]
                                  [--step build/bench/dt_gpt_step] [--threads 2] [--reps 5]
                                  [--json out.json]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from compare import peer_env  # noqa: E402  (the peers' best settings: one place)
TOKENS = 8 * 128  # BM_TrainStep/gpt's batch: 8 sequences of 128 bytes


def detrain_case(bench, preset, threads):
    """(preset's median step, the interleaved fast steps' median) in seconds."""
    flt = f"^BM_TrainStep/gpt/{preset}/threads:{threads}/"
    out = subprocess.run([bench, f"--benchmark_filter={flt}", "--benchmark_format=json"],
                         check=True, capture_output=True, text=True).stdout
    b = json.loads(out)["benchmarks"][0]
    return b["med_ms"] / 1e3, b["fast_med_ms"] / 1e3


def pytorch_case(python, mode, threads):
    out = subprocess.run([python, os.path.join(HERE, "pytorch_gpt.py"), "bench", "--mode", mode,
                          "--threads", str(threads), "--steps", "20", "--warmup", "5"],
                         check=True, capture_output=True, text=True, env=peer_env(threads)).stdout
    return json.loads(out.strip().splitlines()[-1])


def cross_check(python, step, threads):
    with tempfile.TemporaryDirectory() as tmp:
        files = []
        for impl in ("deterministic", "exact"):
            path = os.path.join(tmp, f"gpt_{impl}.safetensors")
            subprocess.run([step, "--impl", impl, "--threads", str(threads), "--out", path],
                           check=True, capture_output=True)
            files.append(path)
        out = subprocess.run([python, os.path.join(HERE, "pytorch_gpt.py"), "check", *files,
                              "--threads", str(threads)], check=True, capture_output=True,
                             text=True, env=peer_env(threads)).stdout
    return json.loads(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--python", default=".venv-peers/bin/python",
                    help="interpreter with PyTorch 2.x (scripts/setup.sh --peers makes it)")
    ap.add_argument("--bench", default="build/bench/dt_bench")
    ap.add_argument("--step", default="build/bench/dt_gpt_step")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    for path, hint in ((a.python, "scripts/setup.sh --peers"), (a.bench, "scripts/build.sh"),
                       (a.step, "scripts/build.sh")):
        if not os.access(path, os.X_OK):
            sys.exit(f"compare_gpt: {path} is missing (hint: {hint})")

    check = cross_check(a.python, a.step, a.threads)
    rounds = []
    for rep in range(a.reps):
        det, fast = detrain_case(a.bench, "deterministic", a.threads)
        exact, fast2 = detrain_case(a.bench, "exact", a.threads)
        eager = pytorch_case(a.python, "eager", a.threads)
        comp = pytorch_case(a.python, "compile", a.threads)
        r = {"deterministic": det, "fast": fast, "exact": exact, "fast_beside_exact": fast2,
             "eager": eager["step_ms_median"] / 1e3, "compile": comp["step_ms_median"] / 1e3}
        rounds.append(r)
        print(f"round {rep + 1}: " + ", ".join(f"{k} {v * 1e3:.1f} ms" for k, v in r.items()),
              file=sys.stderr)

    def med(f):
        return statistics.median(f(r) for r in rounds)

    summary = {
        "threads": a.threads, "batch": 8, "context": 128, "rounds": a.reps,
        "torch_version": eager["torch_version"], "adam": eager["adam"],
        "tokens_per_second": {k: med(lambda r, k=k: TOKENS / r[k])
                              for k in ("deterministic", "exact", "fast", "eager", "compile")},
        "deterministic_vs_eager": med(lambda r: r["eager"] / r["deterministic"]),
        "deterministic_vs_compile": med(lambda r: r["compile"] / r["deterministic"]),
        "deterministic_time_vs_fast": med(lambda r: r["deterministic"] / r["fast"]),
        "exact_time_vs_fast": med(lambda r: r["exact"] / r["fast_beside_exact"]),
        "exact_time_vs_deterministic": med(lambda r: r["exact"] / r["deterministic"]),
        "cross_check": check, "rounds_s": rounds,
    }
    t = summary["tokens_per_second"]
    print(f"PyTorch {summary['torch_version']} ({summary['adam']} Adam), {a.threads} threads, "
          f"batch 8 x 128 tokens; medians of {a.reps} interleaved rounds.\n")
    print("| step | tokens/s |\n|---|---|")
    for k, name in (("deterministic", "detrain deterministic"), ("exact", "detrain exact"),
                    ("fast", "detrain fast"), ("eager", "PyTorch eager"),
                    ("compile", "PyTorch torch.compile")):
        print(f"| {name} | {t[k]:.0f} |")
    print(f"\ndeterministic / eager speed {summary['deterministic_vs_eager']:.2f}x, / compile "
          f"{summary['deterministic_vs_compile']:.2f}x; time deterministic / fast "
          f"{summary['deterministic_time_vs_fast']:.2f}, exact / fast "
          f"{summary['exact_time_vs_fast']:.2f}, exact / deterministic "
          f"{summary['exact_time_vs_deterministic']:.2f}\n")
    print("| one step vs float64 | loss rel. error | gradient rel. L2 | update rel. L2 |")
    print("|---|---|---|---|")
    for k in ("pytorch_float32", "detrain_deterministic", "detrain_exact"):
        c = check[k]
        print(f"| {k} | {c['loss_rel_error']:.2e} | {c['grad']['rel_l2']:.2e} | "
              f"{c['update']['rel_l2']:.2e} |")
    if a.json:
        with open(a.json, "w", encoding="utf-8") as f:
            json.dump(summary, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
