#!/usr/bin/env python3
"""Every compile of this build carries the numeric flags that fix float evaluation order
(cmake/dt_options.cmake, dt_numeric_flags): C and C++ with -ffp-contract=off, CUDA with
--fmad=false (and -ffp-contract=off for its host side), and none with a flag that lets the
compiler reassociate, contract or round otherwise (-ffast-math and its parts, -Ofast,
-ffp-contract=fast or on; nvcc's --use_fast_math, --fmad=true, --ftz=true, --prec-div=false,
--prec-sqrt=false). A target that forgets dt_numeric_flags compiles a*b+c as an fma where the
compiler sees fit (g++'s default in GNU mode, nvcc's default), and its results stop matching
across instruction sets and between CPU and GPU; no test of bits would say which target it was.
Reads the build's compile_commands.json (CMAKE_EXPORT_COMPILE_COMMANDS).
usage: numeric_flags_test.py BUILD_DIR"""
import json
import os
import shlex
import sys

from expectations import Expectations

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

FORBIDDEN = (
    # host compilers: fast math and the parts of it that change results
    "-ffast-math", "-Ofast", "-funsafe-math-optimizations", "-fassociative-math",
    "-freciprocal-math", "-ffinite-math-only", "-fno-signed-zeros", "-ffp-contract=fast",
    "-ffp-contract=on",
    # nvcc: fast math, contraction, flushed subnormals, approximate division and square root
    "--use_fast_math", "-use_fast_math", "--fmad=true", "-fmad=true", "--ftz=true", "-ftz=true",
    "--prec-div=false", "-prec-div=false", "--prec-sqrt=false", "-prec-sqrt=false")


def words(entry):
    if "arguments" in entry:
        return entry["arguments"]
    return shlex.split(entry["command"])


def flags_of(args):
    """The compiler's own flags, and those nvcc hands its host compiler (-Xcompiler=a,b)."""
    out = []
    for i, a in enumerate(args):
        if a.startswith("-Xcompiler="):
            out += a[len("-Xcompiler="):].split(",")
        elif a == "-Xcompiler" and i + 1 < len(args):
            out += args[i + 1].split(",")
        else:
            out.append(a)
    return out


def check(entries, expect):
    """expect(...) for each compile; returns (C/C++ compiles, CUDA compiles) seen."""
    cxx = cuda = 0
    for e in entries:
        src = e["file"]
        name = os.path.relpath(os.path.join(e.get("directory", "."), src), ROOT)
        flags = flags_of(words(e))
        is_cuda = src.endswith((".cu", ".cuh"))
        if not is_cuda and not src.endswith((".c", ".cc", ".cpp", ".cxx")):
            continue
        if is_cuda:
            cuda += 1
            expect("--fmad=false" in flags or "-fmad=false" in flags,
                   f"{name}: a CUDA compile without --fmad=false (link dt_numeric_flags)")
        else:
            cxx += 1
        expect("-ffp-contract=off" in flags,
               f"{name}: a compile without -ffp-contract=off (link dt_numeric_flags)")
        bad = sorted(set(flags) & set(FORBIDDEN))
        expect(not bad, f"{name}: compiled with {' '.join(bad)}, which lets float order change")
    return cxx, cuda


def self_test():
    """The check above fails on each kind of bad compile (a check that cannot fail says nothing)."""
    good = {"file": "/r/a.cpp", "directory": "/r", "command": "g++ -O3 -ffp-contract=off -c a.cpp"}
    cases = [
        ({"file": "/r/b.cpp", "directory": "/r", "command": "g++ -O3 -c b.cpp"}, "without"),
        ({"file": "/r/c.cu", "directory": "/r",
          "command": "nvcc -O3 -Xcompiler=-ffp-contract=off -c c.cu"}, "--fmad=false"),
        ({"file": "/r/d.cpp", "directory": "/r",
          "arguments": ["g++", "-ffp-contract=off", "-ffast-math", "-c", "d.cpp"]}, "-ffast-math"),
    ]
    ok = True
    for bad, says in cases:
        fails = []
        check([good, bad], lambda cond, what: fails.append(what) if not cond else None)
        ok = ok and len(fails) == 1 and says in fails[0]
    fine = []
    check([good, {"file": "/r/e.cu", "directory": "/r",
                  "command": "nvcc --fmad=false -Xcompiler=-Wall,-ffp-contract=off -c e.cu"}],
          lambda cond, what: fine.append(what) if not cond else None)
    return ok and not fine


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__)
    path = os.path.join(argv[1], "compile_commands.json")
    expect = Expectations()
    expect(self_test(), "the check does not tell good compiles from bad ones")
    with open(path) as f:
        entries = json.load(f)
    cxx, cuda = check(entries, expect)
    expect(cxx > 0, f"{path} lists no C++ compile")
    print(f"numeric_flags_test: {cxx} C/C++ and {cuda} CUDA compiles checked")
    return expect.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv))
