#!/usr/bin/env python3
"""What a detrain.ops call adds to its kernels on small arrays: microseconds per call of the
Python call minus the kernels alone (the same kernels through the kernel table on buffers made
once, timed in C++). Interleaved rounds, median per op and mode. The target: at most 5 us.

usage: DETRAIN_BUILD=build build-pyenv/bin/python bench/python/ops_overhead.py [--rounds 7]
       [--calls 20000] [--json-out FILE]
"""
import argparse
import json
import os
import statistics
import sys
import timeit

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DETRAIN_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))

import numpy as np  # noqa: E402

from detrain import ops  # noqa: E402

TARGET_US = 5.0


def cases():
    """(name, Python call, kernel op, x, w) for each op and mode, on small float32 arrays."""
    rng = np.random.default_rng(0)
    x, w, dy = (rng.standard_normal(s).astype(np.float32) for s in ((4, 8), (3, 8), (4, 3)))
    rows = rng.standard_normal((16, 8)).astype(np.float32)
    bn = rng.standard_normal((4, 3, 2, 2)).astype(np.float32)
    out = [("linear", lambda: ops.linear(x, w), "linear", x, w, "tree")]
    for mode in ("tree", "exact"):
        out += [
            (f"linear_backward/{mode}",
             lambda m=mode: ops.linear_backward(x, w, dy, mode=m), "linear_backward", x, w, mode),
            (f"sum/{mode}", lambda m=mode: ops.sum(rows, 0, mode=m), "sum", rows, w, mode),
            (f"batchnorm_stats/{mode}", lambda m=mode: ops.batchnorm_stats(bn, mode=m),
             "batchnorm_stats", bn, w, mode),
        ]
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--calls", type=int, default=20000, help="calls per timing")
    ap.add_argument("--json-out", help="write the table as JSON to this file")
    a = ap.parse_args()
    table = {name: ([], []) for name, *_ in cases()}
    for r in range(a.rounds):
        for name, call, op, x, w, mode in cases():
            python_s = timeit.timeit(call, number=a.calls) / a.calls
            kernel_s = ops._ops._kernel_seconds(op, x, w, mode, a.calls)
            table[name][0].append(python_s * 1e6)
            table[name][1].append(kernel_s * 1e6)
        print(f"round {r + 1}/{a.rounds} done", file=sys.stderr)
    rows = []
    print(f"{'op':28} {'call us':>8} {'kernels us':>10} {'overhead us':>11}")
    for name, (call_us, kernel_us) in table.items():
        over = statistics.median(c - k for c, k in zip(call_us, kernel_us))
        rows.append(dict(op=name, call_us=statistics.median(call_us),
                         kernel_us=statistics.median(kernel_us), overhead_us=over,
                         target_met=over <= TARGET_US))
        print(f"{name:28} {rows[-1]['call_us']:8.2f} {rows[-1]['kernel_us']:10.2f} {over:11.2f}")
    worst = max(r["overhead_us"] for r in rows)
    print(f"largest overhead {worst:.2f} us (target <= {TARGET_US} us): "
          f"{'met' if worst <= TARGET_US else 'missed'}")
    if a.json_out:
        with open(a.json_out, "w") as f:
            json.dump(dict(rounds=a.rounds, calls=a.calls, threads=os.environ.get(
                "OMP_NUM_THREADS", "default"), rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
