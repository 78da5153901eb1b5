#!/usr/bin/python3
"""Training-step throughput of PyTorch on detrain's reference models: Debian's python3-torch
(1.13) or PyPI's 2.x in .venv-peers, for bench/peers/compare.py, which runs it interleaved with
detrain.

The models are python/detrain/torch_models.py's (models/small_cnn.cpp, medium_cnn.cpp and
resnet.cpp layer for layer, detrain's names); one step = forward, cross-entropy, zero_grad, backward, Adam step (lr 4e-4) on a fixed
synthetic batch, exactly what bench/train_step_bench.cpp times for detrain. Prints one JSON object.

Best settings for the peer (set by compare.py, reported in its output): torch.set_num_threads(T),
OPENBLAS_NUM_THREADS=1 (no oversubscription from BLAS), ATEN_CPU_CAPABILITY=avx512 where the CPU
has it, no autograd anomaly detection, torch.backends.mkldnn enabled (the default), and Adam's
fused kernel on the CPU where PyTorch has one (2.4 and later). --channels-last stores the model
and the batch channels-last (NHWC: oneDNN's native convolution layout); --compile runs the model
under torch.compile (Inductor, its default mode; the first warm-up step compiles).

On a GPU (--device cuda, scripts/gpu_check.sh): eager mode with cuDNN; by default its fastest
settings (cudnn.benchmark autotuning, no determinism, the fused Adam: one kernel for every
parameter, elementwise and so deterministic too); --deterministic switches on
torch.use_deterministic_algorithms (cudnn.deterministic, no autotuning, CUBLAS_WORKSPACE_CONFIG);
--tf32 allows TF32 in matmuls and convolutions (off by default: detrain computes in float32;
either way set through fp32_precision on PyTorch >= 2.9, allow_tf32 before, and reported).
Each step is timed with CUDA events. All settings are reported.

usage: pytorch_train.py --model smallcnn|smallcnn-bn|mediumcnn|resnet18 [--kernel-size K]
                        [--threads T] [--batch B] [--steps S] [--warmup W]
                        [--channels-last] [--compile]
                        [--device cpu|cuda] [--deterministic] [--tf32]
"""
import os
import json
import statistics
import sys
import time

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # also when loaded by path
from peer_common import step_parser, torch_models  # noqa: E402


def set_tf32(backends, allowed):
    """Allows or forbids TF32 in cuBLAS matmuls and cuDNN convolutions; returns the API it used.
    PyTorch >= 2.9 has per-backend fp32_precision settings and deprecates allow_tf32; mixing
    the two raises a RuntimeError when a kernel reads the flag, so only one API is touched: the
    new one, every level of it (cuDNN's conv and rnn do not follow their parent), where it exists."""
    if hasattr(backends, "fp32_precision"):
        precision = "tf32" if allowed else "ieee"
        for owner in (backends, backends.cuda.matmul, backends.cudnn, backends.cudnn.conv,
                      backends.cudnn.rnn):
            owner.fp32_precision = precision
        return "fp32_precision"
    backends.cuda.matmul.allow_tf32 = allowed
    backends.cudnn.allow_tf32 = allowed
    return "allow_tf32"


def cpu_capability():
    """The ATen kernel level in use (torch 1.13 has no public getter: read the build config)."""
    cpu = getattr(torch.backends, "cpu", None)
    if cpu is not None and hasattr(cpu, "get_cpu_capability"):
        return cpu.get_cpu_capability()
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def build(model, k):
    """detrain's model (python/detrain/torch_models.py) and its input's (channels, size)."""
    m = torch_models()
    if model in ("smallcnn", "smallcnn-bn"):
        return m.SmallCNN(1, 28, 10, model == "smallcnn-bn"), (1, 28)
    if model == "mediumcnn":
        return m.MediumCNN(3, 32, 10, k), (3, 32)
    if model == "resnet18":
        return m.ResNet18(3, 10), (3, 32)
    raise SystemExit(f"unknown --model {model}")


def main():
    ap = step_parser(__doc__.splitlines()[0], warmup=5)
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--deterministic", action="store_true")
    ap.add_argument("--tf32", action="store_true")
    ap.add_argument("--channels-last", action="store_true")
    ap.add_argument("--compile", action="store_true")
    a = ap.parse_args()
    cuda = a.device == "cuda"
    if cuda:
        if a.deterministic:
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.use_deterministic_algorithms(a.deterministic)
        torch.backends.cudnn.deterministic = a.deterministic
        torch.backends.cudnn.benchmark = not a.deterministic
        tf32_api = set_tf32(torch.backends, a.tf32)
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    net, (ch, hw) = build(a.model, a.kernel_size)
    layout = torch.channels_last if a.channels_last else torch.contiguous_format
    net = net.to(a.device, memory_format=layout)
    net.train()
    # fused: the fastest Adam (one kernel for every parameter): CUDA, and the CPU from 2.4.
    fused = cuda or tuple(int(v) for v in torch.__version__.split(".")[:2]) >= (2, 4)
    opt = torch.optim.Adam(net.parameters(), lr=4e-4, **({"fused": True} if fused else {}))
    model = torch.compile(net) if a.compile else net
    x = (torch.rand(a.batch, ch, hw, hw) * 2 - 1).to(a.device, memory_format=layout)
    y = (torch.arange(a.batch) % 10).to(a.device)
    times = []
    for i in range(a.warmup + a.steps):
        if cuda:
            t0, t1 = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            t0.record()
        else:
            t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()
        if cuda:
            t1.record()
            t1.synchronize()
            dt = t0.elapsed_time(t1) / 1e3
        else:
            dt = time.perf_counter() - t0
        if i >= a.warmup:
            times.append(dt)
    med = statistics.median(times)
    info = {
        "peer": "pytorch", "torch_version": torch.__version__, "model": a.model,
        "kernel_size": a.kernel_size, "threads": a.threads, "batch": a.batch,
        "steps": a.steps, "step_ms_min": 1e3 * min(times), "step_ms_median": 1e3 * med,
        "images_per_second": a.batch / med, "device": a.device,
        "channels_last": a.channels_last, "compile": a.compile, "adam_fused": fused,
    }
    if cuda:
        info.update({"gpu": torch.cuda.get_device_name(0), "deterministic": a.deterministic,
                     "cudnn_benchmark": torch.backends.cudnn.benchmark, "tf32": a.tf32,
                     "tf32_api": tf32_api,
                     "cudnn_version": torch.backends.cudnn.version(), "adam": "fused"})
    else:
        info["cpu_capability"] = cpu_capability()
    print(json.dumps(info))
    return 0


if __name__ == "__main__":
    sys.exit(main())
