#!/usr/bin/env python3
"""Training-step throughput of JAX (jit, CPU) on detrain's reference models, one peer of
bench/peers/compare.py.

The models mirror models/small_cnn.cpp, models/medium_cnn.cpp and models/resnet.cpp layer for
layer (as bench/peers/pytorch_train.py does); one step = forward in training mode (batch norm
with batch statistics and running-statistics update), mean softmax cross-entropy, gradients,
Adam (lr 4e-4), all in one jitted function with donated buffers, on a fixed synthetic batch.
Prints one JSON object.

Best settings, per JAX's performance guidance for the CPU: the whole step under jax.jit (XLA
fuses the elementwise work), NHWC activations and HWIO filters (XLA's native convolution
layout), parameters donated so that updates happen in place, and XLA's intra-op threads set to
--threads through XLA_FLAGS before JAX starts. Every setting is reported.

usage: jax_train.py --model smallcnn|smallcnn-bn|mediumcnn|resnet18 [--kernel-size K]
                    [--threads T] [--batch B] [--steps S] [--warmup W]
"""
import json
import os
import statistics
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from peer_common import step_parser  # noqa: E402


def xla_flags(threads):
    """XLA's CPU threads: Eigen's intra-op pool of `threads` threads."""
    return (f"--xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={threads} "
            + os.environ.get("XLA_FLAGS", "")).strip()


def layers(model, k):
    """The model as a list of (kind, arguments): conv (cin, cout, k, stride, bias), bn (c),
    relu, pool, flatten, gap (global average pool), fc (in, out), block (cin, cout, stride)."""
    if model in ("smallcnn", "smallcnn-bn"):
        bn, out, c = model == "smallcnn-bn", [], 1
        for co in (16, 32, 32):
            out += [("conv", (c, co, 3, 1, not bn))] + ([("bn", (co,))] if bn else [])
            out += [("relu", ()), ("pool", ())]
            c = co
        return out + [("flatten", ()), ("fc", (32 * 3 * 3, 32)), ("relu", ()), ("fc", (32, 10))]
    if model == "mediumcnn":
        out, c, h = [], 3, 32
        for co in (16, 32, 64, 128, 256, 512):
            out += [("conv", (c, co, k, 1, False)), ("bn", (co,)), ("relu", ())]
            if h >= 2:  # pool while the spatial size allows, as models/medium_cnn.cpp
                out.append(("pool", ()))
                h //= 2
            c = co
        return out + [("gap", ()), ("fc", (512, 10))]
    if model == "resnet18":
        out, c = [("conv", (3, 64, 3, 1, False)), ("bn", (64,)), ("relu", ())], 64
        for co, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
            out += [("block", (c, co, stride)), ("block", (co, co, 1))]
            c = co
        return out + [("gap", ()), ("fc", (512, 10))]
    raise SystemExit(f"unknown --model {model}")


def main():
    a = step_parser(__doc__.splitlines()[0], warmup=3).parse_args()
    os.environ["XLA_FLAGS"] = xla_flags(a.threads)
    import jax  # after XLA_FLAGS: XLA reads them once, when the backend starts
    import jax.numpy as jnp
    from jax import lax

    key = iter(jax.random.split(jax.random.PRNGKey(0), 1000))

    def conv_params(cin, cout, k, bias):
        w = jax.random.normal(next(key), (k, k, cin, cout)) * (2.0 / (k * k * cin)) ** 0.5
        return {"w": w, "b": jnp.zeros(cout)} if bias else {"w": w}

    def bn_params(c):
        return {"g": jnp.ones(c), "b": jnp.zeros(c)}, {"mean": jnp.zeros(c), "var": jnp.ones(c)}

    spec = layers(a.model, a.kernel_size)
    params, stats = [], []
    for kind, args in spec:
        p, s = {}, {}
        if kind == "conv":
            p = conv_params(args[0], args[1], args[2], args[4])
        elif kind == "bn":
            p, s = bn_params(args[0])
        elif kind == "fc":
            p = {"w": jax.random.normal(next(key), args) * (1.0 / args[0]) ** 0.5,
                 "b": jnp.zeros(args[1])}
        elif kind == "block":
            cin, cout, stride = args
            p = {"c1": conv_params(cin, cout, 3, False), "c2": conv_params(cout, cout, 3, False)}
            p["bn1"], s["bn1"] = bn_params(cout)
            p["bn2"], s["bn2"] = bn_params(cout)
            if stride != 1 or cin != cout:
                p["sc"] = conv_params(cin, cout, 1, False)
                p["bnsc"], s["bnsc"] = bn_params(cout)
        params.append(p)
        stats.append(s)

    def conv(p, x, stride, k):
        y = lax.conv_general_dilated(x, p["w"], (stride, stride), [(k // 2, k // 2)] * 2,
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return y + p["b"] if "b" in p else y

    def bn(p, s, x):
        mean, var = x.mean((0, 1, 2)), x.var((0, 1, 2))
        n = x.size // x.shape[-1]
        new = {"mean": 0.9 * s["mean"] + 0.1 * mean, "var": 0.9 * s["var"] + 0.1 * var * n / (n - 1)}
        return (x - mean) * lax.rsqrt(var + 1e-5) * p["g"] + p["b"], new

    def forward(params, stats, x):
        new_stats = []
        for (kind, args), p, s in zip(spec, params, stats):
            ns = {}
            if kind == "conv":
                x = conv(p, x, args[3], args[2])
            elif kind == "bn":
                x, ns = bn(p, s, x)
            elif kind == "relu":
                x = jax.nn.relu(x)
            elif kind == "pool":
                x = lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")
            elif kind == "flatten":
                x = x.reshape(x.shape[0], -1)
            elif kind == "gap":
                x = x.mean((1, 2))
            elif kind == "fc":
                x = x @ p["w"] + p["b"]
            elif kind == "block":
                stride = args[2]
                h, ns["bn1"] = bn(p["bn1"], s["bn1"], conv(p["c1"], x, stride, 3))
                h, ns["bn2"] = bn(p["bn2"], s["bn2"], conv(p["c2"], jax.nn.relu(h), 1, 3))
                if "sc" in p:
                    x, ns["bnsc"] = bn(p["bnsc"], s["bnsc"], conv(p["sc"], x, stride, 1))
                x = jax.nn.relu(h + x)
            new_stats.append(ns)
        return x, new_stats

    def loss_fn(params, stats, x, y):
        logits, new_stats = forward(params, stats, x)
        logp = jax.nn.log_softmax(logits)
        return -jnp.take_along_axis(logp, y[:, None], 1).mean(), new_stats

    lr, b1, b2, eps = 4e-4, 0.9, 0.999, 1e-8

    def step(params, m, v, stats, t, x, y):
        (loss, new_stats), g = jax.value_and_grad(loss_fn, has_aux=True)(params, stats, x, y)
        t = t + 1
        m = jax.tree_util.tree_map(lambda m, g: b1 * m + (1 - b1) * g, m, g)
        v = jax.tree_util.tree_map(lambda v, g: b2 * v + (1 - b2) * g * g, v, g)
        c1, c2 = 1 - b1 ** t, 1 - b2 ** t
        params = jax.tree_util.tree_map(
            lambda p, m, v: p - lr * (m / c1) / (jnp.sqrt(v / c2) + eps), params, m, v)
        return params, m, v, new_stats, t, loss

    jstep = jax.jit(step, donate_argnums=(0, 1, 2, 3))
    ch, hw = (1, 28) if a.model.startswith("smallcnn") else (3, 32)
    x = jax.random.uniform(next(key), (a.batch, hw, hw, ch), minval=-1.0, maxval=1.0)
    y = jnp.arange(a.batch) % 10
    zeros = jax.tree_util.tree_map(jnp.zeros_like, params)
    state = (params, zeros, jax.tree_util.tree_map(jnp.zeros_like, params), stats, jnp.float32(0))
    times = []
    for i in range(a.warmup + a.steps):
        t0 = time.perf_counter()
        *state, loss = jstep(*state, x, y)
        loss.block_until_ready()
        if i >= a.warmup:
            times.append(time.perf_counter() - t0)
    med = statistics.median(times)
    print(json.dumps({
        "peer": "jax", "jax_version": jax.__version__, "model": a.model,
        "kernel_size": a.kernel_size, "threads": a.threads, "batch": a.batch, "steps": a.steps,
        "step_ms_min": 1e3 * min(times), "step_ms_median": 1e3 * med,
        "images_per_second": a.batch / med, "device": "cpu", "layout": "NHWC",
        "xla_flags": os.environ["XLA_FLAGS"], "loss": float(loss)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
