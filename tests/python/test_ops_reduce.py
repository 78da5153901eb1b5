# SPDX-License-Identifier: MIT
"""detrain.ops.sum and the batch-norm ops: each mode's documented ORDER replayed in NumPy float32
where it is simple (tree, exact), float64 references for every mode, and bit equality with the
engine's own results for the same inputs."""
import math
from fractions import Fraction

import numpy as np
import pytest

from detrain import ops

MODES = ["atomic", "tree", "kahan", "exact", "permuted:3"]
DETERMINISTIC = MODES[1:]


def rounded_f32(exact: Fraction) -> np.float32:
    """The float32 nearest to `exact`, ties to even: one rounding, not two through float64."""
    f = np.float32(float(exact))
    near = [np.nextafter(f, np.float32(-np.inf)), f, np.nextafter(f, np.float32(np.inf))]
    return min(near, key=lambda c: (abs(Fraction(float(c)) - exact), int(c.view(np.int32)) & 1))


def exact_sum_f32(values) -> np.float32:
    return rounded_f32(sum((Fraction(float(v)) for v in np.ravel(values)), Fraction(0)))


def tree_f32(rows):
    """kernels/common/reduce_tree.h's left-complete tree of float32 rows, in NumPy float32."""
    n = len(rows)
    if n == 1:
        return rows[0]
    half = 1 << ((n - 1).bit_length() - 1)  # the largest power of two below n
    return tree_f32(rows[:half]) + tree_f32(rows[half:])


def spread(shape, seed=0):
    """Values over many magnitudes, so that the order of a sum shows in its bits."""
    rng = np.random.default_rng(seed)
    return (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 4, shape)).astype(np.float32)


def test_sum_tree_is_the_documented_tree_of_the_rows():
    x = spread((37, 5, 3))
    leaves = [np.float32(0) + row for row in x.reshape(37, -1)]  # +0 first, as the kernel does
    want = tree_f32(leaves).reshape(5, 3)
    assert np.array_equal(ops.sum(x, axis=0, mode="tree"), want)
    # Another axis: the rows are x[:, :, k] moved to the front, in index order.
    y = np.ascontiguousarray(np.moveaxis(x, 2, 0))
    assert np.array_equal(ops.sum(y, axis=0, mode="tree"), ops.sum(x, axis=2, mode="tree"))


def test_sum_exact_is_rounded_once_and_independent_of_order():
    x = spread((41, 4), seed=1)
    got = ops.sum(x, axis=0, mode="exact")
    assert all(got[c] == exact_sum_f32(x[:, c]) for c in range(4))
    shuffled = x[np.random.default_rng(2).permutation(41)]
    assert np.array_equal(ops.sum(shuffled, axis=0, mode="exact"), got)
    cancel = np.array([1e8, 1.0, -1e8, 1.0], np.float32)
    assert ops.sum(cancel, mode="exact") == 2.0 and ops.sum(cancel, mode="tree") == 0.0


def rounding_depth(mode, n):
    """Roundings on the longest path of an n-row sum in `mode` (kernels/bias_add.h): each costs
    at most 2^-24 of the sum of |rows|. Atomic: a group of 16 in order, then n / 16 partials in
    any order."""
    return {"tree": math.ceil(math.log2(n)), "kahan": 2, "exact": 1, "permuted:3": n - 1,
            "atomic": 15 + math.ceil(n / 16)}[mode]


@pytest.mark.parametrize("mode", MODES)
def test_sum_against_float64(mode):
    x = np.random.default_rng(3).standard_normal((6, 50, 7)).astype(np.float32)
    x64 = x.astype(np.float64)
    for axis in (None, 0, 1, -1, (0, 2)):
        n = x.size // np.asarray(x64.sum(axis)).size
        bound = (rounding_depth(mode, n) + 1) * 2.0**-24 * np.abs(x64).sum(axis)
        assert np.all(np.abs(ops.sum(x, axis, mode=mode) - x64.sum(axis)) <= bound), axis
    assert ops.sum(np.zeros((0, 3), np.float32), 0).shape == (3,)


@pytest.mark.parametrize("mode", DETERMINISTIC)
def test_sum_is_the_engines_bias_gradient(mode):
    rng = np.random.default_rng(4)
    x, w = rng.standard_normal((70, 6)).astype(np.float32), np.ones((5, 6), np.float32)
    dy = spread((70, 5), seed=5)
    _, _, db = ops.linear_backward(x, w, dy, mode=mode)
    assert np.array_equal(ops.sum(dy, axis=0, mode=mode), db)


def test_sum_permuted_replays_its_seed():
    x = spread((64, 8), seed=6)
    a, b = ops.sum(x, 0, mode="permuted:3"), ops.sum(x, 0, mode="permuted:3")
    assert np.array_equal(a, b)
    assert not np.array_equal(a, ops.sum(x, 0, mode="permuted:4"))


def bn_data(seed=7):
    rng = np.random.default_rng(seed)
    x = (rng.standard_normal((9, 3, 5, 4)) * 3 + 1).astype(np.float32)
    gamma = rng.standard_normal(3).astype(np.float32)
    beta = rng.standard_normal(3).astype(np.float32)
    return x, gamma, beta, rng.standard_normal(x.shape).astype(np.float32)


@pytest.mark.parametrize("mode", MODES)
def test_batchnorm_stats_against_float64(mode):
    x = bn_data()[0]
    mean, var, invstd = ops.batchnorm_stats(x, eps=1e-3, mode=mode)
    x64 = x.astype(np.float64)
    np.testing.assert_allclose(mean, x64.mean((0, 2, 3)), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(var, x64.var((0, 2, 3)), rtol=1e-5)
    np.testing.assert_allclose(invstd, 1 / np.sqrt(x64.var((0, 2, 3)) + 1e-3), rtol=1e-5)


def test_batchnorm_stats_exact_follows_the_recipe():
    x = bn_data()[0]
    mean, var, invstd = ops.batchnorm_stats(x, eps=1e-3, mode="exact")
    count = np.float32(x.size // 3)
    for c in range(3):
        assert mean[c] == exact_sum_f32(x[:, c]) / count
        deviation = x[:, c] - mean[c]  # float32: each term rounded, then summed exactly
        assert var[c] == exact_sum_f32(deviation * deviation) / count
        assert invstd[c] == np.float32(1) / np.sqrt(var[c] + np.float32(1e-3))
    shuffled = x[np.random.default_rng(8).permutation(9)]
    assert all(np.array_equal(a, b) for a, b in
               zip(ops.batchnorm_stats(shuffled, eps=1e-3, mode="exact"), (mean, var, invstd)))


@pytest.mark.parametrize("mode", DETERMINISTIC)
def test_batchnorm_uses_the_same_statistics(mode):
    x, gamma, beta, _ = bn_data()
    mean, _, invstd = ops.batchnorm_stats(x, mode=mode)
    at = (None, slice(None), None, None)
    want = ((x - mean[at]) * invstd[at]) * gamma[at] + beta[at]  # the kernel's ORDER, float32
    assert np.array_equal(ops.batchnorm(x, gamma, beta, mode=mode), want)


@pytest.mark.parametrize("mode", MODES)
def test_batchnorm_backward_against_float64(mode):
    x, gamma, _, dy = bn_data()
    dx, dgamma, dbeta = ops.batchnorm_backward(x, gamma, dy, mode=mode)
    x64, dy64, g64 = x.astype(np.float64), dy.astype(np.float64), gamma.astype(np.float64)
    at, axes = (None, slice(None), None, None), (0, 2, 3)
    xhat = (x64 - x64.mean(axes)[at]) / np.sqrt(x64.var(axes)[at] + 1e-5)
    want_dbeta, want_dgamma = dy64.sum(axes), (dy64 * xhat).sum(axes)
    n = x.size // 3
    want_dx = (g64 / np.sqrt(x64.var(axes) + 1e-5))[at] / n * (
        n * dy64 - want_dbeta[at] - xhat * want_dgamma[at])
    np.testing.assert_allclose(dbeta, want_dbeta, atol=1e-4)
    np.testing.assert_allclose(dgamma, want_dgamma, atol=1e-4)
    np.testing.assert_allclose(dx, want_dx, atol=1e-4)


def test_batchnorm_backward_exact_is_independent_of_sample_order():
    x, gamma, _, dy = bn_data()
    _, dgamma, dbeta = ops.batchnorm_backward(x, gamma, dy, mode="exact")
    order = np.random.default_rng(9).permutation(9)
    _, dgamma2, dbeta2 = ops.batchnorm_backward(x[order], gamma, dy[order], mode="exact")
    assert np.array_equal(dgamma, dgamma2) and np.array_equal(dbeta, dbeta2)


def test_matmul_against_float64():
    rng = np.random.default_rng(10)
    a, b = rng.standard_normal((7, 33)).astype(np.float32), rng.standard_normal((33, 4))
    got = ops.matmul(a, b.astype(np.float32))
    np.testing.assert_allclose(got, a.astype(np.float64) @ b.astype(np.float32), atol=1e-5)


def test_bad_arguments_are_named():
    x, gamma, beta, dy = bn_data()
    with pytest.raises(ValueError, match="axis 3 is out of range"):
        ops.sum(np.ones((2, 2, 2), np.float32), axis=3)
    with pytest.raises(ValueError, match="more than one value per channel"):
        ops.batchnorm_stats(np.ones((1, 3), np.float32))
    with pytest.raises(ValueError, match="gamma has 2 entries"):
        ops.batchnorm(x, gamma[:2], beta)
    with pytest.raises(ValueError, match="eps must be"):
        ops.batchnorm_stats(x, eps=-1.0)
    with pytest.raises(ValueError, match="mode 'fast'"):
        ops.sum(x, mode="fast")
    with pytest.raises(ValueError, match="b must be 2-D"):
        ops.matmul(x[0, 0], gamma)
