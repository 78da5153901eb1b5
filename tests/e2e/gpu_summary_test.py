#!/usr/bin/env python3
"""scripts/gpu_summary.py on made-up outputs of a GPU check: the host's facts, hash pairs equal and
unequal (the cpu side the kit ships, which wins over a cpu run of the check's own, or that run
where the kit has none), the speed targets met, missed and missing, the exit status from the
steps' statuses (memcheck's exit 2, no usable compute-sanitizer, listed as unavailable), and the
lines --brief says as a step ends (audits' and the matrix's verdicts, the benches' figures).
With scripts/gpu_record.py as well: the Markdown record written from that check's folder.
usage: gpu_summary_test.py SUMMARY_SCRIPT [RECORD_SCRIPT]"""
import json
import os
import subprocess
import sys
import tempfile
import time

from expectations import Expectations


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def run(script, root, steps_text, tile_bits=True, matrix_tree_cpu=True, channel_bits=True):
    out, work, kit = (os.path.join(root, d) for d in ("out", "work", "kit"))
    for d in (out, work, kit):
        os.makedirs(d, exist_ok=True)
    write(os.path.join(kit, "COMMIT"), "abc123\n")
    write(os.path.join(kit, "bin", "detrain"), "#!/bin/sh\necho '{\"cuda\": {\"device\": "
          "\"H100 (sm_90)\"}, \"openmp\": {\"logical_cores\": 16}, \"cpu_isa\": "
          "{\"in_force\": \"avx512\"}}'\n")
    os.chmod(os.path.join(kit, "bin", "detrain"), 0o755)
    steps = os.path.join(root, "steps.tsv")
    write(steps, steps_text)
    # the cpu sides: deterministic's shipped in the kit (bb; the check's own cc loses), exact's
    # run by the check (a kit without it)
    for run_dir, sha in (("kit/cpu/smallcnn-deterministic", "bb"),
                         ("work/smallcnn-deterministic-cpu", "cc"),
                         ("work/smallcnn-exact-cpu", "aa"), ("work/smallcnn-exact-cuda", "aa"),
                         ("work/micro", "aa"), ("work/smallcnn-deterministic-cuda", "cc"),
                         ("work/cuda-cpu", "bb"), ("work/cpu-cuda", "dd"), ("work/large", "bb")):
        write(os.path.join(root, run_dir, "result.json"), json.dumps({"weights_sha256": sha}))
    lines = [
        {"model": "smallcnn", "preset": "deterministic", "med_ms": 2.0, "med_vs_fast": 1.05},
        {"model": "smallcnn", "preset": "exact", "med_ms": 3.0, "med_vs_fast": 1.5},
        {"model": "smallcnn", "preset": "exact@limbs", "med_ms": 2.5, "med_vs_fast": 1.25},
        {"model": "resnet18", "preset": "deterministic", "med_ms": 40.0, "med_vs_fast": 1.2},
        {"model": "resnet18", "preset": "exact", "skipped": "budget"},
        {"op": "profile", "model": "smallcnn", "preset": "deterministic", "launches": 60,
         "total_ms": 2.0, "kernels": [{"kernel": "conv2d_backward_weight", "launches": 3,
                                       "ms": 1.5}]},
    ]
    write(os.path.join(work, "steps.jsonl"), "".join(json.dumps(l) + "\n" for l in lines))
    write(os.path.join(out, "audit_cpu_vs_cuda.json"),
          json.dumps({"identical": True, "first_difference": None}))
    def row(site, mode, rerun, cpu):
        return {"site": site, "mode": mode, "changes": {
            "rerun": {"stable": rerun}, "permuted rows": {"stable": False}, "cpu": {"stable": cpu}}}
    matrix_rows = [row("conv.wgrad", "exact", True, True), row("conv.wgrad", "atomic", False, False),
                   row("loss", "tree", True, matrix_tree_cpu)]
    write(os.path.join(out, "audit_matrix_cuda.json"), json.dumps(
        {"columns": ["rerun", "permuted rows", "cpu"], "rows": matrix_rows}))
    write(os.path.join(out, "audit_resnet18_cpu_vs_cuda.json"), json.dumps({
        "identical": False, "first_difference": {
            "step": 0, "op": "conv2d", "phase": "backward", "tensor": "weight grad",
            "differing_elements": 3, "elements": 864, "max_ulp": 2.0}}))
    peers = [
        {"model": "smallcnn", "device": "cuda", "deterministic": False, "tf32": False,
         "step_ms_median": 2.5},
        {"model": "smallcnn", "device": "cuda", "deterministic": True, "tf32": False,
         "step_ms_median": 9.0},
        {"model": "resnet18", "device": "cuda", "deterministic": False, "tf32": True,
         "step_ms_median": 10.0, "torch_version": "2.11.0", "tf32_api": "fp32_precision"},
        {"model": "resnet18", "device": "cuda", "deterministic": False, "tf32": False,
         "step_ms_median": 20.0},
    ]
    write(os.path.join(work, "peers.jsonl"), "".join(json.dumps(p) + "\n" for p in peers))
    kernels = [
        {"op": "conv.wgrad kernel", "shape": "s5", "variant": "exact", "ms": 2.0, "vs_atomic": 2.0},
        {"op": "conv.wgrad kernel", "shape": "s5", "variant": "exact-limb-atomics", "ms": 1.0,
         "vs_atomic": 1.0, "bits_equal_exact": True},
        {"op": "tile", "kernel": "conv.forward", "shape": "s1", "small_ms": 2.0, "large_ms": 1.0,
         "large_vs_small": 0.5, "bits_equal": True},
        {"op": "tile", "kernel": "gemm", "shape": "s2", "small_ms": 1.0, "large_ms": 1.5,
         "large_vs_small": 1.5, "bits_equal": tile_bits},
        {"op": "tiny", "kernel": "conv.wgrad tree", "shape": "s4", "small_ms": 2.0,
         "tiny_ms": 0.5, "tiny_vs_small": 0.25, "bits_equal": True},
        {"op": "conv2d", "shape": "s1", "mode": "tree", "forward_ms": 1.0},
        {"op": "optimizer", "kernel": "adam", "shape": "resnet18, 62 parameters",
         "batched_ms": 0.1, "per_parameter_ms": 0.4, "batched_vs_per_parameter": 0.25,
         "bits_equal": True},
        {"op": "channel", "kernel": "bn.stats", "shape": "s3", "mode": "tree", "staged_ms": 0.1,
         "rows_ms": 0.4, "staged_vs_rows": 0.25, "bits_equal": channel_bits},
        {"op": "channel", "kernel": "bn.stats", "shape": "s3", "mode": "atomic",
         "staged_ms": 0.1, "rows_ms": 0.2, "staged_vs_rows": 0.5, "bits_equal": None},
    ]
    write(os.path.join(work, "kernels.jsonl"), "".join(json.dumps(k) + "\n" for k in kernels))
    p = subprocess.run([sys.executable, script, out, steps, work, kit, "340", str(time.time()),
                        "smallcnn:deterministic smallcnn:exact", FACTS], capture_output=True,
                       text=True)
    return p.returncode, json.load(open(os.path.join(out, "summary.json"))), p.stdout


FACTS = ("gpus=NVIDIA H200; driver=570.86.15; glibc=2.35; python3=3.10.12; torch=none; "
         "gpu_free=143000 MiB; host_free=120000 MiB")


def brief(script, *args):
    return subprocess.run([sys.executable, script, "--brief", *args], capture_output=True,
                          text=True).stdout


XML = """<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="4" failures="2" name="AllTests">
  <testsuite name="CommonDevice" tests="4" failures="2" skipped="1">
    <testcase name="Passes" status="run" result="completed" classname="CommonDevice"/>
    <testcase name="Breaks" status="run" result="completed" classname="CommonDevice">
      <failure message="bits differ"/>
    </testcase>
    <testcase name="Crashes" classname="CommonDevice" time="0.000">
      <failure message="x">x
gtest_resume: the process died (exit -11, signal SIGSEGV) in this test</failure>
    </testcase>
    <testcase name="Skips" status="run" result="skipped" classname="CommonDevice">
      <skipped message="no device"/>
    </testcase>
  </testsuite>
</testsuites>
"""


def check_record(record_script, out, expect):
    """scripts/gpu_record.py on the made-up check: its Markdown, and --into a doc twice."""
    write(os.path.join(out, "check.log"), "== nvidia-smi (limit 15 s): nvidia-smi\nH100\n"
          "== cuda-core-tests (limit 60 s): dt_test_cuda\n[  FAILED  ] CommonDevice.Breaks\n"
          "== memcheck (limit 75 s): scripts/gpu_memcheck.sh 70\nDevice not supported\n")
    write(os.path.join(out, "tests_cuda.xml"), XML)
    p = subprocess.run([sys.executable, record_script, out], capture_output=True, text=True)
    md = p.stdout
    expect(p.returncode == 0, f"gpu_record.py exit {p.returncode}: {p.stderr}")
    expect("failed: cuda-core-tests." in md and "[  FAILED  ] CommonDevice.Breaks" in md,
           f"the failed step and the end of its log:\n{md}")
    expect("Not run: memcheck (unavailable)." in md, "memcheck listed as not run")
    expect("Host: gpus NVIDIA H200; driver 570.86.15; glibc 2.35; python3 3.10.12; torch none; "
           "gpu_free 143000 MiB; host_free 120000 MiB." in md, f"the host's facts:\n{md}")
    expect("detrain info: cuda device H100 (sm_90); 16 logical cores; cpu isa avx512." in md,
           "what detrain saw")
    expect("| tests_cuda.xml | 4 | 2 | 1 |" in md and "Failing in tests_cuda.xml: "
           "CommonDevice.Breaks, CommonDevice.Crashes (the process died (exit -11, signal "
           "SIGSEGV) in this test)" in md, f"test counts, the failing tests, why one broke:\n{md}")
    expect("| smallcnn:exact | aa | aa | yes |" in md
           and "| smallcnn:deterministic | bb | cc | **no** |" in md, "hash pairs")
    expect("- smallcnn-bn exact-all, 2 steps: no difference in any op" in md
           and "- resnet18 exact-all, 2 steps of 32: first difference at step 0, conv2d "
           "(backward, weight grad): 3 of 864" in md, f"the audits:\n{md}")
    expect("| smallcnn: exact step / atomic step <= 1.3 | 1.5 | **no** |" in md
           and "| resnet18: exact step / atomic step <= 1.3 |  | missing |" in md
           and "| smallcnn: exact@limbs step / atomic step <= 1.3 | 1.25 | yes |" in md, "targets")
    expect("| resnet18 | False | True | 10.0 | 2.11.0 | fp32_precision |" in md,
           f"the peer's rows, with how TF32 was set:\n{md}")
    expect("| gemm s2 | 1.5 |" in md and "| resnet18, 62 parameters | 0.25 |" in md,
           "tile and optimizer ratios")
    expect("| conv2d | s1 | tree | 1.0 |" in md and "| bn.stats | s3 |" not in md,
           "each op per mode (without the channel pairs)")
    expect("| bn.stats tree s3 | 0.25 |" in md, "channel ratios")
    expect("| conv.wgrad tree s4 | 0.25 |" in md, "tiny tile ratios")
    expect("Where a smallcnn deterministic step's device time goes" in md
           and "| conv2d_backward_weight | 3 | 1.5 | 75% |" in md, f"the step profile:\n{md}")
    expect("| conv.wgrad atomic | **differs** | **differs** | **differs** |" in md
           and "| conv.wgrad exact | stable | **differs** | stable |" in md, f"matrix:\n{md}")
    doc = os.path.join(out, "gpu.md")
    write(doc, "# GPU\n\n## Verified on real hardware\nNothing yet: none.\n\n## Later\nkept\n")
    for _ in range(2):
        subprocess.run([sys.executable, record_script, out, "--into", doc], check=True)
    text = open(doc).read()
    expect("Nothing yet" not in text and text.count("### ") == 2 and text.endswith("## Later\nkept\n")
           and text.index("## Verified") < text.index("### ") < text.index("## Later"),
           f"--into replaces 'Nothing yet', then adds, inside the section:\n{text}")


def main():
    script = sys.argv[1]
    record_script = sys.argv[2] if len(sys.argv) > 2 else None
    expect = Expectations()

    with tempfile.TemporaryDirectory() as root:
        rc, s, printed = run(script, root, "nvidia-smi\t0\t100\ntrain-a\tskipped\t0\n")
        expect(rc == 0, f"exit {rc} with every step passed or skipped")
        expect(s["commit"] == "abc123", "commit")
        expect(s["host"]["torch"] == "none" and s["host"]["gpu_free"] == "143000 MiB"
               and s["gpu"] == "NVIDIA H200, driver 570.86.15", f"host facts {s['host']}")
        expect(s["detrain_info"]["cuda"]["device"] == "H100 (sm_90)", f"info {s['detrain_info']}")
        h = s["cpu_vs_gpu"]
        expect(h["smallcnn:exact"]["bitwise_equal"] is True, "equal hashes")
        expect(h["smallcnn:deterministic"]["bitwise_equal"] is False
               and h["smallcnn:deterministic"]["cpu"]["source"] == "kit",
               "a shipped cpu hash unlike the GPU's (and the check's own cpu run's) differs")
        expect(h["smallcnn:exact"]["cpu"]["source"] == "host", "no shipped cpu side: the host's")
        expect(h["smallcnn:exact, cuda --micro-batch 32"]["bitwise_equal"] is True, "micro pair")
        moved = "smallcnn:deterministic, {} to step 7, resumed on {}"
        expect(h[moved.format("cuda", "cpu")]["bitwise_equal"] is True, "moved to the cpu")
        expect(h[moved.format("cpu", "cuda")]["bitwise_equal"] is False, "moved to the gpu")
        expect(h["smallcnn:deterministic, cuda DT_CUDA_TILE=large"]["bitwise_equal"] is True,
               "large tiles")
        mx = s["matrix"]
        expect(mx["promise_kept"] is True and mx["rows"]["conv.wgrad atomic"]["rerun"] is False,
               f"matrix {mx}")
        au = s["audits"]
        expect(au["smallcnn-bn exact-all, 2 steps"] == {"identical": True,
                                                        "first_difference": None}, "audit same")
        expect(au["resnet18 exact-all, 2 steps of 32"]["first_difference"]["op"] == "conv2d",
               f"audit differs {au}")
        t = s["targets"]
        expect(t["smallcnn: deterministic step / atomic step <= 1.1"]["met"] is True, "det met")
        expect(t["smallcnn: exact step / atomic step <= 1.3"]["met"] is False, "exact missed")
        expect(t["smallcnn: exact@limbs step / atomic step <= 1.3"]["met"] is True, "limbs met")
        expect(t["resnet18: deterministic step / atomic step <= 1.1"]["met"] is False, "r18 det")
        expect(t["resnet18: exact step / atomic step <= 1.3"]["met"] is None, "skipped: missing")
        sm = t["smallcnn: PyTorch step / detrain deterministic step >= 1.0 (TF32 off)"]
        expect(sm["met"] is True and abs(sm["value"] - 1.25) < 1e-9, f"smallcnn vs torch {sm}")
        r18 = t["resnet18: PyTorch step / detrain deterministic step >= 0.7 (TF32 off)"]
        expect(r18["met"] is False and abs(r18["value"] - 0.5) < 1e-9,  # TF32 off: 20 ms
               f"resnet18 vs torch {r18}")
        expect("gpu_check: verdict target smallcnn: exact step / atomic step <= 1.3: 1.5, NOT met\n"
               in printed and "gpu_check: verdict target resnet18: exact step / atomic step <= "
               "1.3: None, figures missing\n" in printed and printed.count("verdict target") == 8,
               f"each target's verdict said:\n{printed}")
        expect([p["model"] for p in s["step_profiles"]] == ["smallcnn"]
               and all("op" not in d for d in s["detrain_step"]), "profiles kept apart")
        tl = s["tiles"]
        expect(tl["large_vs_small"] == {"conv.forward s1": 0.5, "gemm s2": 1.5}, f"tiles {tl}")
        expect(tl["bits_equal"] is True, "tile bits")
        ty = s["tiny"]
        expect(ty == {"tiny_vs_small": {"conv.wgrad tree s4": 0.25}, "bits_equal": True},
               f"tiny {ty}")
        op = s["optimizer"]
        expect(op == {"batched_vs_per_parameter": {"resnet18, 62 parameters": 0.25},
                      "bits_equal": True}, f"optimizer {op}")
        ch = s["channels"]  # atomic's null bits do not count against the pairs
        expect(ch == {"staged_vs_rows": {"bn.stats tree s3": 0.25, "bn.stats atomic s3": 0.5},
                      "bits_equal": True}, f"channels {ch}")
        out, work = os.path.join(root, "out"), os.path.join(root, "work")
        said = brief(script, "audit", os.path.join(out, "audit_resnet18_cpu_vs_cuda.json"), "r18")
        said += brief(script, "audit", os.path.join(out, "audit_cpu_vs_cuda.json"), "bn")
        said += brief(script, "audit", os.path.join(out, "none.json"), "none")
        said += brief(script, "matrix", os.path.join(out, "audit_matrix_cuda.json"), "m")
        for kind in ("steps", "peers", "kernels"):
            said += brief(script, kind, os.path.join(work, kind + ".jsonl"))
        expect(said == "gpu_check: verdict r18: DIFFERENT, first at step 0, conv2d (backward, "
               "weight grad)\ngpu_check: verdict bn: identical\n"
               "gpu_check: verdict none: no verdict (see check.log)\n"
               "gpu_check: verdict m: every mode but atomic stable under a rerun and the cpu's: "
               "True\ngpu_check: figure step smallcnn (x atomic's None ms): deterministic 1.05, "
               "exact 1.5, exact@limbs 1.25\n"
               "gpu_check: figure step resnet18 (x atomic's None ms): deterministic 1.2\n"
               "gpu_check: figure pytorch: smallcnn 2.5 ms, smallcnn deterministic 9.0 ms, "
               "resnet18 tf32 10.0 ms, resnet18 20.0 ms\n"
               "gpu_check: figure tiles large/small: 0.5 to 1.5, median 1.5, bits equal True\n"
               "gpu_check: figure tiny tiny/small: 0.25 to 0.25, median 0.25, bits equal True\n"
               "gpu_check: figure wgrad exact limbs/leaves: s5 0.500 (bits equal True)\n",
               f"--brief:\n{said}")
    if record_script:
        with tempfile.TemporaryDirectory() as root:
            run(script, root, "nvidia-smi\t0\t100\ncuda-core-tests\t1\t2000\n"
                "memcheck\t2\t3000\n")
            check_record(record_script, os.path.join(root, "out"), expect)
    with tempfile.TemporaryDirectory() as root:  # a deterministic mode unlike the cpu's
        _, s, _ = run(script, root, "nvidia-smi\t0\t100\n", matrix_tree_cpu=False)
        expect(s["matrix"]["promise_kept"] is False, "a broken promise in the matrix")
    with tempfile.TemporaryDirectory() as root:
        _, s, _ = run(script, root, "nvidia-smi\t0\t100\n", tile_bits=False)
        expect(s["tiles"]["bits_equal"] is False, "a tile pair with other bits is reported")
    with tempfile.TemporaryDirectory() as root:
        _, s, _ = run(script, root, "nvidia-smi\t0\t100\n", channel_bits=False)
        expect(s["channels"]["bits_equal"] is False, "a channel pair with other bits is reported")
    with tempfile.TemporaryDirectory() as root:
        rc, _, _ = run(script, root, "nvidia-smi\t0\t100\ncuda-core-tests\t1\t2000\n")
        expect(rc == 1, f"exit {rc} with a failed step")
    with tempfile.TemporaryDirectory() as root:  # compute-sanitizer missing or refusing the GPU
        rc, s, _ = run(script, root, "nvidia-smi\t0\t100\nmemcheck\t2\t3000\n")
        expect(rc == 0 and s["steps"][1]["status"] == "unavailable", f"memcheck unavailable {rc}")
    with tempfile.TemporaryDirectory() as root:  # exit 2 means unavailable for memcheck only
        rc, _, _ = run(script, root, "nvidia-smi\t0\t100\nmemcheck\t1\t3000\ntrain-a\t2\t9\n")
        expect(rc == 1, f"exit {rc} with memcheck findings and a step's exit 2")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main())
