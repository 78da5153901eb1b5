#!/usr/bin/env python3
"""Summarises detrain run directories (each with a result.json) as a Markdown table.

Usage: summarize_runs.py RUNS_DIR   (prints Markdown to stdout; standard library only)
"""
import json
import pathlib
import platform
import sys


def main() -> int:
    if len(sys.argv) != 2:
        print(__doc__, file=sys.stderr)
        return 2
    root = pathlib.Path(sys.argv[1])
    runs = sorted(p for p in root.iterdir() if (p / "result.json").is_file())
    if not runs:
        print(f"summarize_runs: no */result.json under {root}", file=sys.stderr)
        return 1
    cpu = "unknown CPU"
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    print("# Foundation runs\n")
    print(f"Machine: {cpu}, {platform.system()} {platform.machine()}. "
          "Produced by `scripts/foundation_runs.sh`.\n")
    print("| run | model | train / test images | epochs | train loss per epoch | "
          "test accuracy | images/s | threads | weights_sha256 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for p in runs:
        r = json.loads((p / "result.json").read_text(encoding="utf-8"))
        cfg = r.get("config", {})
        model = cfg.get("model", "?")
        if model == "mediumcnn":
            model += f" k={cfg.get('kernel-size')}"
        ds = r.get("dataset", {})
        losses = " → ".join(f"{h['train_loss']:.3f}" for h in r.get("history", []))
        print(f"| {p.name} | {model} | {ds.get('train_size')} / {ds.get('test_size')} | "
              f"{r.get('epochs')} | {losses} | {100 * r['test_accuracy']:.2f}% | "
              f"{r.get('images_per_second', 0):.0f} | {r.get('threads')} | "
              f"`{r['weights_sha256'][:16]}…` |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
