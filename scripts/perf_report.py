#!/usr/bin/python3
"""Runs detrain's benchmark set and writes docs/results/performance.md (issue 5).

Sections: the machine; own GEMM vs OpenBLAS sgemm (dt_bench_vendor, OpenBLAS at its best:
OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE unset for that command only); conv per kernel size x
accumulation mode (Figure 9b counterpart); reductions per mode in GB/s; one training step per
model x --impl preset x thread count; detrain vs its peers (bench/peers/compare.py); each
kernel of a step against the FMA and memory ceilings (dt_roofline); and, per layer,
ResNet-18's convolutions against PyTorch's (scripts/perf_resnet_layers.py). Every
comparison is measured in one run with A and B interleaved, so the ratios hold on a shared
machine even when absolute times drift. Needs scripts/setup.sh --peers for the OpenBLAS and
PyTorch sections (skipped, and said so, when missing). How to run it and read the figures:
docs/performance.md.

usage: scripts/perf_report.py [--build build] [--out docs/results/performance.md] [--quick]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile

import perf_resnet_layers

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# The report's opening, after its title. Every sentence stays within scripts/prose_lint.py's
# limits (40 words, no nested parentheses), as does the rest of the prose below.
INTRO = """\
This page is the report `scripts/perf_report.py` writes, so a new run replaces it. It compares
detrain's GEMM with OpenBLAS, times convolutions and reductions per accumulation mode, and
times a training step per model, `--impl` preset and thread count. It also compares detrain
with its peers on whole models and with PyTorch on ResNet-18's convolutions. It shows each
kernel of a step against the machine's FMA and memory ceilings. Each comparison interleaves A and B in
one run, so the ratios hold on a shared machine even when absolute times drift.

```sh
scripts/perf_report.py [--build build] [--out docs/results/performance.md] [--quick]
```

`--quick` runs fewer models and repetitions. The OpenBLAS and PyTorch sections need
`scripts/setup.sh --peers`; without it they are skipped, and the page says so.
"""

# The GEMM problems' names: pattern, then its shape (M × N × K) or what it holds.
GEMM_PROBLEMS = (
    ("*Fwd", "Co × positions × Ci·K², per sample"),
    ("*FwdChunk", "as `*Fwd`, with several samples side by side, as the kernels run small maps"),
    ("*Dgrad", "Ci·K² × positions × Co, with Aᵀ = the weights as stored"),
    ("*DgradRow", "one kernel row of taps, in the atomic mode"),
    ("*Wgrad", "Co × Ci·K² × positions, with Bᵀ"),
)


def sh(cmd, env=None):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout


def bench_json(exe, flt, extra=(), env=None):
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        path = f.name
    subprocess.run([exe, f"--benchmark_filter={flt}", f"--benchmark_out={path}",
                    "--benchmark_out_format=json", *extra], check=True,
                   stdout=subprocess.DEVNULL, env=env)
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    os.unlink(path)
    return data


def machine():
    model = "?"
    with open("/proc/cpuinfo", encoding="utf-8") as f:
        info = f.read()
    for line in info.splitlines():
        if line.startswith("model name"):
            model = line.split(":", 1)[1].strip()
            break
    flags = [f for f in ("avx2", "fma", "avx512f") if f" {f}" in info]
    mem = sh(["grep", "MemTotal", "/proc/meminfo"]).split()[1]
    gxx = sh(["g++", "--version"]).splitlines()[0]
    commit = sh(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"]).strip()
    load = open("/proc/loadavg", encoding="utf-8").read().split()[0]
    return (f"{model}, {os.cpu_count()} logical CPUs ({', '.join(flags)}), "
            f"{int(mem) / 2**20:.0f} GiB; {gxx}; detrain {commit}; load average {load} at start; "
            f"{datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC.")


def gemm_section(build, reps):
    """One thread: the GemmPair cases (both libraries in one process, alternating call by
    call; median of the per-call ratios). Two threads: each library in its own process,
    alternating over rounds (OpenBLAS's worker threads spin for a while after each call, and
    OpenMP's after each region, so in one process they slow each other), median of the rounds'
    ratios."""
    exe = os.path.join(build, "bench", "dt_bench_vendor")
    if not os.path.exists(exe):
        return "## GEMM vs OpenBLAS\n\nSkipped: dt_bench_vendor not built (scripts/setup.sh --peers).\n"
    env = dict(os.environ)
    env.pop("OPENBLAS_CORETYPE", None)
    env.pop("OPENBLAS_L2_SIZE", None)
    env["OPENBLAS_NUM_THREADS"] = "1"
    data = bench_json(exe, "GemmPair/", [], env)
    core = next((b.get("label", "") for b in data["benchmarks"]), "").replace("openblas ", "")
    rows, dims = [], {}
    for b in data["benchmarks"]:
        name = b["name"].split("/")[1]
        rows.append((name, b["detrain_GFLOP/s"], b["openblas_GFLOP/s"], f"{b['ratio']:.2f}"))
        dims[name] = problem_dims(b)
    rounds = 4 * reps + 3  # the 2-thread ratios spread over 0.6-1.7 per round here
    two = {"detrain": [], "openblas": []}  # per round: {shape: GFLOP/s}
    for r in range(rounds):
        for lib in (("detrain", "openblas") if r % 2 == 0 else ("openblas", "detrain")):
            got = bench_json(exe, f"Gemm2T/.*/{lib}", ["--benchmark_min_time=0.3"], env)
            two[lib].append({b["name"].split("/")[1]: b.get("FLOP/s", 0.0) / 1e9
                             for b in got["benchmarks"]})
    rows2 = []
    for name, _, _, _ in rows:
        d = [run[name] for run in two["detrain"] if name in run]
        o = [run[name] for run in two["openblas"] if name in run]
        ratios = sorted(x / y for x, y in zip(d, o) if y > 0)
        if ratios:
            rows2.append((name, median(d), median(o),
                          f"{median(ratios):.2f} [{ratios[0]:.2f}–{ratios[-1]:.2f}]"))
    header = ["| problem (M×N×K) | detrain GFLOP/s | OpenBLAS GFLOP/s | detrain / OpenBLAS |",
              "|---|---|---|---|"]
    lines = ["## GEMM vs OpenBLAS", "",
             "OpenBLAS with OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE unset (core: " + core + ").", "",
             "One thread: both libraries in one process, alternating call by call; medians of "
             "GFLOP/s and of the per-call ratio detrain / OpenBLAS (bench GemmPair/*).", ""]
    lines += header + [f"| {n} {dims[n]} | {d:.1f} | {o:.1f} | {r} |" for n, d, o, r in rows]
    lines += ["", "Two threads (bench Gemm2T/*): each library runs in a process of its own, "
              f"{rounds} alternating rounds; medians of GFLOP/s and of the rounds' ratios "
              "[range]. Separate processes are needed because OpenBLAS's worker threads spin for "
              "a while after each call, and OpenMP's after each region, so in one process they "
              "slow each other. In detrain, products of 1.5M multiply-adds or more with 64 "
              "columns or more per thread run as one column slice per thread; other products "
              "under 2^22 run on one thread.", ""]
    lines += header + [f"| {n} {dims[n]} | {d:.1f} | {o:.1f} | {r} |" for n, d, o, r in rows2]
    lines += ["", "Problems: `Square*`, then the conv layers' GEMMs. Small and Medium name a "
              "SmallCNN or MediumCNN layer, ResNetS a ResNet-18 stage. The shapes:", "",
              "| problem | M × N × K, or what it holds |", "|---|---|"]
    lines += [f"| `{name}` | {shape} |" for name, shape in GEMM_PROBLEMS]
    lines += ["", "The weights are packed once per step by the conv kernels; here A is packed "
              "per call, as OpenBLAS does."]
    return "\n".join(lines) + "\n"


def problem_dims(bench):
    """'(M×N×K, Aᵀ)' from a GemmPair case's counters ('' when it has none)."""
    if "m" not in bench:
        return ""
    dims = "×".join(str(int(bench[key])) for key in ("m", "n", "k"))
    trans = [t for key, t in (("trans_a", "Aᵀ"), ("trans_b", "Bᵀ")) if bench.get(key)]
    return "(" + ", ".join([dims] + trans) + ")"


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def conv_section(build, min_time):
    data = bench_json(os.path.join(build, "bench", "dt_bench"), "^ConvK",
                      [f"--benchmark_min_time={min_time}"])
    rows = {}
    for b in data["benchmarks"]:
        parts = b["name"].split("/")
        k, pass_ = parts[0].replace("ConvK", ""), parts[1]
        if pass_ == "forward":
            rows.setdefault((k, "forward"), {})["-"] = (b["FLOP/s"], None)
        else:
            rows.setdefault((k, pass_), {})[parts[2]] = (b["FLOP/s"], b["vs_atomic"])
    modes = ["atomic", "tree", "kahan", "exact", "permuted"]
    lines = ["## Convolution per kernel size and accumulation mode", "",
             "MediumCNN conv2 on CIFAR (batch 64, 16×16×16 → 32, 'same' padding), 2 threads. "
             "Cells: GFLOP/s, and the mode's time / atomic's (adjacent calls).", "",
             "| k | pass | " + " | ".join(modes) + " |", "|---|---|" + "---|" * len(modes)]
    for (k, pass_), cells in sorted(rows.items()):
        if pass_ == "forward":
            lines.append(f"| {k} | forward | {cells['-'][0] / 1e9:.1f} (one recipe) |" +
                         " |" * (len(modes) - 1))
            continue
        row = f"| {k} | {pass_} |"
        for m in modes:
            f, r = cells.get(m, (0, 0))
            row += f" {f / 1e9:.1f} ({r:.2f}×) |"
        lines.append(row)
    return "\n".join(lines) + "\n"


def reduction_section(build, min_time):
    data = bench_json(os.path.join(build, "bench", "dt_bench"),
                      "^BM_(Sequential|Tree|Kahan|Exact|PermutedElements)/",
                      [f"--benchmark_min_time={min_time}"])
    lines = ["## Reductions per mode", "",
             "One sum over 1M floats, one thread; Arg 0: uniform in [-1, 1), Arg 1: magnitudes "
             "over 2^±40. GB/s of input read; vs_seq = time / the plain sequential sum's.", "",
             "| mode | data | GB/s | vs sequential |", "|---|---|---|---|"]
    for b in data["benchmarks"]:
        name, arg = b["name"].split("/")[0].replace("BM_", ""), b["name"].split("/")[1]
        lines.append(f"| {name} | {arg} | {b.get('bytes_per_second', 0) / 1e9:.2f} | "
                     f"{b.get('vs_seq', float('nan')):.2f} |")
    return "\n".join(lines) + "\n"


def thread_scaling(build):
    """1 vs 2 threads, deterministic preset (bench BM_ThreadScaling): blocks of 1-thread and
    2-thread steps alternate in one process; the median of the blocks' ratios."""
    data = bench_json(os.path.join(build, "bench", "dt_bench"), "^BM_ThreadScaling/")
    lines = []
    for b in data["benchmarks"]:
        model = b["name"].split("/")[1]
        lines.append(f"- {model}, deterministic: 2 threads {b['speedup']:.2f}× faster than 1 "
                     f"thread (median of {b['iterations']} alternating blocks of 5 steps each, "
                     f"after one untimed step; blocks' range {b['speedup_lo']:.2f}–"
                     f"{b['speedup_hi']:.2f}×; median steps {b['t1_med_ms']:.1f} ms / "
                     f"{b['t2_med_ms']:.1f} ms).")
    return lines


def step_section(build, quick):
    flt = "^BM_TrainStep/(smallcnn|mediumcnn_k1)/" if quick else "^BM_TrainStep/"
    data = bench_json(os.path.join(build, "bench", "dt_bench"), flt)
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(data, f)
        path = f.name
    table = sh([sys.executable, os.path.join(ROOT, "scripts", "train_step_table.py"), path])
    os.unlink(path)
    scaling = thread_scaling(build)
    return ("## One training step per model × preset × threads\n\n"
            "bench/train_step_bench.cpp; each cell the preset's step / `fast`'s (adjacent steps; "
            "median ratio in parentheses).\n\n" + table + "\n" + "\n".join(scaling) + "\n")


def peers_section(build, reps, quick):
    # Debian's python3-torch lives with the system interpreter, not necessarily this one.
    peer = "/usr/bin/python3"
    if subprocess.run([peer, "-c", "import torch"], capture_output=True).returncode != 0:
        return "## detrain vs its peers\n\nSkipped: python3-torch missing (scripts/setup.sh --peers).\n"
    models = "smallcnn,mediumcnn_k3" if quick else \
        "smallcnn,mediumcnn_k1,mediumcnn_k3,mediumcnn_k5,mediumcnn_k7,resnet18"
    out = sh([sys.executable, os.path.join(ROOT, "bench", "peers", "compare.py"), "--bench",
              os.path.join(build, "bench", "dt_bench"), "--reps", str(reps), "--models", models,
              "--python", peer])
    return "## detrain vs its peers\n\n" + out


def roofline_section(build, quick):
    """Each kernel of a step against the FMA and memory ceilings (bench/roofline, dt_roofline)."""
    models = "smallcnn,mediumcnn_k3" if quick else "smallcnn,mediumcnn_k3,resnet18"
    out = sh([os.path.join(build, "bench", "dt_roofline"), "--models", models,
              "--presets", "deterministic,exact", "--steps", "3" if quick else "5"])
    return "## Where a step's time goes\n\n" + out.replace("\n### ", "\n### Roofline: ")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--build", default=os.path.join(ROOT, "build"))
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "results", "performance.md"))
    ap.add_argument("--quick", action="store_true", help="fewer models and repetitions")
    a = ap.parse_args()
    reps = 2 if a.quick else 3
    min_time = "0.1" if a.quick else "0.3"
    parts = ["# Performance\n", INTRO, "Written by `scripts/perf_report.py`" +
             (" --quick" if a.quick else "") + ". Machine: " + machine() + "\n"]
    for title, fn in (("gemm", lambda: gemm_section(a.build, reps)),
                      ("conv", lambda: conv_section(a.build, min_time)),
                      ("reductions", lambda: reduction_section(a.build, min_time)),
                      ("steps", lambda: step_section(a.build, a.quick)),
                      ("peers", lambda: peers_section(a.build, reps, a.quick)),
                      ("roofline", lambda: roofline_section(a.build, a.quick)),
                      ("resnet layers", lambda: "" if a.quick else perf_resnet_layers.section(
                          a.build))):
        print(f"perf_report: {title} ...", file=sys.stderr)
        parts.append(fn())
    with open(a.out, "w", encoding="utf-8") as f:
        f.write("\n".join(parts))
    print(f"perf_report: wrote {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
