# SPDX-License-Identifier: MIT
"""The command line every step-timing peer script takes (pytorch_train.py, jax_train.py): one
model of BM_TrainStep's and how to time its step. Imported from the scripts' own folder, by
whichever interpreter runs them (Debian's python3 or .venv-peers)."""
import argparse


def step_parser(description, warmup):
    """An ArgumentParser with --model, --kernel-size, --threads, --batch, --steps, --warmup."""
    ap = argparse.ArgumentParser(description=description)
    ap.add_argument("--model", required=True)
    ap.add_argument("--kernel-size", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=128)
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warmup", type=int, default=warmup)
    return ap
