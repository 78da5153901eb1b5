# SPDX-License-Identifier: MIT
"""detrain's models as torch.nn.Modules (models/*.cpp layer for layer, detrain's names): PyTorch
only, no detrain import, so that the peers of bench/peers/ load this file on their own.
detrain.torch builds, loads and saves them."""
from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

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
