#!/usr/bin/env python3
"""summary.json and record.md of scripts/gpu_check.sh, its last step; with --brief, the lines it
says as a step ends. summary.json: the host's facts, the steps' exit statuses, the tests' counts,
the CPU-vs-GPU hash pairs (the cpu side the kit's), the audits, the guarantee matrix, the step,
kernel and PyTorch-CUDA figures, and issue 20's speed targets, each with its ratio and `met` (null
where a figure is missing). record.md: the check, dated, for docs/results/gpu-verification.md.
usage: gpu_summary.py OUT STEPS_FILE WORK KIT BUDGET_S START_EPOCH "RUNS" ["HOST FACTS"]
       gpu_summary.py --brief tests|audit|matrix|steps|peers|kernels FILE [NAME]
Exit status: 0 when every step passed or was skipped, else 1."""
import json
import os
import sys
import time
import xml.etree.ElementTree as ET


def load(path, default=None):
    try:
        return json.load(open(path))
    except (OSError, ValueError):
        return default


def jsonl(path):
    lines = open(path) if os.path.exists(path) else []
    return [json.loads(l) for l in lines if l.strip().startswith("{")]


def audit(path):
    """`detrain audit --json`, cpu against cuda: identical (null without it), first difference."""
    a = load(path, {})
    return {"identical": a.get("identical"), "first_difference": a.get("first_difference")}


def guarantee_matrix(path):
    """`detrain audit --matrix --device cuda`: {columns, rows: {"site mode": {column: stable}}},
    and `promise_kept`: every mode but atomic stable under a rerun and equal to the cpu (None
    without the JSON)."""
    m = load(path)
    if m is None:
        return {"promise_kept": None}
    rows = {f"{r['site']} {r['mode']}": {c: v["stable"] for c, v in r["changes"].items()}
            for r in m["rows"]}
    kept = all(cells.get(c, False) for name, cells in rows.items()
               if not name.endswith(" atomic") for c in ("rerun", "cpu"))
    return {"columns": m["columns"], "rows": rows, "promise_kept": kept}


def targets(steps, peers):
    """Issue 20's speed targets from dt_gpu_step_bench's medians (one run) and the peer's: the
    deterministic step <= 1.10x and exact <= 1.3x atomic's; detrain's deterministic step at least
    PyTorch-CUDA's fastest eager step's speed on SmallCNN, 0.7x on ResNet-18 (TF32 off)."""
    def step(model, preset):
        return next((s for s in steps if s.get("model") == model and s.get("preset") == preset
                     and "med_ms" in s), {})

    def verdict(value, limit, at_most):
        met = None if value is None else value <= limit if at_most else value >= limit
        return {"value": None if value is None else round(value, 4), "limit": limit, "met": met}
    out = {}
    for model in ("smallcnn", "resnet18"):
        # exact@limbs: the exact preset with conv.wgrad's limb atomics (DT_CUDA_EXACT_WGRAD=limbs)
        for preset, limit in (("deterministic", 1.10), ("exact", 1.3), ("exact@limbs", 1.3)):
            out[f"{model}: {preset} step / atomic step <= {limit}"] = verdict(
                step(model, preset).get("med_vs_fast"), limit, at_most=True)
    for model, limit in (("smallcnn", 1.0), ("resnet18", 0.7)):
        ms = step(model, "deterministic").get("med_ms")
        torch_ms = next((p.get("step_ms_median") for p in peers if p.get("model") == model
                         and p.get("device") == "cuda" and not p.get("deterministic")
                         and not p.get("tf32")), None)
        out[f"{model}: PyTorch step / detrain deterministic step >= {limit} (TF32 off)"] = \
            verdict(torch_ms / ms if ms and torch_ms else None, limit, at_most=False)
    return out


# The kernel bench's comparisons of two variants of one computation, name: (op, ratio, the fields
# that name a line): large tile over small; tiny over small where the automatic choice takes the
# tiny one; Adam over all parameters in one call over one call each; the per-channel totals' block
# programs over a thread per row and channel.
COMPARISONS = {"tiles": ("tile", "large_vs_small", ("kernel", "shape")),
               "tiny": ("tiny", "tiny_vs_small", ("kernel", "shape")),
               "optimizer": ("optimizer", "batched_vs_per_parameter", ("shape",)),
               "channels": ("channel", "staged_vs_rows", ("kernel", "mode", "shape"))}


def compared(kernels):
    """{name: {ratio: {line: ratio}, "bits_equal": whether every pair gave the same bits (None
    without lines)}} per comparison; a pair whose bits are not comparable (atomic's) says null."""
    out = {}
    for name, (op, ratio, keys) in COMPARISONS.items():
        lines = [k for k in kernels if k.get("op") == op]
        bits = [k.get("bits_equal") for k in lines if k.get("bits_equal", False) is not None]
        out[name] = {ratio: {" ".join(str(k[f]) for f in keys): k.get(ratio) for k in lines},
                     "bits_equal": all(b is True for b in bits) if bits else None}
    return out


def tests(path):
    """A test XML gtest_resume.py wrote: its counts and failing tests (None without it)."""
    try:
        cases = list(ET.parse(path).iter("testcase"))
    except (OSError, ET.ParseError):
        return None
    failing = [f"{c.get('classname')}.{c.get('name')}" for c in cases
               if c.find("failure") is not None]
    return {"tests": len(cases), "failed": len(failing), "failing": failing,
            "skipped": sum(c.find("skipped") is not None for c in cases)}


def brief(kind, path, name=""):
    """gpu_check.sh's lines as a step ends: the tests' counts and the first failing ones, an
    audit's verdict, a bench's figures in brief."""
    if kind == "tests":
        t = tests(path)
        bad = ", ".join(t["failing"][:10]) + (", ..." if t["failed"] > 10 else "") if t else ""
        return [f"gpu_check: verdict {name}: {t['tests']} tests, {t['failed']} failed"
                f"{f' ({bad})' if bad else ''}, {t['skipped']} skipped"] if t else []
    if kind == "audit":
        a = audit(path)
        f = a["first_difference"] or {}
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
        out += [f"figure gemm {g['shape']} {g['tile']} tile: {g['tflops']} TFLOP/s, "
                f"{g['of_peak']} of the FP32 peak {g['fp32_peak_tflops']}"
                for g in rows if g.get("op") == "gemm_peak"]
        c = compared(rows)
        for key, what in (("tiles", "large/small"), ("tiny", "tiny/small")):
            r = sorted(v for v in c[key][COMPARISONS[key][1]].values() if v)
            if r:
                out.append(f"figure {key} {what}: {r[0]} to {r[-1]}, median {r[len(r) // 2]}, "
                           f"bits equal {c[key]['bits_equal']}")
    return ["gpu_check: " + line for line in out]


def record(s, log):
    """record.md: the steps, a failed one's log's end, the check's verdicts and figures in order."""
    bad = [t for t in s["steps"] if t["status"] not in ("0", "skipped")]
    md = [f"### {s['date'][:10]}: {s['gpu']}, commit {str(s['commit'])[:12]}", "",
          "Host: " + "; ".join(f"{k} {v}" for k, v in s["host"].items()) + ".", "",
          f"`scripts/gpu_check.sh` took {s['seconds']} s of its {s['budget_seconds']} s; "
          f"{len(s['steps']) - len(bad)} of {len(s['steps'])} steps passed or were skipped" +
          "".join(f"; {t['step']} exit {t['status']}" for t in bad) + "."]
    for t in bad:  # the end of each failed step's log
        block = log.split(f"\n== {t['step']} (limit", 1)[1:]
        md += ["", f"{t['step']}, end of its log:", "```",
               *(block[0].split("\n== ")[0].splitlines()[1:][-6:] if block else []), "```"]
    md += ["", "What the check said, in its order (issue 20's targets last):", ""]
    md += [f"- {l[len('gpu_check: '):]}" for l in log.splitlines()
           if l.startswith(("gpu_check: verdict ", "gpu_check: figure "))]
    return "\n".join(md) + "\n"


def main(argv):
    if argv[1] == "--brief":
        for line in brief(*argv[2:5]):
            print(line)
        return 0
    out, steps_file, work, kit, budget, start, runs = argv[1:8]
    # "key=value; ..." as gpu_check.sh's first line says them
    host = dict(f.split("=", 1) for f in (argv[8] if len(argv) > 8 else "").split("; ") if "=" in f)
    steps = [{"step": name, "status": rc, "seconds": round(int(ms or 0) / 1000, 2)}
             for name, rc, ms in (line.rstrip("\n").split("\t") for line in open(steps_file))]
    # The GPU runs against their recipe's cpu run, the kit's: each pair, the micro-batched and the
    # large-tile runs, and the runs moved between the devices.
    gpu_runs = [(run, run, run.replace(":", "-") + "-cuda") for run in runs.split()] + [
        (f"{run}, {what}", run, d) for what, run, d in (
            ("cuda --micro-batch 32", "smallcnn:exact", "micro"),
            ("cuda to step 7, resumed on cpu", "smallcnn:deterministic", "cuda-cpu"),
            ("cpu to step 7, resumed on cuda", "smallcnn:deterministic", "cpu-cuda"),
            ("cuda DT_CUDA_TILE=large", "smallcnn:deterministic", "large")) if run in runs.split()]
    hashes = {}
    for name, run, d in gpu_runs:
        a, b = (load(os.path.join(p, "result.json"), {}).get("weights_sha256")
                for p in (os.path.join(kit, "cpu", run.replace(":", "-")), os.path.join(work, d)))
        hashes[name] = {"cpu": a, "cuda": b, "bitwise_equal": a is not None and a == b}
    step_lines, peers, kernels = (jsonl(os.path.join(work, f + ".jsonl"))
                                  for f in ("steps", "peers", "kernels"))
    commit = os.path.join(kit, "COMMIT")
    summary = {
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "commit": open(commit).read().strip() if os.path.exists(commit) else None,
        "gpu": f"{host.get('gpus', 'unknown')}, driver {host.get('driver', 'unknown')}",
        "host": host, "seconds": round(time.time() - float(start), 1),
        "budget_seconds": int(budget), "steps": steps, "cpu_vs_gpu": hashes,
        "tests": {n: tests(os.path.join(out, n))
                  for n in ("tests_cuda.xml", "tests_device_ops.xml")},
        "audits": {what: audit(os.path.join(out, name)) for what, name in (
            ("smallcnn-bn exact-all, 2 steps", "audit_cpu_vs_cuda.json"),
            ("resnet18 exact-all, 2 steps of 32", "audit_resnet18_cpu_vs_cuda.json"))},
        "matrix": guarantee_matrix(os.path.join(out, "audit_matrix_cuda.json")),
        "targets": targets(step_lines, peers),
        "pytorch_cuda": peers,
        "detrain_step": [s for s in step_lines if s.get("op") != "profile"],
        # --profile's lines: where each case's step spends its time on the device, by kernel
        "step_profiles": [s for s in step_lines if s.get("op") == "profile"],
        **compared(kernels),
        "detrain_kernels": kernels,
    }
    json.dump(summary, open(os.path.join(out, "summary.json"), "w"), indent=2)
    said = "".join(f"gpu_check: verdict target {k}: {v['value']}, " +  # what no step could say
                   {True: "met", False: "NOT met", None: "figures missing"}[v["met"]] + "\n"
                   for k, v in summary["targets"].items())
    print(said, end="")
    with open(os.path.join(out, "check.log"), "a") as log:
        log.write(said)
    md = record(summary, open(os.path.join(out, "check.log")).read())
    open(os.path.join(out, "record.md"), "w").write(md)
    return 0 if all(s["status"] in ("0", "skipped") for s in steps) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
