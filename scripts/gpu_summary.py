#!/usr/bin/env python3
"""summary.json of scripts/gpu_check.sh: the host's facts, the steps and their exit statuses, the
CPU-vs-GPU hash pairs (the cpu side the kit's, or the host's where an older kit has none; the GPU
side the same run, micro-batched, with the large tiles, and moved between the devices mid-way), the
audits, the guarantee matrix, detrain's step and kernel figures, the PyTorch-CUDA peer's, and issue
20's speed targets each with its measured ratio and a verdict (so that a GPU session records
results, not arithmetic; `met` null where a figure is missing): deterministic step <= 1.10x and
exact <= 1.3x atomic (also exact@limbs: conv.wgrad's limb atomics), on SmallCNN and ResNet-18
(dt_gpu_step_bench's medians, same run); detrain's deterministic step at least PyTorch-CUDA's
fastest eager step's speed on SmallCNN, 0.7x on ResNet-18 (TF32 off).
usage: gpu_summary.py OUT STEPS_FILE WORK KIT BUDGET_S START_EPOCH "RUNS" ["HOST FACTS"]
  prints each target's verdict; exit status 0 when every step passed or was skipped, else 1
       gpu_summary.py --brief audit|matrix|steps|peers|kernels FILE [NAME]
  the lines gpu_check.sh says as a step ends: an audit's verdict, a bench's figures in brief
"""
import json
import os
import subprocess
import sys
import time


def result(path):
    if not os.path.exists(path):
        return {"error": "no result.json (see check.log)"}
    r = json.load(open(path))
    return {k: r.get(k) for k in ("weights_sha256", "test_accuracy", "images_per_second",
                                   "device", "recipe", "device_peak_bytes")}


def cpu_side(work, kit, name):
    """A pair's cpu run: the kit's (scripts/kit/contents.sh), else the one the check ran."""
    shipped = os.path.join(kit, "cpu", name, "result.json")
    if os.path.exists(shipped):
        return dict(result(shipped), source="kit")
    return dict(result(os.path.join(work, f"{name}-cpu", "result.json")), source="host")


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
    lines = open(path) if os.path.exists(path) else []
    return [json.loads(l) for l in lines if l.strip().startswith("{")]


def step_ms(steps, model, preset):
    return next((s for s in steps if s.get("model") == model and s.get("preset") == preset
                 and "med_ms" in s), None)


def peer_ms(peers, model, deterministic=False, tf32=False):
    return next((p.get("step_ms_median") for p in peers if p.get("model") == model
                 and p.get("device") == "cuda" and bool(p.get("deterministic")) == deterministic
                 and bool(p.get("tf32")) == tf32), None)


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


# The kernel bench's comparisons: the large tile's time over the small one's; the tiny one's over
# the small one's where the automatic choice takes the tiny one; the per-channel totals' block
# programs over a thread per row and channel; the Adam step over all parameters in one call over
# one call per parameter.
def tiles(kernels):
    return compared(kernels, "tile", "large_vs_small", lambda k: f"{k['kernel']} {k['shape']}")


def tiny(kernels):
    return compared(kernels, "tiny", "tiny_vs_small", lambda k: f"{k['kernel']} {k['shape']}")


def channels(kernels):
    return compared(kernels, "channel", "staged_vs_rows",
                    lambda k: f"{k['kernel']} {k['mode']} {k['shape']}")


def optimizer(kernels):
    return compared(kernels, "optimizer", "batched_vs_per_parameter", lambda k: k["shape"])


def brief(kind, path, name=""):
    """gpu_check.sh's lines as a step ends: an audit's verdict, a bench's figures in brief."""
    if kind == "audit":
        a = audit(path)
        f = a.get("first_difference") or {}
        said = {None: "no verdict (see check.log)", True: "identical"}.get(
            a["identical"], f"DIFFERENT, first at step {f.get('step')}, {f.get('op')} "
                            f"({f.get('phase')}, {f.get('tensor')})")
        return [f"gpu_check: verdict {name}: {said}"]
    if kind == "matrix":
        return [f"gpu_check: verdict {name}: every mode but atomic stable under a rerun and the "
                f"cpu's: {guarantee_matrix(path)['promise_kept']}"]
    rows, out = jsonl(path), []
    if kind == "steps":
        for model in dict.fromkeys(r["model"] for r in rows if "med_ms" in r):
            cases = [r for r in rows if r.get("model") == model and "med_ms" in r]
            out.append(f"figure step {model} (x atomic's {cases[0].get('fast_med_ms')} ms): " +
                       ", ".join(f"{r['preset']} {r.get('med_vs_fast')}" for r in cases))
    elif kind == "peers" and rows:
        out.append("figure pytorch: " + ", ".join(
            f"{p['model']}{' deterministic' if p.get('deterministic') else ''}"
            f"{' tf32' if p.get('tf32') else ''} {p.get('step_ms_median')} ms" for p in rows))
    elif kind == "kernels":
        for f, what in ((tiles, "large/small"), (tiny, "tiny/small")):
            t = f(rows)
            r = sorted(v for k, d in t.items() if k != "bits_equal" for v in d.values() if v)
            if r:
                out.append(f"figure {f.__name__} {what}: {r[0]} to {r[-1]}, median "
                           f"{r[len(r) // 2]}, bits equal {t['bits_equal']}")
        ms = {(k["shape"], k["variant"]): k for k in rows if k.get("op") == "conv.wgrad kernel"}
        ways = [(s, k["ms"] / ms[s, "exact"]["ms"], k.get("bits_equal_exact"))
                for (s, v), k in ms.items() if v == "exact-limb-atomics" and (s, "exact") in ms]
        if ways:
            out.append("figure wgrad exact limbs/leaves: " + ", ".join(
                f"{s} {r:.3f} (bits equal {b})" for s, r, b in ways))
    return ["gpu_check: " + line for line in out]


def main(argv):
    if argv[1] == "--brief":
        for line in brief(*argv[2:5]):
            print(line)
        return 0
    out, steps_file, work, kit, budget, start, runs = argv[1:8]
    # "key=value; ..." as gpu_check.sh's first line says them
    host = dict(f.split("=", 1) for f in (argv[8] if len(argv) > 8 else "").split("; ") if "=" in f)
    steps = []
    for line in open(steps_file):
        name, rc, msecs = line.rstrip("\n").split("\t")
        if name == "memcheck" and rc == "2":  # no compute-sanitizer, or it refused the device
            rc = "unavailable"
        steps.append({"step": name, "status": rc, "seconds": round(int(msecs or 0) / 1000, 2)})
    # The GPU runs against their recipe's cpu run: each pair, the micro-batched and the large-tile
    # runs, and the runs moved between the devices.
    cpu = {run: cpu_side(work, kit, run.replace(":", "-")) for run in runs.split()}
    hashes = {run: pair(cpu[run], result(os.path.join(work, run.replace(":", "-") + "-cuda",
                                                      "result.json"))) for run in runs.split()}
    for what, run, gpu_run in (
            ("cuda --micro-batch 32", "smallcnn:exact", "micro"),
            ("cuda to step 7, resumed on cpu", "smallcnn:deterministic", "cuda-cpu"),
            ("cpu to step 7, resumed on cuda", "smallcnn:deterministic", "cpu-cuda"),
            ("cuda DT_CUDA_TILE=large", "smallcnn:deterministic", "large")):
        if run in cpu:
            hashes[f"{run}, {what}"] = pair(cpu[run], result(os.path.join(work, gpu_run,
                                                                          "result.json")))
    audits = {what: audit(os.path.join(out, name)) for what, name in (
        ("smallcnn-bn exact-all, 2 steps", "audit_cpu_vs_cuda.json"),
        ("resnet18 exact-all, 2 steps of 32", "audit_resnet18_cpu_vs_cuda.json"))}
    matrix = guarantee_matrix(os.path.join(out, "audit_matrix_cuda.json"))
    step_lines = jsonl(os.path.join(work, "steps.jsonl"))
    # --profile's lines: where each case's step spends its time on the device, kernel by kernel
    profiles = [s for s in step_lines if s.get("op") == "profile"]
    detrain_steps = [s for s in step_lines if s.get("op") != "profile"]
    peers = jsonl(os.path.join(work, "peers.jsonl"))
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
        "gpu": f"{host.get('gpus', 'unknown')}, driver {host.get('driver', 'unknown')}",
        "host": host,
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
    for k, v in summary["targets"].items():  # the verdicts the steps could not say alone
        print(f"gpu_check: verdict target {k}: {v['value']}, " +
              {True: "met", False: "NOT met", None: "figures missing"}[v["met"]])
    return 0 if all(s["status"] in ("0", "skipped", "unavailable") for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
