# SPDX-License-Identifier: MIT
"""detrain.ops: the engine's ops on NumPy arrays, per mode, against float64 NumPy and against
what each mode promises (exact: one rounding, independent of sample order; permuted: replays)."""
import math

import numpy as np
import pytest

from detrain import ops

MODES = ["atomic", "tree", "kahan", "exact", "permuted:3"]


def data(n=96, i=40, o=9, seed=0):
    rng = np.random.default_rng(seed)
    f = lambda *s: rng.standard_normal(s).astype(np.float32)  # noqa: E731
    return f(n, i), f(o, i), f(n, o)


@pytest.mark.parametrize("mode", MODES)
def test_linear_backward_against_float64(mode):
    x, w, dy = data()
    dx, dw, db = ops.linear_backward(x, w, dy, mode=mode)
    x64, w64, dy64 = (a.astype(np.float64) for a in (x, w, dy))
    np.testing.assert_allclose(dx, dy64 @ w64, rtol=0, atol=1e-5)
    np.testing.assert_allclose(dw, dy64.T @ x64, rtol=0, atol=2e-5)
    np.testing.assert_allclose(db, dy64.sum(0), rtol=0, atol=2e-5)
    assert dx.dtype == dw.dtype == db.dtype == np.float32


def test_exact_is_the_products_sum_rounded_once_in_any_sample_order():
    x, w, dy = data()
    _, dw, db = ops.linear_backward(x, w, dy, mode="exact")
    for o in range(dw.shape[0]):
        assert np.float32(math.fsum(dy[:, o].astype(np.float64))) == db[o]
        for i in range(dw.shape[1]):
            products = (dy[:, o] * x[:, i]).astype(np.float64)  # each rounded to float32 first
            assert np.float32(math.fsum(products)) == dw[o, i]
    order = np.random.default_rng(1).permutation(x.shape[0])
    _, dw2, db2 = ops.linear_backward(x[order], w, dy[order], mode="exact")
    assert np.array_equal(dw, dw2) and np.array_equal(db, db2)


def test_permuted_replays_its_seed():
    x, w, dy = data()
    a = ops.linear_backward(x, w, dy, mode="permuted:3")
    b = ops.linear_backward(x, w, dy, mode="permuted:3")
    c = ops.linear_backward(x, w, dy, mode="permuted:4")
    assert all(np.array_equal(p, q) for p, q in zip(a, b))
    assert not np.array_equal(a[1], c[1])


def test_linear_forward_and_no_bias():
    x, w, _ = data()
    b = np.arange(w.shape[0], dtype=np.float32)
    np.testing.assert_allclose(ops.linear(x, w, b), x.astype(np.float64) @ w.T + b, atol=1e-5)
    dx, dw, db = ops.linear_backward(x, w, np.ones((x.shape[0], w.shape[0]), np.float32),
                                     bias=False)
    assert db is None


@pytest.mark.parametrize("mode", MODES)
def test_softmax_cross_entropy(mode):
    rng = np.random.default_rng(2)
    z = rng.standard_normal((50, 7)).astype(np.float32)
    y = rng.integers(0, 7, 50)
    loss, g = ops.softmax_cross_entropy(z, y, mode=mode)
    z64 = z.astype(np.float64)
    p = np.exp(z64 - z64.max(1, keepdims=True))
    p /= p.sum(1, keepdims=True)
    assert loss == pytest.approx(-np.log(p[np.arange(50), y]).mean(), rel=1e-6)
    p[np.arange(50), y] -= 1
    np.testing.assert_allclose(g, p / 50, atol=1e-7)


def test_bad_arguments_are_named():
    x, w, dy = data()
    with pytest.raises(ValueError, match="mode 'fast'"):
        ops.linear_backward(x, w, dy, mode="fast")
    with pytest.raises(ValueError, match="permuted:7"):
        ops.linear_backward(x, w, dy, mode="permuted:x")
    with pytest.raises(ValueError, match="x must be float32"):
        ops.linear(x.astype(np.float64), w)
    with pytest.raises(ValueError, match="in-features"):
        ops.linear(x, w[:, :5])


def conv_reference(x, w, stride, padding):
    """conv2d in float64 by im2col: (N, Co, Ho, Wo)."""
    n, ci, h, wd = x.shape
    co, _, kh, kw = w.shape
    xp = np.pad(x.astype(np.float64), ((0, 0), (0, 0), (padding,) * 2, (padding,) * 2))
    ho, wo = (h + 2 * padding - kh) // stride + 1, (wd + 2 * padding - kw) // stride + 1
    cols = np.empty((n, ci, kh, kw, ho, wo))
    for i in range(kh):
        for j in range(kw):
            cols[:, :, i, j] = xp[:, :, i:i + stride * ho:stride, j:j + stride * wo:stride]
    return np.einsum("ncijhw,ocij->nohw", cols, w.astype(np.float64))


@pytest.mark.parametrize("mode", MODES)
def test_conv2d_and_its_backward(mode):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((6, 3, 9, 9)).astype(np.float32)
    w = rng.standard_normal((4, 3, 3, 3)).astype(np.float32)
    b = rng.standard_normal(4).astype(np.float32)
    y = ops.conv2d(x, w, b, stride=2, padding=1)
    np.testing.assert_allclose(y, conv_reference(x, w, 2, 1) + b[:, None, None], atol=2e-5)
    dy = rng.standard_normal(y.shape).astype(np.float32)
    dx, dw, db = ops.conv2d_backward(x, w, dy, stride=2, padding=1, mode=mode)
    # dw[o, c, i, j] = <dy, conv(x, e_ocij)>: the float64 adjoint, one basis filter at a time.
    dy64 = dy.astype(np.float64)
    want_dw = np.zeros(w.shape)
    for idx in np.ndindex(*w.shape):
        e = np.zeros(w.shape)
        e[idx] = 1
        want_dw[idx] = (dy64 * conv_reference(x, e, 2, 1)).sum()
    np.testing.assert_allclose(dw, want_dw, atol=1e-4)
    np.testing.assert_allclose(db, dy64.sum((0, 2, 3)), atol=1e-4)
    assert dx.shape == x.shape


def test_conv2d_exact_is_independent_of_sample_order():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((10, 2, 6, 6)).astype(np.float32)
    w = rng.standard_normal((3, 2, 3, 3)).astype(np.float32)
    dy = rng.standard_normal((10, 3, 6, 6)).astype(np.float32)
    _, dw, db = ops.conv2d_backward(x, w, dy, padding=1, mode="exact")
    order = rng.permutation(10)
    _, dw2, db2 = ops.conv2d_backward(x[order], w, dy[order], padding=1, mode="exact")
    assert np.array_equal(dw, dw2) and np.array_equal(db, db2)
