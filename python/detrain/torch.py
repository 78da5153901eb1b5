# SPDX-License-Identifier: MIT
"""detrain's models as torch.nn.Modules, with detrain's parameter names (needs PyTorch).

    import detrain, detrain.torch
    run = detrain.train(model="smallcnn", epochs=1, out="runs/x")
    net = detrain.torch.from_run(run)        # the trained model, in eval mode
    detrain.torch.save_weights(net, "w.safetensors")
    detrain.train(model="smallcnn", init_from="w.safetensors", out="runs/y")

Each module mirrors models/*.cpp layer for layer: the same names (``conv1.weight``,
``layer1.0.shortcut.1.running_var``, ``h.0.attn.qkv.weight``, ...), shapes and order, so a
state dict moves either way. The sums are PyTorch's, so outputs agree to float rounding, not bit
for bit. PyTorch's ``num_batches_tracked`` buffers are not detrain's (its momentum is fixed): they
are left out of saved files and ignored when loading.
"""
from __future__ import annotations

import json
import os
import struct
from typing import Any

import numpy as np
import torch
from torch import nn

from . import Run, load_weights
from .torch_models import GPT, MediumCNN, ResNet18, SmallCNN

__all__ = ["build", "from_run", "load_into", "save_weights", "state_dict_of", "GPT", "MediumCNN",
           "ResNet18", "SmallCNN"]


_GEOMETRY = {"mnist": (1, 28, 10), "fashion-mnist": (1, 28, 10), "cifar10": (3, 32, 10),
             "cifar100": (3, 32, 100)}


def build(model: str = "smallcnn", dataset: str = "fashion-mnist", kernel_size: int = 3,
          layers: int = 4, heads: int = 4, width: int = 128, context: int = 128) -> nn.Module:
    """The torch module of a detrain model (the arguments are train's flags of that name)."""
    if model == "gpt":
        return GPT(layers, heads, width, context)
    if dataset not in _GEOMETRY:
        raise ValueError(f"build: dataset {dataset!r} (expected one of {', '.join(_GEOMETRY)})")
    ch, size, classes = _GEOMETRY[dataset]
    if model in ("smallcnn", "smallcnn-bn"):
        return SmallCNN(ch, size, classes, model == "smallcnn-bn")
    if model == "mediumcnn":
        return MediumCNN(ch, size, classes, kernel_size)
    if model == "resnet18":
        return ResNet18(ch, classes)
    raise ValueError(f"build: model {model!r} (expected smallcnn, smallcnn-bn, mediumcnn, "
                     "resnet18 or gpt)")


def load_into(module: nn.Module, path: str | os.PathLike[str]) -> nn.Module:
    """Loads a detrain weights file into the module: every name and shape must match."""
    weights = load_weights(path)
    mine = {k for k in module.state_dict() if not k.endswith("num_batches_tracked")}
    missing, extra = sorted(mine - set(weights)), sorted(set(weights) - mine)
    if missing or extra:
        raise ValueError(f"{os.fspath(path)}: does not fit {type(module).__name__}: missing "
                         f"{missing[:5]}, unexpected {extra[:5]}")
    state = {k: torch.from_numpy(np.array(v)) for k, v in weights.items()}
    module.load_state_dict(state, strict=False)
    return module


def from_run(run: Run | str | os.PathLike[str]) -> nn.Module:
    """The trained model of a finished run (its config says which), in eval mode."""
    run = run if isinstance(run, Run) else Run(run)
    c = run.config
    net = build(c["model"], c["dataset"], c.get("kernel-size", 3), c.get("layers", 4),
                c.get("heads", 4), c.get("width", 128), c.get("context", 128))
    return load_into(net, os.path.join(run.path, "weights.safetensors")).eval()


def state_dict_of(module: nn.Module) -> dict[str, np.ndarray]:
    """The module's parameters and buffers as float32 NumPy arrays, in detrain's order and
    without num_batches_tracked."""
    return {k: v.detach().to(torch.float32).cpu().numpy()
            for k, v in module.state_dict().items() if not k.endswith("num_batches_tracked")}


def save_weights(module: nn.Module, path: str | os.PathLike[str]) -> None:
    """Writes the module's weights as a safetensors file for ``--init-from`` / ``init_from=``."""
    tensors = state_dict_of(module)
    header: dict[str, Any] = {}
    offset = 0
    for name, a in tensors.items():
        header[name] = {"dtype": "F32", "shape": list(a.shape),
                        "data_offsets": [offset, offset + a.nbytes]}
        offset += a.nbytes
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-(8 + len(text)) % 8)
    path = os.fspath(path)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for a in tensors.values():
            f.write(np.ascontiguousarray(a, dtype="<f4").tobytes())
    os.replace(tmp, path)
