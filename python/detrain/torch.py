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
import torch.nn.functional as F
from torch import nn

from . import Run, load_weights

__all__ = ["build", "from_run", "load_into", "save_weights", "state_dict_of"]

VOCAB = 256  # gpt: byte tokens


class SmallCNN(nn.Module):
    """models/small_cnn.cpp: three 3x3 convolutions (16, 32, 32), ReLU and 2x2 max pool each,
    then fc1 (32) and fc2; batch norm after each convolution for smallcnn-bn."""

    def __init__(self, in_channels: int, size: int, classes: int, bn: bool):
        super().__init__()
        chans, c = [16, 32, 32], in_channels
        for i, co in enumerate(chans, 1):
            setattr(self, f"conv{i}", nn.Conv2d(c, co, 3, padding=1, bias=not bn))
            if bn:
                setattr(self, f"bn{i}", nn.BatchNorm2d(co))
            c = co
        self.bn = bn
        self.fc1 = nn.Linear(32 * (size // 8) ** 2, 32)
        self.fc2 = nn.Linear(32, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i in (1, 2, 3):
            x = getattr(self, f"conv{i}")(x)
            if self.bn:
                x = getattr(self, f"bn{i}")(x)
            x = F.max_pool2d(F.relu(x), 2)
        return self.fc2(F.relu(self.fc1(torch.flatten(x, 1))))


class MediumCNN(nn.Module):
    """models/medium_cnn.cpp: six conv-BN-ReLU stages (16 .. 512 channels, kernel k), a 2x2 max
    pool after each while the map is at least 2x2, global average pool, fc."""

    def __init__(self, in_channels: int, size: int, classes: int, k: int):
        super().__init__()
        self.pools = []
        c, h = in_channels, size
        for i, co in enumerate([16, 32, 64, 128, 256, 512], 1):
            setattr(self, f"conv{i}", nn.Conv2d(c, co, k, padding=k // 2, bias=False))
            setattr(self, f"bn{i}", nn.BatchNorm2d(co))
            self.pools.append(h >= 2)
            h = h // 2 if h >= 2 else h
            c = co
        self.fc = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for i, pool in enumerate(self.pools, 1):
            x = F.relu(getattr(self, f"bn{i}")(getattr(self, f"conv{i}")(x)))
            if pool:
                x = F.max_pool2d(x, 2)
        return self.fc(x.mean(dim=(2, 3)))


class BasicBlock(nn.Module):
    def __init__(self, cin: int, cout: int, stride: int):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.shortcut = nn.Sequential()
        if stride != 1 or cin != cout:
            self.shortcut = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False),
                                          nn.BatchNorm2d(cout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        return F.relu(self.bn2(self.conv2(out)) + self.shortcut(x))


class ResNet18(nn.Module):
    """models/resnet.cpp: the CIFAR ResNet-18 (layer1 .. layer4, two BasicBlocks each)."""

    def __init__(self, in_channels: int, classes: int):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, 64, 3, 1, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        c = 64
        for i, (co, stride) in enumerate([(64, 1), (128, 2), (256, 2), (512, 2)], 1):
            setattr(self, f"layer{i}", nn.Sequential(BasicBlock(c, co, stride),
                                                     BasicBlock(co, co, 1)))
            c = co
        self.linear = nn.Linear(512, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        out = F.relu(self.bn1(self.conv1(x)))
        for i in (1, 2, 3, 4):
            out = getattr(self, f"layer{i}")(out)
        return self.linear(out.mean(dim=(2, 3)))


class _Attention(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(width, 3 * width)
        self.proj = nn.Linear(width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, c = x.shape
        q, k, v = self.qkv(x).split(c, dim=2)
        q, k, v = (z.view(b, t, self.heads, c // self.heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return self.proj(y.transpose(1, 2).reshape(b, t, c))


class _Mlp(nn.Module):
    def __init__(self, width: int):
        super().__init__()
        self.fc = nn.Linear(width, 4 * width)
        self.proj = nn.Linear(4 * width, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.proj(F.gelu(self.fc(x), approximate="tanh"))


class _Block(nn.Module):
    def __init__(self, width: int, heads: int):
        super().__init__()
        self.ln_1 = nn.LayerNorm(width, eps=1e-5)
        self.attn = _Attention(width, heads)
        self.ln_2 = nn.LayerNorm(width, eps=1e-5)
        self.mlp = _Mlp(width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """models/gpt.cpp: GPT-2's pre-LN blocks, learned positions, the tied head; tokens (B, T)
    int64 -> logits (B*T, 256)."""

    def __init__(self, layers: int = 4, heads: int = 4, width: int = 128, context: int = 128):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, width)
        self.wpe = nn.Embedding(context, width)
        self.h = nn.ModuleList(_Block(width, heads) for _ in range(layers))
        self.ln_f = nn.LayerNorm(width, eps=1e-5)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        t = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(t, device=tokens.device))
        for block in self.h:
            x = block(x)
        return (self.ln_f(x) @ self.wte.weight.t()).reshape(-1, VOCAB)


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
