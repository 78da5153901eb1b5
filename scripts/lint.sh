#!/usr/bin/env bash
# Structural checks (STYLE.md 3.3, 3.12): file-size caps, the one-stem-per-op rule and the floors.
#   - no source file over 800 lines (hard cap; aim for 400);
#   - every kernels/cpu/X.cpp (or X_part.cpp) has kernels/X.h, kernels/ref/X_ref.h and a test
#     tests/kernels/cpu/X*_test.cpp (kernel_table.cpp and cpu_isa.cpp are no kernels);
#   - a kernel spread over several files may live in a folder named by its stem instead,
#     kernels/cpu/X/X*.{cpp,h} (one level, every file keeps the stem; then no X*.cpp outside it);
#   - engine code reaches kernels only through the device tables (no kernels::cpu:: outside
#     engine/core/backend.cpp, which registers the CPU table, and engine/runtime, which sets the
#     CPU's instruction set), apps include no kernels/ header,
#     and kernels/cpu/isa_variants.h is private to kernels/cpu;
#   - the suites of tests/kernels/cuda/*.cpp are named Cuda* (sanitize.sh tsan-grid's filter);
#   - kernels/common and kernels/cuda call no libm function and no CUDA math intrinsic;
#   - nothing in kernels/ throws; kernels/common includes no container, string, stream or libm;
#   - the Markdown pages' prose: sentences of at most 40 words, no nested parentheses.
set -euo pipefail
cd "$(dirname "$0")/.."
fail=0
while IFS= read -r f; do
  n=$(wc -l < "$f")
  if ((n > 800)); then echo "lint: $f has $n lines (hard cap 800; split it)"; fail=1; fi
done < <(git ls-files '*.h' '*.cpp' '*.cu' '*.cuh' 2>/dev/null || find . -name '*.h' -o -name '*.cpp')
for src in kernels/cpu/*.cpp kernels/cpu/*/*.cpp; do
  [[ -f $src ]] || continue
  dir=$(dirname "$src") stem=$(basename "$src" .cpp)
  if [[ $dir != kernels/cpu ]]; then
    stem=$(basename "$dir")  # a kernel's folder: the folder's name is its stem
  else
    [[ $stem == kernel_table || $stem == cpu_isa ]] && continue  # the CPU's table and ISA: no kernels
    # A kernel split over several files keeps its stem as prefix: linear_modes.cpp -> linear.
    while [[ ! -f kernels/$stem.h && $stem == *_* ]]; do stem=${stem%_*}; done
    [[ -d kernels/cpu/$stem ]] && { echo "lint: $src belongs in kernels/cpu/$stem/ (the kernel has a folder)"; fail=1; }
  fi
  [[ -f kernels/$stem.h ]] || { echo "lint: $src has no contract kernels/$stem.h"; fail=1; }
  [[ -f kernels/ref/${stem}_ref.h ]] || { echo "lint: $src has no reference kernels/ref/${stem}_ref.h"; fail=1; }
  ls tests/kernels/cpu/"${stem}"*_test.cpp >/dev/null 2>&1 || { echo "lint: $src has no test tests/kernels/cpu/${stem}_test.cpp"; fail=1; }
done
# A kernel's folder: one level deep, and every file in it keeps the folder's stem
# (find kernels -name 'conv2d*' lists every conv2d file).
while IFS= read -r f; do
  rel=${f#kernels/cpu/} stem=${rel%%/*} name=${f##*/}
  if [[ $rel == */*/* ]]; then echo "lint: $f is nested too deep (kernels/cpu/<stem>/<file>)"; fail=1; fi
  [[ $name == "$stem".* || $name == "$stem"_* ]] || { echo "lint: $f does not keep its folder's stem ($stem*)"; fail=1; }
done < <(find kernels/cpu -mindepth 2 -type f \( -name '*.cpp' -o -name '*.h' \) | sort)
floor() {  # floor <message> <grep output>: fails when grep found something
  if [[ -n "$2" ]]; then echo "lint: $1:"; echo "$2" | sed 's/^/  /'; fail=1; fi
}
floor "engine calls a kernel namespace directly (use device_kernels(device), engine/core/backend.h)" \
  "$(grep -rn 'kernels::cpu::\|kernels::cuda::' engine --include='*.cpp' --include='*.h' |
     grep -v '^engine/core/backend\.\(cpp\|h\):\|^engine/runtime/' || true)"
floor "apps include a kernels/ header (use engine/)" \
  "$(grep -rn '#include "kernels/' apps || true)"
floor "kernels/cpu/isa_variants.h is private to kernels/cpu" \
  "$(grep -rln '#include "kernels/cpu/isa_variants\.h"' --include='*.cpp' --include='*.h' . | grep -v '^\./kernels/cpu/' |
     grep -v '^\./build' || true)"
# The host-grid tests of the CUDA block programs run under ThreadSanitizer by their suite's name
# (scripts/sanitize.sh tsan-grid, in CI): a suite named otherwise would be left out.
floor "a test suite of tests/kernels/cuda/*.cpp not named Cuda* (sanitize.sh tsan-grid filters on it)" \
  "$(grep -Hn '^TEST[_FP]*(' tests/kernels/cuda/*.cpp | grep -v 'TEST[_FP]*(Cuda' || true)"
# CPU == GPU bits: the shared core and the CUDA kernels take their math from kernels/common
# (fast_math.h: exp, log), never from libm or CUDA's intrinsics, whose results differ between the
# host and the device (and between CUDA versions). Comments are left out of the search.
intrinsics='__expf|__exp10f|__logf|__log2f|__log10f|__powf|__sinf|__cosf|__tanf|__saturatef'
intrinsics+='|__fdividef|__fdiv_r[nzud]|__frcp_r[nzud]|__fsqrt_r[nzud]|__frsqrt_rn|rsqrtf?'
libm='expf?|exp2f?|expm1f?|logf?|log2f?|log1pf?|log10f?|powf?|tanhf?|sinf?|cosf?|erff?'
# kernels/' sources without their comments: FILE:LINE:code
code=$(grep -rn --include='*.h' --include='*.cpp' --include='*.cu' --include='*.cuh' --include='*.inc' \
  '' kernels | sed 's|//.*||')
floor "kernels/common or kernels/cuda calls libm or a CUDA math intrinsic (kernels/common/fast_math.h)" \
  "$(grep -E "^kernels/(common|cuda)/" <<<"$code" |
     grep -E "(^|[^A-Za-z0-9_.:])(std::)?($intrinsics|$libm)[[:space:]]*\(" || true)"
# Kernels never throw (a launcher records an error, the engine throws at its boundary), and the
# shared core stays header-only host-device code: no containers, strings, streams or exceptions.
floor "a throw in kernels/ (kernels report errors; the engine throws)" \
  "$(grep -E '(^|[^A-Za-z0-9_])throw([^A-Za-z0-9_]|$)' <<<"$code" || true)"
host_only='vector|string|string_view|map|unordered_map|set|memory|functional|stdexcept|exception'
host_only+='|iostream|sstream|fstream|cstdio|cmath|math\.h|thread|mutex|atomic'
floor "kernels/common includes a header device code cannot use (hd.h's rules)" \
  "$(grep -rnE "#include <($host_only)>" kernels/common || true)"
# The docs read in one pass: no sentence over 40 words, no parentheses inside parentheses
# (scripts/prose_lint.py: every Markdown page of the repository).
prose=$(python3 scripts/prose_lint.py) || { echo "$prose"; fail=1; }
((fail == 0)) && echo "lint: ok"
exit $fail
