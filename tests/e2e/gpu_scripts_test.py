#!/usr/bin/env python3
"""scripts/gpu_check.sh's gates, without a GPU, with stand-in tools: the host's facts as its first
line of output whatever happens next (a stand-in nvidia-smi that answers or fails, no kit at all),
a kit that needs a newer glibc than the host's (exit 2 with the reason, no step run), also when
only the packed kit is there (unpacked first, by tar or by Python), and a rerun of chosen steps
(GPU_CHECK_STEPS) whose hash pair compares the GPU side with the cpu side the kit ships (equal,
DIFFERENT), in its summary and its record as well.
usage: gpu_scripts_test.py REPO_ROOT"""
import json
import os
import stat
import subprocess
import sys
import tempfile

from expectations import Expectations

# Stand-in nvidia-smi: two GPUs, or (FAKE_SMI=fail) a driver it cannot reach.
NVIDIA_SMI = """#!/bin/sh
if [ "$FAKE_SMI" = fail ]; then
    echo "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."
    exit 9
fi
echo "NVIDIA H200, 570.86.15, 143000 MiB"
echo "NVIDIA H200, 570.86.15, 142000 MiB"
"""
# Stand-in detrain: a run writes a result.json with FAKE_SHA_<device> as its weights_sha256.
DETRAIN = """#!/bin/sh
out= dev=
while [ $# -gt 0 ]; do
    case "$1" in --out) out=$2 ;; --device) dev=$2 ;; esac
    shift
done
[ -n "$out" ] || exit 0
mkdir -p "$out"
if [ "$dev" = cuda ]; then sha=$FAKE_SHA_cuda; else sha=$FAKE_SHA_cpu; fi
printf '{"weights_sha256": "%s"}' "$sha" > "$out/result.json"
"""
A, B = "a" * 64, "b" * 64


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def main():
    root = sys.argv[1]
    expect = Expectations()

    with tempfile.TemporaryDirectory() as tmp:
        kit, tools = (os.path.join(tmp, d) for d in ("kit", "tools"))
        os.makedirs(os.path.join(kit, "bin"))
        os.makedirs(tools)
        for prog in ("dt_test_cuda", "dt_test_device_ops"):
            executable(os.path.join(kit, "bin", prog), "#!/bin/sh\nexit 0\n")
        executable(os.path.join(kit, "bin", "detrain"), DETRAIN)
        executable(os.path.join(tools, "nvidia-smi"), NVIDIA_SMI)
        env = dict(os.environ, KIT_DIR=kit, FAKE_SHA_cpu=A, FAKE_SHA_cuda=A,
                   PATH=tools + os.pathsep + os.environ["PATH"])
        check = os.path.join(root, "scripts", "gpu_check.sh")

        # The host's facts come first, also where nothing else can run (no kit here).
        for smi, gpus in (("", "gpus=NVIDIA H200, NVIDIA H200; driver=570.86.15; "),
                          ("fail", "gpus=unknown; driver=unknown; ")):
            p = subprocess.run([check, os.path.join(tmp, "facts")], capture_output=True,
                               text=True, env=dict(env, KIT_DIR=os.path.join(tmp, "none"),
                                                   FAKE_SMI=smi))
            first = (p.stdout.splitlines() or [""])[0]
            expect(p.returncode == 2 and "no kit in" in p.stderr, f"no kit: {p.returncode}")
            expect(first.startswith("gpu_check: host facts: " + gpus) and "; glibc=2." in first
                   and "; python3=3." in first and "; torch=" in first
                   and ("; gpu_free=143000 MiB, 142000 MiB; " in first if not smi else
                        "; gpu_free=unknown; " in first) and first.endswith(" MiB"),
                   f"the host's facts first (nvidia-smi {smi or 'answering'}): {first!r}")

        with open(os.path.join(kit, "GLIBC"), "w") as f:
            f.write("99.0\n")
        out = os.path.join(tmp, "out")
        p = subprocess.run([check, out], env=env, capture_output=True, text=True)
        expect(p.returncode == 2, f"a kit for a newer glibc: exit {p.returncode}, expected 2")
        expect("needs glibc 99.0" in p.stderr, f"the glibc gate says why: {p.stderr!r}")
        expect(p.stdout.startswith("gpu_check: host facts: gpus=NVIDIA H200"), "facts first")
        expect(not os.path.exists(os.path.join(out, "summary.json")), "no step ran")

        # The packed kit alone (KIT_DIR.tar.xz, no folder), unpacked with tar's xz and, where
        # tar cannot, with Python's tarfile; then the same glibc gate (not "no kit").
        no_tar = os.path.join(tmp, "no-tar")
        os.makedirs(no_tar)
        executable(os.path.join(no_tar, "tar"), "#!/bin/sh\nexit 1\n")
        for name, path in (("tar", env["PATH"]), ("python", no_tar + os.pathsep + env["PATH"])):
            packed = os.path.join(tmp, "packed-" + name)
            subprocess.run(["tar", "-C", kit, "-cJf", packed + ".tar.xz", "."], check=True)
            p = subprocess.run([check, out], env=dict(env, KIT_DIR=packed, PATH=path),
                               capture_output=True, text=True)
            expect(p.returncode == 2 and "needs glibc 99.0" in p.stderr,
                   f"the packed kit, unpacked by {name}, is gated: {p.returncode} {p.stderr!r}")
            expect(os.access(os.path.join(packed, "bin", "detrain"), os.X_OK),
                   f"unpacked by {name}: bin/detrain is there and executable")

        # A rerun of chosen steps (GPU_CHECK_STEPS): those run, the others are listed skipped;
        # the hash pair's GPU side against the cpu side the kit ships.
        with open(os.path.join(kit, "GLIBC"), "w") as f:
            f.write("2.0\n")
        shipped = os.path.join(kit, "cpu", "smallcnn-exact")
        os.makedirs(shipped)
        with open(os.path.join(shipped, "result.json"), "w") as f:
            json.dump({"weights_sha256": A}, f)
        chosen = "^detrain-info$|^train-smallcnn-exact-cuda$"
        for case, cuda_sha, verdict in (
                ("equal", A, f"equal ({A[:16]})"),
                ("different", B, f"DIFFERENT (cpu {A[:16]}, cuda {B[:16]})")):
            rerun = os.path.join(tmp, "rerun-" + case)
            p = subprocess.run([check, rerun], env=dict(env, GPU_CHECK_STEPS=chosen,
                                                        FAKE_SHA_cuda=cuda_sha),
                               capture_output=True, text=True, timeout=120)
            log_path = os.path.join(rerun, "check.log")
            log = open(log_path).read() if os.path.exists(log_path) else ""
            ran = sorted(l.split(" (limit")[0][3:] for l in log.splitlines()
                         if l.startswith("== ") and " (limit " in l)
            expect(ran == ["detrain-info", "train-smallcnn-exact-cuda"],
                   f"{case}: GPU_CHECK_STEPS runs the chosen steps: {ran}")
            expect("== audit-matrix-cuda: skipped (not selected by GPU_CHECK_STEPS)" in log,
                   f"{case}: the others are listed as not selected")
            said = f"verdict smallcnn-exact cpu==cuda: {verdict}\n"
            expect("gpu_check: " + said in p.stdout,
                   f"{case}: the pair's verdict as soon as the GPU side ends:\n{p.stdout}")
            expect(p.returncode == 0, f"{case}: chosen steps that pass: exit {p.returncode}\n"
                   f"{p.stderr}")
            s = json.load(open(os.path.join(rerun, "summary.json")))
            expect(s["cpu_vs_gpu"]["smallcnn:exact"] == {"cpu": A, "cuda": cuda_sha,
                                                         "bitwise_equal": cuda_sha == A}
                   and s["host"]["driver"] == "570.86.15", f"{case}: the summary's pair {s}")
            record = open(os.path.join(rerun, "record.md")).read()
            expect(record.startswith("### ") and "Host: gpus NVIDIA H200, NVIDIA H200; " in record
                   and "- " + said in record, f"{case}: the record:\n{record}")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main())
