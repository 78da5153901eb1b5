#!/usr/bin/env python3
"""scripts/gtest_resume.py on a stand-in GoogleTest binary whose tests crash, hang, break the "CUDA
context" (a sticky error that fails every later test of the process) or fail on their own: each
test gets its own verdict, the tests after a broken process run again in a fresh one, and the
XML holds them all.
usage: gtest_resume_test.py REPO_ROOT"""
import os
import stat
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from expectations import Expectations

# The stand-in: gtest's output format and flags (--gtest_list_tests, --gtest_filter of exact
# names). A "poison" test leaves the process failing every later test with a sticky error, as a
# CUDA illegal address does; "crash" dies by SIGSEGV; "hang" sleeps.
FAKE = r"""#!/usr/bin/env python3
import os, signal, sys, time
TESTS = ["A.ok1", "A.crash", "A.ok2", "B.poison", "B.after", "B.genuine", "B.skip", "C.hang",
         "C.last", "C.DISABLED_off"]
args = sys.argv[1:]
pick = TESTS
for a in args:
    if a.startswith("--gtest_filter="):
        pick = [t for t in TESTS if t in a.split("=", 1)[1].split(":")]
if "--gtest_list_tests" in args:
    suite = None
    for t in pick:
        s, n = t.split(".")
        if s != suite:
            print(s + ".")
            suite = s
        print("  " + n)
    sys.exit(0)
with open(os.environ["FAKE_RUNS"], "a") as f:
    f.write(" ".join(pick) + "\n")
poisoned = False
if os.environ.get("FAKE_DIE_AT_START"):
    os.kill(os.getpid(), signal.SIGABRT)
for t in pick:
    print("[ RUN      ] " + t, flush=True)
    n = t.split(".")[1]
    if n == "crash":
        os.kill(os.getpid(), signal.SIGSEGV)
    if n == "hang" and not poisoned:  # (a broken context fails every test at once)
        time.sleep(float(os.environ.get("FAKE_HANG_S", "3600")))
    if poisoned:
        print("x.cu:1: Failure\nconv2d_forward: cudaErrorIllegalAddress: an illegal memory access")
        print("[  FAILED  ] " + t + " (1 ms)", flush=True)
    elif n == "poison":
        poisoned = True
        print("x.cu:2: Failure\nExpected equality of these values:\n  err\n    Which is: cudaErrorIllegalAddress")
        print("[  FAILED  ] " + t + " (2 ms)", flush=True)
    elif n == "genuine":
        print("x.cu:3: Failure\nbits differ at element 7")
        print("[  FAILED  ] " + t + " (3 ms)", flush=True)
    elif n == "skip":
        print("x.cu:4: Skipped\nno CUDA device on this machine")
        print("[  SKIPPED ] " + t + " (0 ms)", flush=True)
    else:
        print("[       OK ] " + t + " (4 ms)", flush=True)
print("[  FAILED  ] 1 test, listed below:")
sys.exit(1 if poisoned else 0)
"""


def main():
    root = sys.argv[1]
    expect = Expectations()
    script = os.path.join(root, "scripts", "gtest_resume.py")
    with tempfile.TemporaryDirectory() as tmp:
        fake, xml, runs = (os.path.join(tmp, f) for f in ("fake_test", "out.xml", "runs.log"))
        with open(fake, "w") as f:
            f.write(FAKE)
        os.chmod(fake, os.stat(fake).st_mode | stat.S_IXUSR)

        def resume(*opts, gtest=(), **env):
            for path in (xml, runs):
                if os.path.exists(path):
                    os.remove(path)
            p = subprocess.run([sys.executable, script, "--xml", xml, *opts, fake, *gtest],
                               env=dict(os.environ, FAKE_RUNS=runs, **env),
                               capture_output=True, text=True, timeout=60)
            cases = {}
            if os.path.exists(xml):
                for c in ET.parse(xml).getroot().iter("testcase"):
                    fail, skip = c.find("failure"), c.find("skipped")
                    cases[c.get("classname") + "." + c.get("name")] = (
                        "failed" if fail is not None else "skipped" if skip is not None else "ok",
                        (fail.text or "") if fail is not None else
                        (skip.get("message") or "") if skip is not None else "")
            ran = open(runs).read().splitlines() if os.path.exists(runs) else []
            return p, cases, ran

        p, cases, ran = resume("--hang-s", "5")  # (seconds of silence: CI load-proof)
        verdict = {n: v for n, (v, _) in cases.items()}
        expect(p.returncode == 1, f"failures give exit 1, got {p.returncode}: {p.stderr}")
        expect(verdict == {"A.ok1": "ok", "A.crash": "failed", "A.ok2": "ok",
                           "B.poison": "failed", "B.after": "ok", "B.genuine": "failed",
                           "B.skip": "skipped", "C.hang": "failed", "C.last": "ok"},
               f"each test its own verdict (disabled ones left out): {verdict}")
        expect("signal SIGSEGV" in cases.get("A.crash", ("", ""))[1],
               f"the crash is named: {cases.get('A.crash')}")
        expect("hung" in cases.get("C.hang", ("", ""))[1], f"the hang is named: {cases.get('C.hang')}")
        expect("cudaErrorIllegalAddress" in cases.get("B.poison", ("", ""))[1],
               f"the sticky error is the poisoning test's failure: {cases.get('B.poison')}")
        expect("bits differ" in cases.get("B.genuine", ("", ""))[1],
               f"a failure of its own keeps its output: {cases.get('B.genuine')}")
        # Four processes: the whole list, after the crash, after the poisoning, after the hang.
        expect(len(ran) == 4 and ran[1].startswith("A.ok2") and ran[2].startswith("B.after")
               and ran[3] == "C.last", f"the runs resume after each breaking test: {ran}")
        expect("3 restarts" in p.stdout, f"the restarts are counted: {p.stdout[-300:]}")

        # The budget ends the hang and leaves the tests after it not run (a failure: incomplete).
        p, cases, ran = resume("--budget-s", "8", "--hang-s", "60",
                               gtest=["--gtest_filter=A.ok1:C.hang:C.last"])
        expect(p.returncode == 1, f"an incomplete run gives exit 1, got {p.returncode}")
        expect("budget" in cases.get("C.hang", ("", ""))[1],
               f"the hang is cut by the budget: {cases.get('C.hang')}")
        expect(cases.get("C.last", ("", ""))[0] == "skipped" and
               "not run" in cases.get("C.last", ("", ""))[1],
               f"what the budget left out says so: {cases.get('C.last')}")

        # A time limit around the script (gpu_check.sh's step: timeout's SIGTERM): the child goes
        # with it and the XML keeps the tests that ended.
        os.remove(xml)
        p = subprocess.run(["timeout", "8", sys.executable, script, "--xml", xml, fake,
                            "--gtest_filter=A.ok1:C.hang:C.last"],
                           env=dict(os.environ, FAKE_RUNS=runs), capture_output=True, text=True,
                           timeout=60)
        kept = {c.get("classname") + "." + c.get("name"): c.find("skipped") is None
                for c in ET.parse(xml).getroot().iter("testcase")} if os.path.exists(xml) else {}
        expect(p.returncode != 0 and kept == {"A.ok1": True, "C.hang": False, "C.last": False},
               f"a SIGTERM keeps what ended: exit {p.returncode}, {kept}")

        # A clean list: one process, exit 0.
        p, cases, ran = resume(gtest=["--gtest_filter=A.ok1:B.skip:C.last"])
        expect(p.returncode == 0 and len(ran) == 1, f"clean: exit {p.returncode}, runs {ran}")
        expect(sorted(cases) == ["A.ok1", "B.skip", "C.last"],
               f"the XML lists the filter's tests: {sorted(cases)}")

        # A binary that dies before its first test: those tests say so (not "time ran out").
        p, cases, ran = resume(gtest=["--gtest_filter=A.ok1:C.last"], FAKE_DIE_AT_START="1")
        expect(p.returncode == 1 and all(v == "failed" and "outside any test" in why
                                         for v, why in cases.values()) and len(cases) == 2,
               f"a death at start is every test's failure: {p.returncode} {cases}")

        # A binary that cannot list its tests: exit 2, with its words.
        p = subprocess.run([sys.executable, script, "--xml", xml, "/bin/false"],
                           capture_output=True, text=True)
        expect(p.returncode == 2, f"an unlistable binary gives exit 2, got {p.returncode}")
        p = subprocess.run([sys.executable, script, "--xml", xml, os.path.join(tmp, "missing")],
                           capture_output=True, text=True)
        expect(p.returncode == 2 and "cannot run" in p.stdout + p.stderr,
               f"a missing binary is named, exit 2: {p.returncode} {p.stdout}{p.stderr}")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main())
