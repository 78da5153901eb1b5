#!/usr/bin/env python3
"""A training run from Python against the same run from the command line: training images per
second (result.json's, training steps only), interleaved rounds, median of the per-round ratio.
The target: Python within 5% of the CLI.

usage: DETRAIN_BUILD=build build-pyenv/bin/python bench/python/run_vs_cli.py [--rounds 5]
       [--model smallcnn] [--limit-train 12000] [--epochs 1] [--threads 2]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD = os.environ.get("DETRAIN_BUILD", os.path.join(ROOT, "build"))
sys.path.insert(0, os.path.join(BUILD, "python"))

import detrain  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--model", default="smallcnn")
    ap.add_argument("--limit-train", type=int, default=12000)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    flags = dict(model=a.model, limit_train=a.limit_train, epochs=a.epochs, threads=a.threads,
                 limit_test=1000, progress="none")
    argv = [os.path.join(BUILD, "detrain"), "train"]
    for k, v in flags.items():
        argv += ["--" + k.replace("_", "-"), str(v)]
    py, cli, ratio = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(a.rounds):
            run = detrain.train(**flags, out=os.path.join(tmp, f"py{r}"))
            out = os.path.join(tmp, f"cli{r}")
            subprocess.run(argv + ["--out", out], check=True, capture_output=True)
            with open(os.path.join(out, "result.json"), encoding="utf-8") as f:
                c = json.load(f)
            assert c["weights_sha256"] == run.weights_sha256, "Python and CLI bits differ"
            py.append(run.result["images_per_second"])
            cli.append(c["images_per_second"])
            ratio.append(py[-1] / cli[-1])
            print(f"round {r + 1}: python {py[-1]:.0f} img/s, cli {cli[-1]:.0f} img/s",
                  file=sys.stderr)
    print(json.dumps({"model": a.model, "rounds": a.rounds, "python_img_s": statistics.median(py),
                      "cli_img_s": statistics.median(cli),
                      "python_vs_cli": statistics.median(ratio)}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
