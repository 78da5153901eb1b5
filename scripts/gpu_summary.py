#!/usr/bin/env python3
"""summary.json of scripts/gpu_check.sh: the steps and their exit statuses, the CPU-vs-GPU hash
pairs (the same run on each device, micro-batched on the GPU, with the large tiles, and moved
between the devices mid-way through a checkpoint), the cpu-vs-cuda audits, detrain's step and
kernel figures, the PyTorch-CUDA peer figures, and issue 20's speed targets each with its
measured ratio and a verdict (so that a GPU session records results, not arithmetic):
  deterministic step <= 1.10x atomic, exact <= 1.3x atomic      (SmallCNN, ResNet-18; medians of
                                                                 dt_gpu_step_bench, same run; exact
                                                                 also with conv.wgrad's limb
                                                                 atomics: exact@limbs)
  SmallCNN step at least PyTorch-CUDA's speed                    (detrain's deterministic step
                                                                 against PyTorch's fastest eager
                                                                 step, TF32 off)
  ResNet-18 at least 0.7x PyTorch with TF32 off                  (the same pair)
A target whose figures are missing (a step failed or was cut by the budget) says so.

usage: gpu_summary.py OUT STEPS_FILE WORK KIT BUDGET_S START_EPOCH "RUNS"
Prints a one-line digest; exit status 0 when every step passed or was skipped, else 1.
"""
import json
import os
import subprocess
import sys
import time


def result(work, run, dev):
    p = os.path.join(work, f"{run.replace(':', '-')}-{dev}", "result.json")
    if not os.path.exists(p):
        return {"error": "no result.json (see check.log)"}
    r = json.load(open(p))
    return {k: r.get(k) for k in ("weights_sha256", "test_accuracy", "images_per_second",
                                   "device", "recipe", "device_peak_bytes")}


def pair(cpu, cuda):
    same = cpu.get("weights_sha256") is not None and cpu.get("weights_sha256") == cuda.get(
        "weights_sha256")
    return {"cpu": cpu, "cuda": cuda, "bitwise_equal": same}


def audit(path):
    """A `detrain audit --json` of cpu against cuda: identical, and the first difference (null
    when none); an error where the audit wrote no JSON."""
    try:
        a = json.load(open(path))
    except (OSError, ValueError):
        return {"identical": None, "error": "no audit JSON (see check.log)"}
    return {"identical": a.get("identical"), "first_difference": a.get("first_difference")}


def guarantee_matrix(path):
    """`detrain audit --matrix --device cuda`: {columns, rows: {"site mode": {column: stable}}},
    and `promise_kept`: every mode but atomic stable under a rerun and equal to the cpu (None
    without the JSON)."""
    try:
        m = json.load(open(path))
    except (OSError, ValueError):
        return {"error": "no matrix JSON (see check.log)", "promise_kept": None}
    rows = {f"{r['site']} {r['mode']}": {c: v["stable"] for c, v in r["changes"].items()}
            for r in m["rows"]}
    kept = all(cells.get(c, False) for name, cells in rows.items()
               if not name.endswith(" atomic") for c in ("rerun", "cpu"))
    return {"columns": m["columns"], "rows": rows, "promise_kept": kept}


def jsonl(path):
    if not os.path.exists(path):
        return []
    return [json.loads(l) for l in open(path) if l.strip().startswith("{")]


def step_ms(steps, model, preset):
    for s in steps:
        if s.get("model") == model and s.get("preset") == preset and "med_ms" in s:
            return s
    return None


def peer_ms(peers, model, deterministic=False, tf32=False):
    for p in peers:
        if (p.get("model") == model and p.get("device") == "cuda"
                and bool(p.get("deterministic")) == deterministic and bool(p.get("tf32")) == tf32):
            return p.get("step_ms_median")
    return None


def verdict(value, limit, at_most):
    if value is None:
        return {"value": None, "limit": limit, "met": None, "why": "figures missing (check.log)"}
    met = value <= limit if at_most else value >= limit
    return {"value": round(value, 4), "limit": limit, "met": met}


def targets(steps, peers):
    """Issue 20's speed targets from dt_gpu_step_bench's and the peer's JSON lines."""
    out = {}
    for model in ("smallcnn", "resnet18"):
        # exact@limbs: the exact preset with conv.wgrad's limb atomics (DT_CUDA_EXACT_WGRAD=limbs)
        for preset, limit in (("deterministic", 1.10), ("exact", 1.3), ("exact@limbs", 1.3)):
            s = step_ms(steps, model, preset)
            out[f"{model}: {preset} step / atomic step <= {limit}"] = verdict(
                s["med_vs_fast"] if s else None, limit, at_most=True)
    for model, limit in (("smallcnn", 1.0), ("resnet18", 0.7)):
        s = step_ms(steps, model, "deterministic")
        torch_ms = peer_ms(peers, model)
        speed = torch_ms / s["med_ms"] if s and torch_ms else None
        out[f"{model}: PyTorch step / detrain deterministic step >= {limit} (TF32 off)"] = \
            verdict(speed, limit, at_most=False)
    return out


def compared(kernels, op, ratio, name):
    """dt_gpu_kernel_bench's lines of `op`, each two variants of one computation timed against
    each other: {ratio: {name(line): line[ratio]}, "bits_equal": whether every pair gave the same
    bits (None without lines)}."""
    lines = [k for k in kernels if k.get("op") == op]
    # a pair whose bits are not comparable says null (atomic: its order is timing's)
    checked = [k for k in lines if "bits_equal" not in k or k["bits_equal"] is not None]
    return {ratio: {name(k): k.get(ratio) for k in lines},
            "bits_equal": all(k.get("bits_equal") is True for k in checked) if checked else None}


def tiles(kernels):
    """The tile shapes compared: per kernel and shape the large tile's time over the small one's."""
    return compared(kernels, "tile", "large_vs_small", lambda k: f"{k['kernel']} {k['shape']}")


def tiny(kernels):
    """The tiny tile against the small one where the automatic choice takes the tiny one: per
    kernel and shape the tiny tile's time over the small one's."""
    return compared(kernels, "tiny", "tiny_vs_small", lambda k: f"{k['kernel']} {k['shape']}")


def channels(kernels):
    """The per-channel totals, block programs (staged leaves, tree combine in blocks) against a
    thread per row and per channel: per kernel, mode and shape the staged way's time over the
    other's."""
    return compared(kernels, "channel", "staged_vs_rows",
                    lambda k: f"{k['kernel']} {k['mode']} {k['shape']}")


def optimizer(kernels):
    """The Adam step over all parameters in one call against one call per parameter, per model."""
    return compared(kernels, "optimizer", "batched_vs_per_parameter", lambda k: k["shape"])


def main(argv):
    out, steps_file, work, kit, budget, start, runs = argv[1:8]
    steps = []
    for line in open(steps_file):
        name, rc, msecs = line.rstrip("\n").split("\t")
        if name == "memcheck" and rc == "2":  # no compute-sanitizer, or it refused the device
            rc = "unavailable"
        steps.append({"step": name, "status": rc, "seconds": round(int(msecs or 0) / 1000, 2)})
    hashes = {run: pair(result(work, run, "cpu"), result(work, run, "cuda"))
              for run in runs.split()}
    hashes["smallcnn:exact, cuda --micro-batch 32"] = pair(
        result(work, "smallcnn:exact", "cpu"), result(work, "smallcnn:exact", "cuda-micro"))
    for way, what in (("cuda-cpu", "cuda to step 7, resumed on cpu"),
                      ("cpu-cuda", "cpu to step 7, resumed on cuda")):
        hashes[f"smallcnn:deterministic, {what}"] = pair(
            result(work, "smallcnn:deterministic", "cpu"),
            result(work, "smallcnn:deterministic", way))
    hashes["smallcnn:deterministic, cuda DT_CUDA_TILE=large"] = pair(
        result(work, "smallcnn:deterministic", "cpu"),
        result(work, "smallcnn:deterministic", "cuda-large"))
    audits = {what: audit(os.path.join(out, name)) for what, name in (
        ("smallcnn-bn exact-all, 2 steps", "audit_cpu_vs_cuda.json"),
        ("resnet18 exact-all, 2 steps of 32", "audit_resnet18_cpu_vs_cuda.json"))}
    matrix = guarantee_matrix(os.path.join(out, "audit_matrix_cuda.json"))
    step_lines = jsonl(os.path.join(work, "steps.jsonl"))
    # --profile's lines: where each case's step spends its time on the device, kernel by kernel
    profiles = [s for s in step_lines if s.get("op") == "profile"]
    detrain_steps = [s for s in step_lines if s.get("op") != "profile"]
    peers = jsonl(os.path.join(work, "peers.jsonl"))
    try:
        gpu = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version",
                              "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=10).stdout.strip()
    except Exception as e:  # no nvidia-smi here: the kit is being checked without a GPU
        gpu = f"none ({e})"
    try:  # what detrain itself sees: its cuda device, threads, instruction sets
        info = json.loads(subprocess.run([os.path.join(kit, "bin", "detrain"), "info", "--json"],
                                         capture_output=True, text=True, timeout=30).stdout)
    except Exception as e:
        info = {"error": f"detrain info --json: {e}"}
    kernels = jsonl(os.path.join(work, "kernels.jsonl"))
    commit_file = os.path.join(kit, "COMMIT")
    summary = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": open(commit_file).read().strip() if os.path.exists(commit_file) else None,
        "gpu": gpu,
        "detrain_info": info,
        "seconds": round(time.time() - float(start), 1),
        "budget_seconds": int(budget),
        "steps": steps,
        "cpu_vs_gpu": hashes,
        "audits": audits,
        "matrix": matrix,
        "targets": targets(detrain_steps, peers),
        "pytorch_cuda": peers,
        "detrain_step": detrain_steps,
        "step_profiles": profiles,
        "tiles": tiles(kernels),
        "tiny": tiny(kernels),
        "optimizer": optimizer(kernels),
        "channels": channels(kernels),
        "detrain_kernels": kernels,
    }
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
    print(json.dumps({"steps": [f"{s['step']}:{s['status']}" for s in steps],
                      "cpu_vs_gpu": {k: v["bitwise_equal"] for k, v in hashes.items()},
                      "audits_identical": {k: v.get("identical") for k, v in audits.items()},
                      "matrix_promise_kept": matrix["promise_kept"],
                      "targets": {k: v["met"] for k, v in summary["targets"].items()},
                      "tiles": summary["tiles"], "tiny": summary["tiny"],
                      "optimizer": summary["optimizer"],
                      "channels": summary["channels"]}))
    return 0 if all(s["status"] in ("0", "skipped", "unavailable") for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
