#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Rewrites a CUDA source for hostcuda (tests/hostcuda/cuda_runtime.h): the two pieces of CUDA
syntax that C++ lacks become calls of the emulator, everything else stays as written.

  kernel<<<grid, block[, shared[, stream]]>>>(args)   kernel << ::dt::hostcuda::Launch(grid, block...)(args)
  __shared__ [__align__(n)] T name[count];            T* const name = ::dt::hostcuda::static_shared<T>(count);
  extern __shared__ [__align__(n)] T name[];          T* const name = ::dt::hostcuda::dynamic_shared_as<T>();

Usage: rewrite_cu.py SRC OUT. Fails (exit 1, naming the file and line) on a launch or a
__shared__ it cannot rewrite, so that nothing reaches the compiler half-translated. Line numbers
are kept (a #line directive and no line added or removed)."""
import re
import sys

LAUNCH_OPEN = "<<<"
LAUNCH_CLOSE = ">>>"
STATIC_SHARED = re.compile(
    r"__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:<>, ]*?)\s+(\w+)\s*\[([^\]]+)\]\s*;")
DYNAMIC_SHARED = re.compile(
    r"extern\s+__shared__\s+(?:__align__\(\s*\d+\s*\)\s+)?([A-Za-z_][\w:<>, ]*?)\s+(\w+)\s*\[\s*\]\s*;")


def line_of(text, pos):
    return text.count("\n", 0, pos) + 1


def rewrite_launches(text, path):
    out = []
    at = 0
    while True:
        start = text.find(LAUNCH_OPEN, at)
        if start < 0:
            out.append(text[at:])
            break
        end = text.find(LAUNCH_CLOSE, start)
        if end < 0:
            sys.exit(f"{path}:{line_of(text, start)}: '<<<' without its '>>>'")
        config = text[start + len(LAUNCH_OPEN):end]
        if "<<<" in config or ";" in config:
            sys.exit(f"{path}:{line_of(text, start)}: a launch configuration this rewriter cannot "
                     "read (nested '<<<' or a ';' before '>>>')")
        out.append(text[at:start])
        out.append(f" << ::dt::hostcuda::Launch({config})")
        at = end + len(LAUNCH_CLOSE)
    result = "".join(out)
    if LAUNCH_CLOSE in result:
        pos = result.find(LAUNCH_CLOSE)
        sys.exit(f"{path}:{line_of(result, pos)}: '>>>' without a launch before it")
    return result


def main():
    src, dst = sys.argv[1], sys.argv[2]
    with open(src, encoding="utf-8") as f:
        text = f.read()
    text = rewrite_launches(text, src)
    text = DYNAMIC_SHARED.sub(
        lambda m: f"{m.group(1)}* const {m.group(2)} = "
                  f"::dt::hostcuda::dynamic_shared_as<{m.group(1)}>();", text)
    text = STATIC_SHARED.sub(
        lambda m: f"{m.group(1)}* const {m.group(2)} = "
                  f"::dt::hostcuda::static_shared<{m.group(1)}>({m.group(3)});", text)
    left = text.find("__shared__")
    if left >= 0:
        sys.exit(f"{src}:{line_of(text, left)}: a __shared__ declaration this rewriter cannot "
                 "read (one array a declaration: __shared__ [__align__(n)] T name[count];)")
    with open(dst, "w", encoding="utf-8") as f:
        f.write(f'#line 1 "{src}"\n')
        f.write(text)


if __name__ == "__main__":
    main()
