#!/usr/bin/env python3
"""The record of a GPU check for docs/gpu.md "Verified on real hardware", written from the check's
output folder (summary.json, the tests' XML, audit_cpu_vs_cuda.json, check.log), so that a session
lent a GPU records what ran rather than copying figures by hand:
  scripts/gpu_record.py OUTDIR                  # prints the Markdown record
  scripts/gpu_record.py OUTDIR --into docs/gpu.md
      # adds it at the end of the "Verified on real hardware" section (replacing its "Nothing yet"
      # paragraph the first time)
The record: date, GPU, commit, the host's facts; the steps (failed ones with the end of their log); the test
counts and failing tests; each CPU-vs-GPU hash pair; the audit's first difference; issue 20's
targets; detrain's step figures, the PyTorch peer's, the tile, optimizer and per-channel totals
comparisons and each kernel's figures per mode."""
import json
import os
import sys
import xml.etree.ElementTree as ET

SECTION = "## Verified on real hardware"


def table(header, rows):
    if not rows:
        return ["none (see check.log)"]
    lines = ["| " + " | ".join(header) + " |", "|" + " --- |" * len(header)]
    lines += ["| " + " | ".join("" if c is None else str(c) for c in r) + " |" for r in rows]
    return lines


def step_log(log_text, name, keep=6):
    """The last `keep` lines check.log holds for step `name` (its "== name (limit" block)."""
    block, inside = [], False
    for line in log_text.splitlines():
        if line.startswith("== "):
            inside = line.startswith(f"== {name} (")
            continue
        if inside:
            block.append(line)
    return block[-keep:]


def tests(out):
    """(file, run, failed, skipped, failing names) per test XML of the check."""
    found = []
    for name in ("tests_cuda.xml", "tests_device_ops.xml"):
        path = os.path.join(out, name)
        if not os.path.exists(path):
            found.append((name, None, None, None, []))
            continue
        cases = list(ET.parse(path).getroot().iter("testcase"))
        # A failure gtest_resume.py recorded (a crash, a hang, a test not run) says so in a line
        # of its own: shown beside the name.
        failing = []
        for c in cases:
            f = c.find("failure")
            if f is None:
                continue
            why = [l for l in (f.text or "").splitlines() if l.startswith("gtest_resume: ")]
            failing.append(f"{c.get('classname')}.{c.get('name')}" +
                           (f" ({why[-1][len('gtest_resume: '):]})" if why else ""))
        skipped = sum(1 for c in cases if c.find("skipped") is not None)
        found.append((name, len(cases), len(failing), skipped, failing))
    return found


def short(sha):
    return sha[:16] if isinstance(sha, str) else "-"


def record(out):
    s = json.load(open(os.path.join(out, "summary.json")))
    log_path = os.path.join(out, "check.log")
    log_text = open(log_path).read() if os.path.exists(log_path) else ""
    md = [f"### {s['date'][:10]}: {s['gpu']}, commit {str(s['commit'])[:12]}", ""]
    if s.get("host"):  # gpu_check.sh's first line
        md += ["Host: " + "; ".join(f"{k} {v}" for k, v in s["host"].items()) + ".", ""]
    info = s.get("detrain_info", {})
    if "cuda" in info:
        md += [f"detrain info: cuda device {info['cuda']['device']}; "
               f"{info['openmp']['logical_cores']} logical cores; "
               f"cpu isa {info['cpu_isa']['in_force']}.", ""]
    bad = [t for t in s["steps"] if t["status"] not in ("0", "skipped", "unavailable")]
    md.append(f"`scripts/gpu_check.sh` took {s['seconds']} s of its {s['budget_seconds']} s; "
              f"{len(s['steps']) - len(bad)} of {len(s['steps'])} steps passed, were skipped or "
              f"unavailable" + (f"; failed: {', '.join(t['step'] for t in bad)}." if bad else "."))
    odd = [f"{t['step']} ({t['status']})" for t in s["steps"]
           if t["status"] in ("skipped", "unavailable")]
    if odd:
        md.append(f"Not run: {', '.join(odd)}.")
    for t in bad:
        md += ["", f"{t['step']} (exit {t['status']}), end of its log:", "```"]
        md += step_log(log_text, t["step"]) + ["```"]
    md += [""] + table(["tests", "run", "failed", "skipped"],
                       [(n, r, f, k) for n, r, f, k, _ in tests(out)])
    for n, _, _, _, failing in tests(out):
        if failing:
            md.append(f"Failing in {n}: {', '.join(failing)}")
    md += ["", "CPU vs GPU (`weights_sha256`, first 16 hex digits):", ""]
    md += table(["run", "cpu", "cuda", "bitwise equal"],
                [(run, short(p["cpu"].get("weights_sha256")), short(p["cuda"].get("weights_sha256")),
                  "yes" if p["bitwise_equal"] else
                  "missing" if not (p["cpu"].get("weights_sha256") and
                                    p["cuda"].get("weights_sha256")) else "**no**")
                 for run, p in s["cpu_vs_gpu"].items()])
    peak = [p["cuda"].get("device_peak_bytes") for p in s["cpu_vs_gpu"].values()]
    peak = [b for b in peak if b]
    if peak:
        md.append(f"Device peak memory of those runs: up to {max(peak) / 2**20:.1f} MiB.")
    md += ["", "Audits, cpu vs cuda (`detrain audit --vs \"--device cuda\"`):", ""]
    for what, a in s.get("audits", {}).items():
        first = a.get("first_difference")
        md.append(f"- {what}: " + (
            f"no audit ({a['error']})" if a.get("identical") is None else
            "no difference in any op output, gradient or weight" if first is None else
            f"first difference at step {first.get('step')}, {first.get('op')} "
            f"({first.get('phase')}, {first.get('tensor')}): {first.get('differing_elements')} "
            f"of {first.get('elements')} elements, up to {first.get('max_ulp')} ULP"))
    m = s.get("matrix", {})
    md += ["", "Guarantee matrix on the GPU (`detrain audit --matrix --device cuda`, SmallCNN, "
           "one step each; every mode but atomic stable under a rerun and equal to the cpu: "
           f"{m.get('promise_kept')}):", ""]
    md += table(["site mode"] + m.get("columns", []),
                [[name] + ["stable" if cells.get(c) else "**differs**" for c in m["columns"]]
                 for name, cells in m.get("rows", {}).items()])
    md += ["", "Issue 20's targets:", ""]
    md += table(["target", "measured", "met"],
                [(k, v["value"], {True: "yes", False: "**no**", None: "missing"}[v["met"]])
                 for k, v in s["targets"].items()])
    md += ["", "detrain training steps (`dt_gpu_step_bench`, ms):", ""]
    md += table(["model", "preset", "median", "vs atomic", "images/s"],
                [(d["model"], d["preset"], d.get("med_ms", d.get("skipped")),
                  d.get("med_vs_fast"), d.get("img_per_s")) for d in s["detrain_step"]])
    for prof in s["step_profiles"]:
        md += ["", f"Where a {prof['model']} {prof['preset']} step's device time goes "
               f"(`dt_gpu_step_bench --profile`: {prof['launches']} launches, "
               f"{round(prof['total_ms'], 3)} ms on the stream; the kernels that took most):", ""]
        md += table(["kernel", "launches", "ms", "share"],
                    [(k["kernel"], k["launches"], round(k["ms"], 4),
                      f"{100 * k['ms'] / prof['total_ms']:.0f}%" if prof["total_ms"] else "")
                     for k in prof["kernels"]])
    md += ["", "PyTorch-CUDA peer (`bench/peers/pytorch_train.py`, ms):", ""]
    md += table(["model", "deterministic", "tf32", "median", "torch", "tf32 set by"],
                [(p["model"], p.get("deterministic"), p.get("tf32"),
                  round(p["step_ms_median"], 3), p.get("torch_version"), p.get("tf32_api"))
                 for p in s["pytorch_cuda"]])
    for key, what in (("tiles", "large tile / small tile"),
                      ("tiny", "tiny tile / small tile (where auto takes the tiny one)"),
                      ("optimizer", "one call for all parameters / one per parameter"),
                      ("channels", "block programs / a thread per row and channel")):
        ratios = next((v for k, v in s[key].items() if k != "bits_equal"), {})
        md += ["", f"{key} ({what}; bits equal: {s[key]['bits_equal']}):", ""]
        md += table(["kernel", "ratio"], sorted(ratios.items()))
    kernels = s["detrain_kernels"]
    variants = [k for k in kernels if "variant" in k]
    if variants:
        md += ["", "Backward kernel variants (ms):", ""]
        md += table(["op", "shape", "variant", "ms", "vs atomic", "bits"],
                    [(k["op"], k["shape"], k["variant"], k["ms"], k["vs_atomic"],
                      " ".join(f"{n[len('bits_equal_'):]}={v}" for n, v in k.items()
                               if n.startswith("bits_equal_"))) for k in variants])
    modes = [k for k in kernels if "mode" in k and k.get("op") != "channel"]
    if modes:
        md += ["", "Each op per mode (ms):", ""]
        md += table(["op", "shape", "mode", "forward", "backward", "backward vs atomic"],
                    [(k["op"], k["shape"], k["mode"], k.get("forward_ms", k.get("skipped")),
                      k.get("backward_ms"), k.get("backward_vs_atomic")) for k in modes])
    return "\n".join(md) + "\n"


def insert(doc_path, text):
    """Adds `text` at the end of the doc's SECTION, replacing a "Nothing yet" paragraph there."""
    doc = open(doc_path).read()
    at = doc.find(SECTION)
    if at < 0:
        raise SystemExit(f"gpu_record.py: {doc_path} has no '{SECTION}' section")
    body_at = at + len(SECTION) + 1
    end = doc.find("\n## ", body_at)
    end = len(doc) if end < 0 else end + 1
    body = doc[body_at:end]
    if body.lstrip().startswith("Nothing yet"):
        body = ""
    body = body.rstrip("\n") + ("\n\n" if body.strip() else "") + text
    with open(doc_path, "w") as f:
        f.write(doc[:body_at] + body + ("\n" if end < len(doc) else "") + doc[end:])


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--into"):
        print(__doc__, file=sys.stderr)
        return 2
    text = record(argv[1])
    if len(argv) == 4:
        insert(argv[3], text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
