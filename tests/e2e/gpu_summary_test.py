#!/usr/bin/env python3
"""scripts/gpu_summary.py on made-up outputs of a GPU check: the host's facts, hash pairs equal and
unequal against the cpu side the kit ships, the speed targets met, missed and missing, the tests'
counts, the exit status from the steps' statuses, the lines --brief says as a step ends (audits'
and the matrix's verdicts, the benches' figures), and record.md: the steps, a failed one's log,
the failing tests and what the check said, targets included.
usage: gpu_summary_test.py SUMMARY_SCRIPT"""
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
    steps = os.path.join(root, "steps.tsv")
    write(steps, steps_text)
    # the cpu sides the kit ships, then the GPU runs
    for run_dir, sha in (("kit/cpu/smallcnn-deterministic", "bb"), ("kit/cpu/smallcnn-exact", "aa"),
                         ("work/smallcnn-exact-cuda", "aa"),
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
        {"op": "gemm_peak", "tile": "large", "shape": "s9", "ms": 5.0, "tflops": 27.5,
         "fp32_peak_tflops": 55.0, "of_peak": 0.5},
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
    write(os.path.join(out, "check.log"), LOG)
    write(os.path.join(out, "tests_cuda.xml"), XML)
    p = subprocess.run([sys.executable, script, out, steps, work, kit, "340", str(time.time()),
                        "smallcnn:deterministic smallcnn:exact", FACTS], capture_output=True,
                       text=True)
    return p.returncode, json.load(open(os.path.join(out, "summary.json"))), p.stdout


FACTS = ("gpus=NVIDIA H200; driver=570.86.15; glibc=2.35; python3=3.10.12; torch=none; "
         "gpu_free=143000 MiB; host_free=120000 MiB")


def brief(script, *args):
    return subprocess.run([sys.executable, script, "--brief", *args], capture_output=True,
                          text=True).stdout


# check.log as gpu_check.sh writes it: a step's header, its output, the verdicts it said
LOG = ("host facts: ...\n== cuda-core-tests (limit 60 s): dt_test_cuda\n"
       "[  FAILED  ] CommonDevice.Breaks\n"
       "gpu_check: verdict cuda-core-tests: 4 tests, 2 failed, 1 skipped\n"
       "== train-a (limit 6 s): detrain train\ngpu_check: figure pytorch: smallcnn 2.5 ms\n")
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


def main():
    script = sys.argv[1]
    expect = Expectations()

    with tempfile.TemporaryDirectory() as root:
        rc, s, printed = run(script, root, "nvidia-smi\t0\t100\ntrain-a\tskipped\t0\n")
        expect(rc == 0, f"exit {rc} with every step passed or skipped")
        expect(s["commit"] == "abc123", "commit")
        expect(s["host"]["torch"] == "none" and s["host"]["gpu_free"] == "143000 MiB"
               and s["gpu"] == "NVIDIA H200, driver 570.86.15", f"host facts {s['host']}")
        h = s["cpu_vs_gpu"]
        expect(h["smallcnn:exact"]["bitwise_equal"] is True, "equal hashes")
        expect(h["smallcnn:deterministic"] == {"cpu": "bb", "cuda": "cc", "bitwise_equal": False},
               f"a shipped cpu hash unlike the GPU's differs: {h['smallcnn:deterministic']}")
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
               "gpu_check: figure gemm s9 large tile: 27.5 TFLOP/s, 0.5 of the FP32 peak 55.0\n"
               "gpu_check: figure tiles large/small: 0.5 to 1.5, median 1.5, bits equal True\n"
               "gpu_check: figure tiny tiny/small: 0.25 to 0.25, median 0.25, bits equal True\n",
               f"--brief:\n{said}")
        expect(s["tests"] == {"tests_device_ops.xml": None, "tests_cuda.xml": {
            "tests": 4, "failed": 2, "skipped": 1,
            "failing": ["CommonDevice.Breaks", "CommonDevice.Crashes"]}}, f"tests {s['tests']}")
        said = brief(script, "tests", os.path.join(out, "tests_cuda.xml"), "cuda-core-tests")
        said += brief(script, "tests", os.path.join(out, "none.xml"), "none")
        expect(said == "gpu_check: verdict cuda-core-tests: 4 tests, 2 failed (CommonDevice.Breaks,"
               " CommonDevice.Crashes), 1 skipped\n", f"the tests' counts, failing tests: {said}")
    with tempfile.TemporaryDirectory() as root:  # the record, of a check with a failed step
        rc, _, _ = run(script, root, "detrain-info\t0\t100\ncuda-core-tests\t1\t2000\n"
                       "train-a\tskipped\t0\n")
        md = open(os.path.join(root, "out", "record.md")).read()
        log = open(os.path.join(root, "out", "check.log")).read()
        expect(rc == 1, f"exit {rc} with a failed step")
        expect(md.startswith(f"### {time.strftime('%Y-%m-%d', time.gmtime())}: NVIDIA H200, "
                             "driver 570.86.15, commit abc123\n")
               and "Host: gpus NVIDIA H200; driver 570.86.15; glibc 2.35; python3 3.10.12; "
               "torch none; gpu_free 143000 MiB; host_free 120000 MiB." in md, f"dated:\n{md}")
        expect("2 of 3 steps passed or were skipped; cuda-core-tests exit 1." in md
               and "cuda-core-tests, end of its log:\n```\n[  FAILED  ] CommonDevice.Breaks\n"
               "gpu_check: verdict cuda-core-tests: 4 tests, 2 failed, 1 skipped\n```" in md,
               f"the failed step and the end of its log:\n{md}")
        said = ["verdict cuda-core-tests: 4 tests, 2 failed, 1 skipped",
                "figure pytorch: smallcnn 2.5 ms",
                "verdict target smallcnn: exact step / atomic step <= 1.3: 1.5, NOT met"]
        expect(all(f"\n- {l}\n" in md for l in said) and md.index(said[0]) < md.index(said[1])
               < md.index(said[2]), f"what the check said, in its order:\n{md}")
        expect(log.count("gpu_check: verdict target ") == 8, "the targets' verdicts in the log")
    with tempfile.TemporaryDirectory() as root:  # a deterministic mode unlike the cpu's
        _, s, _ = run(script, root, "nvidia-smi\t0\t100\n", matrix_tree_cpu=False)
        expect(s["matrix"]["promise_kept"] is False, "a broken promise in the matrix")
    with tempfile.TemporaryDirectory() as root:
        _, s, _ = run(script, root, "nvidia-smi\t0\t100\n", tile_bits=False)
        expect(s["tiles"]["bits_equal"] is False, "a tile pair with other bits is reported")
    with tempfile.TemporaryDirectory() as root:
        _, s, _ = run(script, root, "nvidia-smi\t0\t100\n", channel_bits=False)
        expect(s["channels"]["bits_equal"] is False, "a channel pair with other bits is reported")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main())
