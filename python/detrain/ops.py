# SPDX-License-Identifier: MIT
"""The engine's ops on NumPy arrays, each under one accumulation mode.

    from detrain import ops
    dx, dw, db = ops.linear_backward(x, w, dy, mode="exact")

``mode`` is ``atomic``, ``tree``, ``kahan``, ``exact`` or ``permuted:<seed>`` (docs/noise.md),
applied at every reduction site the op has. Each call runs the engine's op, its backward and
its kernels in this process, so the bits are those of the same op inside a run under that mode
(for ``permuted``, a run's first call of each site). Inputs are float32 (labels int64) and are
copied; outputs are new float32 arrays.

``sum`` reduces with the kernel of site bias.grad, one leaf per row of the reduced axes
(kernels/bias_add.h); the batch-norm ops are those of sites bn.stats and bn.backward
(kernels/batchnorm2d.h). Each header documents the ORDER of every mode.
"""
from __future__ import annotations

import math
from typing import Any

import numpy as np

from . import _detrain

__all__ = ["matmul", "linear", "linear_backward", "conv2d", "conv2d_backward",
           "softmax_cross_entropy", "sum", "batchnorm_stats", "batchnorm", "batchnorm_backward"]

_ops: Any = getattr(_detrain, "ops")


def _f32(name: str, a: Any) -> Any:
    a = np.asarray(a)
    if a.dtype != np.float32:
        raise ValueError(f"{name} must be float32, got {a.dtype} (hint: a.astype(np.float32))")
    return np.ascontiguousarray(a)


def matmul(a: Any, b: Any) -> Any:
    """a @ b for a (N, K), b (K, M): linear's kernel with w = b^T, one fma chain per output."""
    b = _f32("b", b)
    if b.ndim != 2:
        raise ValueError(f"b must be 2-D (K, M), got shape {b.shape}")
    return linear(a, np.ascontiguousarray(b.T))


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


def _axes(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    wanted = range(ndim) if axis is None else (axis,) if isinstance(axis, int) else axis
    axes = set()
    for a in wanted:
        if not -ndim <= a < ndim:
            raise ValueError(f"axis {a} is out of range for an array of {ndim} dimensions")
        axes.add(a % ndim)
    return tuple(sorted(axes))


def sum(x: Any, axis: int | tuple[int, ...] | None = None, *, mode: str = "tree") -> Any:
    """x summed over ``axis`` (an int, a tuple, or None for every axis) under ``mode``.

    The reduced axes are moved to the front and flattened into rows; every other element is a
    column. Each column's sum is the bias.grad reduction of its rows: ``tree`` a left-complete
    pairwise tree of the rows in order, ``kahan`` the same tree of Kahan sums, ``exact`` the
    exact sum rounded once (any order gives the same bits), ``permuted:<seed>`` the rows in one
    seeded order, ``atomic`` groups of 16 rows added in thread order. Returns a float32 array
    of the kept axes (a 0-d array for ``axis=None``).
    """
    x = _f32("x", x)
    axes = _axes(axis, x.ndim)
    kept = [d for d in range(x.ndim) if d not in axes]
    shape = tuple(x.shape[d] for d in kept)
    rows = math.prod(x.shape[d] for d in axes)
    if rows == 0:
        return np.zeros(shape, np.float32)
    cols = np.ascontiguousarray(np.transpose(x, axes + tuple(kept))).reshape(rows, -1)
    if cols.shape[1] == 0:
        return np.zeros(shape, np.float32)
    return _ops.sum_rows(cols, mode).reshape(shape)


def batchnorm_stats(x: Any, *, eps: float = 1e-5, mode: str = "tree") -> tuple[Any, Any, Any]:
    """(mean, var, invstd) per channel of x (N, C, ...): site bn.stats under ``mode``.

    var is the biased variance (two passes: the mean, then the squared deviations); invstd is
    1 / sqrt(var + eps). The statistics a training-mode batch norm of the engine uses.
    """
    mean, var, invstd = _ops.batchnorm_stats(_f32("x", x), eps, mode)
    return mean, var, invstd


def batchnorm(x: Any, gamma: Any, beta: Any, *, eps: float = 1e-5, mode: str = "tree") -> Any:
    """Training-mode batch norm of x (N, C, ...): ((x - mean) * invstd) * gamma + beta with the
    batch statistics of :func:`batchnorm_stats`."""
    return _ops.batchnorm(_f32("x", x), _f32("gamma", gamma), _f32("beta", beta), eps, mode)


def batchnorm_backward(x: Any, gamma: Any, dy: Any, *, eps: float = 1e-5,
                       mode: str = "tree") -> tuple[Any, Any, Any]:
    """(dx, dgamma, dbeta) of training-mode batch norm for dy shaped like x: the statistics at
    bn.stats and the backward's totals at bn.backward, both under ``mode``."""
    dx, dgamma, dbeta = _ops.batchnorm_backward(_f32("x", x), _f32("gamma", gamma),
                                                _f32("dy", dy), eps, mode)
    return dx, dgamma, dbeta
