#!/usr/bin/env bash
# Fuzzes the file parsers with libFuzzer (clang from Debian): IDX, CIFAR, safetensors (and the
# model loader on it) and checkpoints (tests/fuzz). Builds the targets with AddressSanitizer +
# UndefinedBehaviorSanitizer in build-fuzz/ (own build: every source needs the coverage flags),
# then runs each for SECONDS (default 600), two at a time, from the seed corpus in
# tests/fuzz/corpus plus a real checkpoint written by detrain; the corpus grown by a run stays in
# build-fuzz/corpus and is reused by the next. Any crash, hang (> 10 s per input), leak or
# sanitizer report stops that target and fails the script; the input is saved as
# build-fuzz/artifacts/<target>-*. A summary of executions and time per target is printed.
# Usage: scripts/fuzz.sh [SECONDS [TARGET...]]    targets: idx cifar safetensors checkpoint
set -euo pipefail
secs=${1:-600}
shift || true
targets=${*:-idx cifar safetensors checkpoint}
root=$(cd "$(dirname "$0")/.." && pwd)
build=${DT_FUZZ_BUILD:-$root/build-fuzz}
mkdir -p "$build"

cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_COMPILER=clang++-14 -DDT_FUZZ=ON -DDT_BUILD_TESTS=OFF -DDT_BUILD_BENCH=OFF \
  -DDT_ENABLE_CUDA=OFF \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link,address,undefined -fno-sanitize-recover=undefined" \
  >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
cmake --build "$build" -j2 --target detrain $(for t in $targets; do echo "${t}_fuzz"; done)

# A real checkpoint as a seed: one step of SmallCNN on a 4-image IDX set.
seeds="$build/seeds"
rm -rf "$seeds" && mkdir -p "$seeds/data" "$seeds/checkpoint"
python3 - "$seeds/data" <<'PY'
import struct, sys
d = sys.argv[1]
for prefix, n in (("train", 4), ("t10k", 2)):
    with open(f"{d}/{prefix}-images-idx3-ubyte", "wb") as f:
        f.write(struct.pack(">IIII", 0x803, n, 28, 28))
        f.write(bytes((i * 7) % 256 for i in range(n * 784)))
    with open(f"{d}/{prefix}-labels-idx1-ubyte", "wb") as f:
        f.write(struct.pack(">II", 0x801, n) + bytes(i % 10 for i in range(n)))
PY
ASAN_OPTIONS=detect_leaks=0 "$build/detrain" train --data-dir "$seeds/data" --out "$seeds/run" \
  --epochs 2 --batch-size 4 --checkpoint-every 1 --progress none --threads 1 >/dev/null
cp "$seeds/run/checkpoint.safetensors" "$seeds/checkpoint/smallcnn"

mkdir -p "$build/artifacts"
run() {
  local t=$1 extra=()
  mkdir -p "$build/corpus/$t"
  [ "$t" = checkpoint ] && extra=("$seeds/checkpoint")
  "$build/tests/fuzz/${t}_fuzz" -max_total_time="$secs" -timeout=10 -rss_limit_mb=4096 \
    -max_len=2000000 -print_final_stats=1 -artifact_prefix="$build/artifacts/$t-" \
    "$build/corpus/$t" "$root/tests/fuzz/corpus/$t" "${extra[@]}" >"$build/fuzz-$t.log" 2>&1
}
status=0
set -- $targets
while [ $# -gt 0 ]; do
  pids=()
  for t in "$1" "${2:-}"; do
    [ -n "$t" ] || continue
    run "$t" & pids+=("$!:$t")
  done
  for p in "${pids[@]}"; do
    if ! wait "${p%%:*}"; then
      echo "fuzz: ${p#*:} FAILED (log: $build/fuzz-${p#*:}.log)"; status=1
    fi
  done
  shift $(( $# >= 2 ? 2 : 1 ))
done
for t in $targets; do
  execs=$(grep -o 'stat::number_of_executed_units: [0-9]*' "$build/fuzz-$t.log" | awk '{print $2}')
  done_line=$(grep -o 'Done [0-9]* runs in [0-9]* second(s)' "$build/fuzz-$t.log" || true)
  corpus=$(ls "$build/corpus/$t" | wc -l)
  echo "fuzz: $t: ${execs:-?} executions; ${done_line:-no final line}; corpus $corpus inputs"
done
exit $status
