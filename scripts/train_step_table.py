#!/usr/bin/env python3
"""Markdown table of BM_TrainStep results (bench/train_step_bench.cpp): one row per model and
thread count, one column per --impl preset, each cell the preset's step time as a ratio to the
`fast` preset's (minimum of adjacent steps; median ratio in parentheses) and the absolute time.

usage: scripts/train_step_table.py BENCH.json   (from dt_bench --benchmark_out=BENCH.json)
"""
import json
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as f:
        data = json.load(f)
    rows, presets = {}, []
    for b in data["benchmarks"]:
        name = b["name"]
        if not name.startswith("BM_TrainStep/") or b.get("run_type") == "aggregate":
            continue
        parts = name.split("/")
        model, preset, threads = parts[1], parts[2], parts[3].split(":")[1]
        if preset not in presets:
            presets.append(preset)
        rows.setdefault((model, int(threads)), {})[preset] = b
    if not rows:
        print("no BM_TrainStep results in " + sys.argv[1], file=sys.stderr)
        return 1
    ctx = data.get("context", {})
    print(f"Machine: {ctx.get('num_cpus', '?')} CPUs at {ctx.get('mhz_per_cpu', '?')} MHz, "
          f"run {ctx.get('date', '?')}.\n")
    print("| model | threads | fast step (ms) | " + " | ".join(p for p in presets if p != "fast") + " |")
    print("|---|---|---|" + "---|" * (len(presets) - 1))
    for (model, threads), cells in sorted(rows.items()):
        fast = cells.get("fast")
        line = f"| {model} | {threads} | {fast['min_ms']:.1f} |" if fast else f"| {model} | {threads} | — |"
        for p in presets:
            if p == "fast":
                continue
            b = cells.get(p)
            line += f" {b['vs_fast']:.2f}× ({b['med_vs_fast']:.2f}×) |" if b else " — |"
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
