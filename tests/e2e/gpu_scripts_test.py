#!/usr/bin/env python3
"""The GPU check's gates, without a GPU: scripts/gpu_memcheck.sh under a stand-in compute-sanitizer
(one that refuses the device, as seen on gVisor GPU hosts: exit 2 after the probe, nothing else
run; one that runs the programs: exit 0 when clean, 1 on a finding) and scripts/gpu_check.sh with
a kit that needs a newer glibc than the host's (exit 2 with the reason, no step run), also when
only the packed kit is there (unpacked first, by tar or by Python), and a rerun of chosen steps
(GPU_CHECK_STEPS).
usage: gpu_scripts_test.py REPO_ROOT"""
import os
import stat
import subprocess
import sys
import tempfile

from expectations import Expectations

# Stand-in compute-sanitizer: FAKE_SANITIZER=refuse says what gVisor's said; otherwise it drops
# its options, runs the program and logs it, and reports a finding (exit 3) for programs named in
# FAKE_FINDING.
SANITIZER = """#!/bin/sh
if [ "$FAKE_SANITIZER" = refuse ]; then
    echo "========= Error: Device not supported"
    echo "unspecified launch failure (999)"
    exit 1
fi
while [ "${1#--}" != "$1" ]; do
    case "$1" in --tool|--error-exitcode|--print-limit) shift 2 ;; *) shift ;; esac
done
echo "$(basename "$1")" >> "$FAKE_LOG"
case " $FAKE_FINDING " in *" $(basename "$1") "*) exit 3 ;; esac
exec "$@"
"""


def executable(path, text):
    with open(path, "w") as f:
        f.write(text)
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR)


def main():
    root = sys.argv[1]
    expect = Expectations()

    with tempfile.TemporaryDirectory() as tmp:
        kit, tools, log = (os.path.join(tmp, d) for d in ("kit", "tools", "ran.log"))
        os.makedirs(os.path.join(kit, "bin"))
        os.makedirs(tools)
        for prog in ("detrain", "dt_test_cuda", "dt_test_device_ops"):
            executable(os.path.join(kit, "bin", prog), "#!/bin/sh\nexit 0\n")
        executable(os.path.join(tools, "compute-sanitizer"), SANITIZER)
        env = dict(os.environ, KIT_DIR=kit, FAKE_LOG=log,
                   PATH=tools + os.pathsep + os.environ["PATH"])

        def memcheck(**extra):
            if os.path.exists(log):
                os.remove(log)
            p = subprocess.run([os.path.join(root, "scripts", "gpu_memcheck.sh"), "60"],
                               env=dict(env, **extra), capture_output=True, text=True)
            ran = open(log).read().split() if os.path.exists(log) else []
            return p.returncode, p.stdout + p.stderr, ran

        rc, text, ran = memcheck(FAKE_SANITIZER="refuse")
        expect(rc == 2, f"a sanitizer refusing the device: exit {rc}, expected 2")
        expect("cannot use this device" in text and "Device not supported" in text,
               f"the refusal is explained: {text!r}")
        rc, text, ran = memcheck()
        expect(rc == 0, f"clean runs: exit {rc}\n{text}")
        expect(ran.count("dt_test_device_ops") == 1 and ran.count("detrain") == 2
               and ran.count("dt_test_cuda") == 2, f"the probe and the four runs: {ran}")
        rc, text, ran = memcheck(FAKE_FINDING="detrain")
        expect(rc == 1, f"a finding: exit {rc}, expected 1")

        with open(os.path.join(kit, "GLIBC"), "w") as f:
            f.write("99.0\n")
        out = os.path.join(tmp, "out")
        p = subprocess.run([os.path.join(root, "scripts", "gpu_check.sh"), out], env=env,
                           capture_output=True, text=True)
        expect(p.returncode == 2, f"a kit for a newer glibc: exit {p.returncode}, expected 2")
        expect("needs glibc 99.0" in p.stderr, f"the glibc gate says why: {p.stderr!r}")
        expect(not os.path.exists(os.path.join(out, "summary.json")), "no step ran")

        # The packed kit alone (KIT_DIR.tar.xz, no folder), unpacked with tar's xz and, where
        # tar cannot, with Python's tarfile; then the same glibc gate (not "no kit").
        no_tar = os.path.join(tmp, "no-tar")
        os.makedirs(no_tar)
        executable(os.path.join(no_tar, "tar"), "#!/bin/sh\nexit 1\n")
        for name, path in (("tar", env["PATH"]), ("python", no_tar + os.pathsep + env["PATH"])):
            packed = os.path.join(tmp, "packed-" + name)
            subprocess.run(["tar", "-C", kit, "-cJf", packed + ".tar.xz", "."], check=True)
            p = subprocess.run([os.path.join(root, "scripts", "gpu_check.sh"), out],
                               env=dict(env, KIT_DIR=packed, PATH=path), capture_output=True,
                               text=True)
            expect(p.returncode == 2 and "needs glibc 99.0" in p.stderr,
                   f"the packed kit, unpacked by {name}, is gated: {p.returncode} {p.stderr!r}")
            expect(os.access(os.path.join(packed, "bin", "detrain"), os.X_OK),
                   f"unpacked by {name}: bin/detrain is there and executable")

        # A rerun of chosen steps (GPU_CHECK_STEPS): those run, the others are listed skipped.
        with open(os.path.join(kit, "GLIBC"), "w") as f:
            f.write("2.0\n")
        rerun = os.path.join(tmp, "rerun")
        chosen = "^detrain-info$|^train-smallcnn-exact-(cpu|cuda)$"
        p = subprocess.run([os.path.join(root, "scripts", "gpu_check.sh"), rerun],
                           env=dict(env, GPU_CHECK_STEPS=chosen), capture_output=True, text=True,
                           timeout=120)
        log = open(os.path.join(rerun, "check.log")).read() if os.path.exists(
            os.path.join(rerun, "check.log")) else ""
        ran = sorted(l.split(" (limit")[0][3:] for l in log.splitlines()
                     if l.startswith("== ") and " (limit " in l)
        expect(ran == ["detrain-info", "train-smallcnn-exact-cpu", "train-smallcnn-exact-cuda"],
               f"GPU_CHECK_STEPS runs the chosen steps: {ran}")
        expect("== memcheck: skipped (not selected by GPU_CHECK_STEPS)" in log,
               "the others are listed as not selected")
        expect(p.returncode == 0, f"chosen steps that pass: exit {p.returncode}\n{p.stderr}")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main())
