#!/usr/bin/env python3
"""Runs a GoogleTest binary to the end of its list even when a test takes the process down with it:
a crash (a signal), a hang (no output for --hang-s seconds: killed), or a CUDA error that breaks
the device context for every later test in the process (cudaErrorIllegalAddress and the other
sticky errors: every later test would fail with it). The test that did it keeps its verdict (a
failure saying which), and the tests after it run again in a fresh process, as often as needed
within --budget-s. Writes one JUnit XML of every test's last verdict (as --gtest_output=xml
would, with each failure's output), prints the binaries' output as it comes, and exits 0 when
every test passed or was skipped, 1 otherwise (2 when the binary cannot list its tests).

usage: gtest_resume.py --xml OUT.xml [--budget-s S] [--hang-s S] BINARY [gtest flags...]
The flags go to every run; --gtest_filter picks the tests, as usual (scripts/gpu_check.sh)."""
import argparse
import os
import re
import select
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

# The CUDA runtime's sticky errors (the context is unusable after them), by name and by the text
# cudaGetErrorString gives them.
STICKY = re.compile(
    r"cudaError(IllegalAddress|LaunchFailure|HardwareStackError|IllegalInstruction|"
    r"MisalignedAddress|InvalidAddressSpace|InvalidPc|LaunchTimeout|Assert|ECCUncorrectable|"
    r"ContextIsDestroyed)\b|illegal memory access was encountered|unspecified launch failure|"
    r"illegal instruction was encountered|misaligned address|device-side assert triggered")
CHILD = [None]  # the test process running now (killed with this script)
RUN = re.compile(r"^\[ RUN      \] (\S+)")
END = re.compile(r"^\[ +(OK|FAILED|SKIPPED) +\] ([^\s,]+).*?(?: \((\d+) ms\))?$")


def listed(binary, flags):
    """The tests the flags select, in the binary's order (Suite.Name, parameters' prefixes kept)."""
    try:
        p = subprocess.run([binary, "--gtest_list_tests", *flags], capture_output=True, text=True)
    except OSError as e:
        print(f"gtest_resume.py: cannot run {binary}: {e.strerror}", flush=True)
        return None
    if p.returncode != 0:
        print(p.stdout + p.stderr, end="", flush=True)
        return None
    names, suite = [], ""
    for line in p.stdout.splitlines():
        if not line.strip() or line.startswith("Running main()"):
            continue
        if not line.startswith(" "):
            suite = line.split("#")[0].strip()
        else:
            names.append(suite + line.split("#")[0].strip())
    if "--gtest_also_run_disabled_tests" not in flags:  # listed, but never run
        names = [n for n in names if not re.search(r"(^|\.|/)DISABLED_", n)]
    return names


def run_once(binary, flags, names, hang_s, deadline, done):
    """Runs `names` in one process, putting each test's (verdict, ms, output lines) into `done` as
    it ends. Returns the tests that ended, in order, and the one that was running when the process
    died or hung (or None)."""
    others = [f for f in flags if not f.startswith("--gtest_filter")]
    cmd = [binary, *others, "--gtest_filter=" + ":".join(names)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    CHILD[0] = proc
    ended, current, lines, buf, last = [], None, [], b"", time.monotonic()
    hung = None
    while True:
        quiet, left = hang_s - (time.monotonic() - last), deadline - time.monotonic()
        if min(quiet, left) <= 0:
            hung = (f"hung: no output for {hang_s:g} s, killed" if quiet <= 0 else
                    "killed: the time budget is spent")
            break
        ready, _, _ = select.select([proc.stdout], [], [], min(quiet, left))
        if not ready:
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        last = time.monotonic()
        buf += chunk
        *complete, buf = buf.split(b"\n")
        for raw in complete:
            line = raw.decode("utf-8", "replace")
            print(line, flush=True)
            if m := RUN.match(line):
                current, lines = m.group(1), []
            elif (m := END.match(line)) and m.group(2) == current:
                done[current] = (m.group(1), int(m.group(3) or 0), lines)
                ended.append(current)
                current = None
            elif current is not None:
                lines.append(line)
    if buf:
        print(buf.decode("utf-8", "replace"), flush=True)
    if hung:
        os.killpg(proc.pid, signal.SIGKILL)
    rc = proc.wait()
    why = hung or (f"the process died (exit {rc}"
                   f"{', signal ' + signal.Signals(-rc).name if rc < 0 else ''})")
    if current is not None:  # died or hung inside a test
        done[current] = ("FAILED", 0, lines + [f"gtest_resume: {why} in this test"])
        ended.append(current)
        return ended, current
    if rc != 0 or hung:  # outside any test (its start, its end): what it did not run says why
        for name in names:
            if name not in ended:
                done[name] = ("FAILED", 0, [f"gtest_resume: not run: {why} outside any test"])
    return ended, None


def first_poisoning(order, done):
    """The first test in run order whose failure broke the context for the tests after it."""
    for name in order:
        verdict, _, lines = done.get(name, ("", 0, []))
        if verdict == "FAILED" and any(STICKY.search(l) for l in lines):
            return name
    return None


def write_xml(path, names, verdicts):
    suites = {}
    for name in names:
        suite, _, test = name.rpartition(".")
        suites.setdefault(suite, []).append((test, verdicts.get(name)))
    fails = sum(1 for v in verdicts.values() if v and v[0] == "FAILED")
    root = ET.Element("testsuites", tests=str(len(names)), failures=str(fails), name="AllTests")
    for suite, cases in suites.items():
        s = ET.SubElement(root, "testsuite", name=suite, tests=str(len(cases)))
        for test, v in cases:
            verdict, ms, lines = v or ("NOTRUN", 0, ["gtest_resume: not run (the time ran out)"])
            c = ET.SubElement(s, "testcase", name=test, classname=suite, time=f"{ms / 1000:.3f}")
            if verdict == "FAILED":
                ET.SubElement(c, "failure", message=(lines or ["failed"])[0][:300]).text = \
                    "\n".join(lines)
            elif verdict in ("SKIPPED", "NOTRUN"):
                ET.SubElement(c, "skipped", message=" ".join(lines)[:300])
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--xml", required=True)
    ap.add_argument("--budget-s", type=float, default=300)
    ap.add_argument("--hang-s", type=float, default=60)
    ap.add_argument("binary")
    ap.add_argument("flags", nargs=argparse.REMAINDER)
    a = ap.parse_args()
    deadline = time.monotonic() + a.budget_s
    names = listed(a.binary, a.flags)
    if names is None:
        print(f"gtest_resume.py: {a.binary} could not list its tests", file=sys.stderr)
        return 2
    verdicts, todo, restarts = {}, list(names), 0

    def killed(signum, _frame):  # a time limit around this script: keep what is known
        if CHILD[0] is not None and CHILD[0].poll() is None:
            os.killpg(CHILD[0].pid, signal.SIGKILL)
        write_xml(a.xml, names, verdicts)
        print(f"gtest_resume: stopped by {signal.Signals(signum).name}; the XML holds the tests "
              "that ended", flush=True)
        sys.exit(1)

    signal.signal(signal.SIGTERM, killed)
    while todo and time.monotonic() < deadline:
        order, died_in = run_once(a.binary, a.flags, todo, a.hang_s, deadline, verdicts)
        write_xml(a.xml, names, verdicts)
        stop = first_poisoning(order, verdicts) or died_in  # the earlier: a hang ends the run
        if stop is None:
            break
        # The tests after the one that broke the process, again in a fresh process.
        todo = todo[todo.index(stop) + 1:]
        for n in todo:
            verdicts.pop(n, None)
        if todo:
            restarts += 1
            print(f"gtest_resume: {stop} broke the process; the {len(todo)} tests after it run "
                  "again in a fresh one", flush=True)
    write_xml(a.xml, names, verdicts)
    failed = [n for n in names if verdicts.get(n, ("NOTRUN",))[0] in ("FAILED", "NOTRUN")]
    print(f"gtest_resume: {len(names)} tests, {len(failed)} failed or not run, "
          f"{restarts} restarts", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
