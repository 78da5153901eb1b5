# SPDX-License-Identifier: MIT
"""What the peer scripts share: the command line every step-timing peer takes
(pytorch_train.py, jax_train.py) and detrain's models as torch.nn.Modules (pytorch_train.py,
pytorch_gpt.py). Imported from the scripts' own folder, by whichever interpreter runs them
(Debian's python3 or .venv-peers)."""
import argparse
import importlib.util
import os


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


def torch_models():
    """python/detrain/torch_models.py, loaded by path: it needs PyTorch only, not detrain."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                        "python", "detrain", "torch_models.py")
    spec = importlib.util.spec_from_file_location("detrain_torch_models", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
