#!/usr/bin/env bash
# Structural checks (STYLE.md 3.3, 3.12): file-size caps and the one-stem-per-op rule.
#   - no source file over 800 lines (hard cap; aim for 400);
#   - every kernels/cpu/X.cpp (or X_part.cpp) has kernels/X.h, kernels/ref/X_ref.h and a test
#     tests/kernels/cpu/X*_test.cpp.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
while IFS= read -r f; do
  n=$(wc -l < "$f")
  if ((n > 800)); then echo "lint: $f has $n lines (hard cap 800; split it)"; fail=1; fi
done < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.h' -o -name '*.cpp')
for src in kernels/cpu/*.cpp; do
  stem=$(basename "$src" .cpp)
  # A kernel split over several files keeps its stem as prefix: conv2d_wgrad_modes.cpp -> conv2d.
  while [[ ! -f kernels/$stem.h && $stem == *_* ]]; do stem=${stem%_*}; done
  [[ -f kernels/$stem.h ]] || { echo "lint: $src has no contract kernels/$stem.h"; fail=1; }
  [[ -f kernels/ref/${stem}_ref.h ]] || { echo "lint: $src has no reference kernels/ref/${stem}_ref.h"; fail=1; }
  ls tests/kernels/cpu/"${stem}"*_test.cpp >/dev/null 2>&1 || { echo "lint: $src has no test tests/kernels/cpu/${stem}_test.cpp"; fail=1; }
done
((fail == 0)) && echo "lint: ok"
exit $fail
