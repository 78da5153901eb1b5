#!/usr/bin/env bash
# Structural checks (STYLE.md 3.3, 3.12): file-size caps and the one-stem-per-op rule.
#   - no source file over 800 lines (hard cap; aim for 400);
#   - every kernels/cpu/X.cpp has kernels/X.h and kernels/ref/X_ref.h and a test naming X.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
while IFS= read -r f; do
  n=$(wc -l < "$f")
  if ((n > 800)); then echo "lint: $f has $n lines (hard cap 800; split it)"; fail=1; fi
done < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.h' -o -name '*.cpp')
for src in kernels/cpu/*.cpp; do
  stem=$(basename "$src" .cpp)
  [[ -f kernels/$stem.h ]] || { echo "lint: $src has no contract kernels/$stem.h"; fail=1; }
  [[ -f kernels/ref/${stem}_ref.h ]] || { echo "lint: $src has no reference kernels/ref/${stem}_ref.h"; fail=1; }
  ls tests/kernels/cpu/"${stem}"*_test.cpp >/dev/null 2>&1 || { echo "lint: $src has no test tests/kernels/cpu/${stem}_test.cpp"; fail=1; }
done
((fail == 0)) && echo "lint: ok"
exit $fail
