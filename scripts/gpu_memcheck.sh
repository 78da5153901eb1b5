#!/usr/bin/env bash
# Every CUDA kernel under compute-sanitizer's memcheck (out-of-bounds and misaligned accesses,
# launch and CUDA API errors; no leak check: the engine's block cache keeps memory by design): the device tests of every op x mode, the CUDA
# core tests, a micro-batched training run (the split-batch launchers and batch norm's host
# staging) and a ResNet-18 step (the shapes of the large model). Run on a GPU host from the
# repository root with the kit built (scripts/gpu_kit.sh); scripts/gpu_check.sh calls it.
#   scripts/gpu_memcheck.sh [BUDGET_S]   (default 60; runs that would start after it are skipped)
# Exit status: 0 when every run that ran was clean (a run cut by the budget found nothing so far),
# 1 when one was not, 2 when it could not check:
# no kit, no compute-sanitizer, or a compute-sanitizer that refuses the device (it says which;
# seen on this workplace's gVisor GPU hosts: "Device not supported"), found by a probe of a few
# seconds so that the budget goes to the other steps.
set -uo pipefail
cd "$(dirname "$0")/.."
kit=${KIT_DIR:-gpu-kit}
budget=${1:-60}
start=$(date +%s)
sanitizer=$(command -v compute-sanitizer || true)
for d in /usr/local/cuda/bin /opt/nvidia/cuda/bin; do
    [[ -z $sanitizer && -x $d/compute-sanitizer ]] && sanitizer=$d/compute-sanitizer
done
if [[ -z $sanitizer ]]; then
    echo "gpu_memcheck.sh: no compute-sanitizer on PATH or in /usr/local/cuda/bin" >&2
    exit 2
fi
if [[ ! -x $kit/bin/detrain ]]; then
    echo "gpu_memcheck.sh: no kit in $kit (build it with scripts/gpu_kit.sh)" >&2
    exit 2
fi
export LD_LIBRARY_PATH="$PWD/$kit/lib:${LD_LIBRARY_PATH:-}"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
data="$kit/data/fashion-mnist"
failed=0

# The probe: one small device test under memcheck. A sanitizer that cannot use the device says so
# and fails every run the same way; that is no finding about the kernels.
probe=$(timeout -k 5 30 "$sanitizer" --tool memcheck "$kit/bin/dt_test_cuda" \
    --gtest_filter='CommonDevice.PhiloxBitwiseEqualsHost' --gtest_brief=1 2>&1)
if grep -qi "not supported" <<<"$probe"; then
    echo "$probe" | tail -n 5
    echo "gpu_memcheck.sh: compute-sanitizer cannot use this device (its words above): not checked" >&2
    exit 2
fi

# check NAME COMMAND...: COMMAND under memcheck within what is left of the budget.
check() {
    local name=$1
    shift
    local left=$((budget - ($(date +%s) - start)))
    if ((left < 5)); then
        echo "== memcheck $name: skipped (the ${budget} s budget is spent)"
        return
    fi
    echo "== memcheck $name (limit ${left} s)"
    timeout -k 5 "$left" "$sanitizer" --tool memcheck --error-exitcode 3 \
        --print-limit 20 "$@"
    local rc=$?
    if ((rc == 124 || rc == 137)); then  # timeout's: the run was cut short, which is no finding
        echo "== memcheck $name: cut by the budget before it ended (no finding so far)"
        return
    fi
    echo "== memcheck $name: exit $rc"
    ((rc == 0)) || failed=1
}

check device-ops "$kit/bin/dt_test_device_ops" --gtest_filter='Device/DeviceOps.*/Cuda' --gtest_brief=1
check cuda-core "$kit/bin/dt_test_cuda" --gtest_brief=1
check train-micro-batches "$kit/bin/detrain" train --data-dir "$data" --model smallcnn-bn \
    --epochs 1 --limit-train 128 --limit-test 100 --batch-size 64 --eval-batch-size 100 \
    --impl exact-all --dropout 0.2 --micro-batch 32 --device cuda --progress none \
    --out "$work/micro"
check train-resnet18 "$kit/bin/detrain" train --data-dir "$data" --model resnet18 --epochs 1 \
    --limit-train 32 --limit-test 32 --batch-size 32 --eval-batch-size 32 --impl deterministic \
    --device cuda --progress none --out "$work/resnet18"
exit $failed
