#!/usr/bin/env bash
# The GPU kit's own binaries, run here without a GPU (CI, after scripts/gpu_kit.sh): the whole
# scripts/gpu_check.sh from the kit, which must say the host's facts first, pass the steps that
# need no device (detrain info, the CUDA test binaries: they skip their device tests and run the
# stand-in's), compare every hash pair with the cpu side the kit holds (no cpu run of its own) and
# write its summary. So a kit whose binaries do not load (a library left out, a glibc too new), that
# lacks its cpu results, or whose check script breaks fails here, not in the GPU session's minutes.
# Usage: scripts/gpu_kit_smoke.sh (KIT_DIR as gpu_check.sh).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
kit=${KIT_DIR:-gpu-kit}
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
scripts/gpu_check.sh "$out" >"$out/stdout" 2>&1  # exit 1 here: the device steps fail
said=$(cat "$out/stdout")
shipped=$(grep -so '"weights_sha256": "[0-9a-f]\{64\}"' "$kit/cpu/index.json" | wc -l)
found=$(grep -c "cpu==cuda: no hash (cpu [0-9a-f]\{16\}, cuda none; .*the kit's$" <<<"$said")
passed=$(grep -cE '^gpu_check: (detrain-info|cuda-core-tests|device-ops-tests): exit 0 ' <<<"$said")
if [[ $said != "gpu_check: host facts: gpus="* || ! -f $out/summary.json ]] ||
    ((shipped != 3 || found != 7 || passed != 3)); then
    echo "$said" | tail -40
    echo "gpu_kit_smoke.sh: FAILED: the host's facts first, a summary, 3 cpu results in the kit" \
         "($shipped), 7 pairs compared with them ($found), 3 steps passed ($passed)"
    exit 1
fi
echo "gpu_kit_smoke.sh: the kit's binaries ran here (detrain info and the CUDA tests passed); the" \
     "check compared its 7 hash pairs with the kit's 3 cpu results"
