# SPDX-License-Identifier: MIT
"""The engine's ops on NumPy arrays, each under one accumulation mode.

    from detrain import ops
    dx, dw, db = ops.linear_backward(x, w, dy, mode="exact")

``mode`` is ``atomic``, ``tree``, ``kahan``, ``exact`` or ``permuted:<seed>`` (docs/noise.md),
applied at every reduction site the op has. Each call runs the engine's op, its backward and
its kernels in this process, so the bits are those of the same op inside a run under that mode
(for ``permuted``, a run's first call of each site). Inputs are float32 (labels int64) and are
copied; outputs are new float32 arrays.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from . import _detrain

__all__ = ["linear", "linear_backward", "conv2d", "conv2d_backward", "softmax_cross_entropy"]

_ops: Any = getattr(_detrain, "ops")


def _f32(name: str, a: Any) -> Any:
    a = np.asarray(a)
    if a.dtype != np.float32:
        raise ValueError(f"{name} must be float32, got {a.dtype} (hint: a.astype(np.float32))")
    return np.ascontiguousarray(a)


def linear(x: Any, w: Any, b: Any = None) -> Any:
    """y = x w^T + b for x (N, I), w (O, I), b (O) or None: one fma chain per output."""
    return _ops.linear(_f32("x", x), _f32("w", w), None if b is None else _f32("b", b))


def linear_backward(x: Any, w: Any, dy: Any, *, bias: bool = True,
                    mode: str = "tree") -> tuple[Any, Any, Any]:
    """(dx, dw, db) of linear for dy (N, O): sites linear.dgrad, linear.wgrad and bias.grad
    under ``mode``; db is None without a bias."""
    dx, dw, db = _ops.linear_backward(_f32("x", x), _f32("w", w), _f32("dy", dy), bias, mode)
    return dx, dw, db


def conv2d(x: Any, w: Any, b: Any = None, *, stride: int = 1, padding: int = 0) -> Any:
    """PyTorch's conv2d: x (N, Ci, H, W), w (Co, Ci, Kh, Kw), b (Co) or None."""
    return _ops.conv2d(_f32("x", x), _f32("w", w), None if b is None else _f32("b", b), stride,
                       padding)


def conv2d_backward(x: Any, w: Any, dy: Any, *, stride: int = 1, padding: int = 0,
                    bias: bool = True, mode: str = "tree") -> tuple[Any, Any, Any]:
    """(dx, dw, db) of conv2d for dy (N, Co, Ho, Wo): sites conv.dgrad, conv.wgrad and
    bias.grad under ``mode``; db is None without a bias."""
    dx, dw, db = _ops.conv2d_backward(_f32("x", x), _f32("w", w), _f32("dy", dy), stride, padding,
                                      bias, mode)
    return dx, dw, db


def softmax_cross_entropy(logits: Any, labels: Any, *, mode: str = "tree") -> tuple[float, Any]:
    """(mean loss, dlogits) of logits (N, K) and int64 labels (N) in [0, K): site loss."""
    lab = np.ascontiguousarray(np.asarray(labels), dtype=np.int64)
    loss, grad = _ops.softmax_cross_entropy(_f32("logits", logits), lab, mode)
    return float(loss), grad
