#!/usr/bin/env bash
# The whole scripts/gpu_check.sh from the kit (KIT_DIR as there), here without a GPU (CI, after
# scripts/gpu_kit.sh): the host's facts first, the steps that need no device passed (detrain info;
# the CUDA test binaries skip their device tests), every hash pair compared with the kit's cpu
# side, a summary and a record. So a kit whose binaries do not load (a library left out, a glibc
# too new), that lacks its cpu results, or whose check breaks fails here, not in a GPU's minutes.
set -uo pipefail
cd "$(dirname "$0")/.." || exit 1
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
said=$(scripts/gpu_check.sh "$out" 2>&1)  # exit 1 here: the device steps fail
shipped=$(grep -l '"weights_sha256": *"[0-9a-f]\{64\}"' "${KIT_DIR:-gpu-kit}"/cpu/*/result.json |
    wc -l)
found=$(grep -c "cpu==cuda: no hash (cpu [0-9a-f]\{64\}, cuda none)$" <<<"$said")
passed=$(grep -cE '^gpu_check: (detrain-info|cuda-core-tests|device-ops-tests): exit 0 ' <<<"$said")
if [[ $said != "gpu_check: host facts: gpus="* || ! -s $out/summary.json ]] ||
    ((shipped != 3 || found != 7 || passed != 3)) || [[ ! -s $out/record.md ]]; then
    echo "$said" | tail -40
    echo "gpu_kit_smoke.sh: FAILED: the host's facts first, a summary and a record, 3 cpu results" \
         "in the kit ($shipped), 7 pairs compared with them ($found), 3 steps passed ($passed)"
    exit 1
fi
echo "gpu_kit_smoke.sh: the kit's binaries ran here (detrain info and the CUDA tests passed); the" \
     "check compared its 7 hash pairs with the kit's 3 cpu results"
