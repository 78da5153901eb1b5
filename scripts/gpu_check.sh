#!/usr/bin/env bash
# The GPU check, run on a GPU host from the repository root after scripts/gpu_kit.sh built the kit
# (gpu-kit/ or the packed gpu-kit.tar.xz, or KIT_DIR) here or anywhere: the CUDA tests (device twins of the numeric core, every
# op x mode on the device against the cpu), CPU-vs-GPU training runs whose weights_sha256 must
# agree under the deterministic presets, compute-sanitizer's memcheck (scripts/gpu_memcheck.sh),
# detrain's step and kernel benches and the PyTorch-CUDA peer step (deterministic algorithms
# on and off, TF32 off and on). Writes check.log, summary.json, the audits' JSON and the tests'
# XML into the output folder: $1, else $OUT (the device tool's, which brings back at most 8 files:
# these are 7), else gpu-check-out/. Ends within 6 minutes: every step
# has a time limit, and steps that would start after the budget are skipped (and listed so).
# Exit status: 0 when every step that ran passed, 1 otherwise. Without a GPU everything runs and
# the device parts report what is missing (useful to check the kit itself).
set -uo pipefail
cd "$(dirname "$0")/.."
kit=${KIT_DIR:-gpu-kit}
out=${1:-${OUT:-gpu-check-out}}
budget=${GPU_CHECK_BUDGET_S:-340}
# GPU_CHECK_LIMIT_FACTOR: every step's time limit times this (default 1): for a slower device,
# as scripts/emulate.sh's run of this check on the emulated GPU (with a larger budget).
factor=${GPU_CHECK_LIMIT_FACTOR:-1}
mkdir -p "$out"
log="$out/check.log"
: > "$log"
steps=$(mktemp)
work=$(mktemp -d)
kit_lib=$kit/lib
[[ $kit == /* ]] || kit_lib=$PWD/$kit/lib
export LD_LIBRARY_PATH="$kit_lib:${LD_LIBRARY_PATH:-}"
export OMP_WAIT_POLICY=passive
start=$(date +%s)

# The kit travels packed (scripts/gpu_kit.sh: gpu-kit.tar.xz beside the folder): unpack it where
# the folder is missing, with tar's xz or, failing that, Python's tarfile.
if [[ ! -x "$kit/bin/detrain" && -f "$kit.tar.xz" ]]; then
    mkdir -p "$kit"
    tar -C "$kit" -xJf "$kit.tar.xz" 2>/dev/null ||
        python3 - "$kit.tar.xz" "$kit" <<'PY' || echo "gpu_check.sh: could not unpack $kit.tar.xz" >&2
import sys, tarfile
with tarfile.open(sys.argv[1]) as t:
    try:
        t.extractall(sys.argv[2], filter="data")
    except TypeError:  # a Python without extraction filters
        t.extractall(sys.argv[2])
PY
fi
if [[ ! -x "$kit/bin/detrain" ]]; then
    echo "gpu_check.sh: no kit in $kit or $kit.tar.xz (build it with scripts/gpu_kit.sh)" |
        tee -a "$log" >&2
    exit 2
fi

# The kit's binaries were linked against this machine's glibc: a host with an older one cannot
# load any of them, so say that once instead of failing every step with a loader error.
need=$(cat "$kit/GLIBC" 2>/dev/null || echo 0)
have=$(getconf GNU_LIBC_VERSION 2>/dev/null | awk '{print $2}')
if [[ -n $have && $(printf '%s\n' "$need" "$have" | sort -V | head -1) != "$need" ]]; then
    echo "gpu_check.sh: the kit needs glibc $need or newer and this host has $have: build the" \
         "kit on a machine whose glibc is at most $have (scripts/gpu_kit.sh)" | tee -a "$log" >&2
    exit 2
fi

# GPU_CHECK_STEPS (an extended regular expression) picks the steps a rerun runs, e.g. after a fix:
# GPU_CHECK_STEPS='tests|train-smallcnn' (the others are listed as skipped, "not selected").
only=${GPU_CHECK_STEPS:-}

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in the log, under min(LIMIT, what is
# left of the budget); records name, exit status and seconds, and says them on stdout (a line a
# step: what a caller that gets only the output's tail, as the device tool's, still sees).
step() {
    local name=$1 limit=$(($2 * factor))
    shift 2
    if [[ -n $only ]] && ! grep -Eq -- "$only" <<<"$name"; then
        echo "== $name: skipped (not selected by GPU_CHECK_STEPS)" >>"$log"
        printf '%s\tskipped\t0\n' "$name" >>"$steps"
        return
    fi
    local left=$((budget - ($(date +%s) - start)))
    if ((left < 5)); then
        echo "== $name: skipped (the ${budget} s budget is spent)" >>"$log"
        printf '%s\tskipped\t0\n' "$name" >>"$steps"
        echo "gpu_check: $name: skipped (budget spent)"
        return
    fi
    ((limit > left)) && limit=$left
    echo "== $name (limit ${limit} s): $*" >>"$log"
    local t0 rc ms
    t0=$(date +%s%N)
    timeout -k 5 "$limit" "$@" >>"$log" 2>&1
    rc=$?
    ms=$((($(date +%s%N) - t0) / 1000000))
    printf '%s\t%s\t%s\n' "$name" "$rc" "$ms" >>"$steps"
    echo "gpu_check: $name: exit $rc ($((ms / 1000)) s)"
}

step nvidia-smi 15 nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv
step detrain-info 15 "$kit/bin/detrain" info
# The tests through scripts/gtest_resume.py: one that crashes, hangs or leaves a sticky CUDA error
# (which would fail every later test of its process) does not take the others' verdicts along.
# DT_CUDA_POISON=1: memory handed out undefined is all-ones bytes (NaN), so that a kernel reading
# what no one wrote fails its comparison instead of finding the last tensor's values there.
step cuda-core-tests 60 env DT_CUDA_POISON=1 python3 scripts/gtest_resume.py \
    --xml "$out/tests_cuda.xml" --budget-s 55 --hang-s 30 "$kit/bin/dt_test_cuda"
step device-ops-tests 100 env DT_CUDA_POISON=1 python3 scripts/gtest_resume.py \
    --xml "$out/tests_device_ops.xml" --budget-s 95 --hang-s 45 "$kit/bin/dt_test_device_ops" \
    --gtest_filter='Device/DeviceOps.*:CudaDevicePoison.*'

# CPU vs GPU: the same run on each device; the deterministic presets promise the same bits.
data="$kit/data/fashion-mnist"
runs="smallcnn:deterministic smallcnn:exact smallcnn-bn:exact-all"
for run in $runs; do
    model=${run%%:*} impl=${run#*:}
    for dev in cpu cuda; do
        step "train-$model-$impl-$dev" 40 "$kit/bin/detrain" train --data-dir "$data" \
            --model "$model" --epochs 1 --batch-size 128 --eval-batch-size 500 --impl "$impl" \
            --dropout 0.2 --device "$dev" --progress none --out "$work/$model-$impl-$dev"
    done
done

# A split batch on the GPU (micro-batches: the exact sites' accumulators on the device,
# completed through the host) must give the cpu's whole-batch bits too.
step train-smallcnn-exact-cuda-micro 40 "$kit/bin/detrain" train --data-dir "$data" \
    --model smallcnn --epochs 1 --batch-size 128 --eval-batch-size 500 --impl exact \
    --dropout 0.2 --device cuda --micro-batch 32 --progress none \
    --out "$work/smallcnn-exact-cuda-micro"

# A run moved between devices mid-way (--stop-after 7 of 16 steps, then --resume on the other
# device): checkpoints written on one device and read on the other must give the cpu run's bits.
for way in cuda-cpu cpu-cuda; do
    dir="$work/smallcnn-deterministic-$way"
    run_flags="--data-dir '$data' --model smallcnn --epochs 1 --batch-size 128 \
        --eval-batch-size 500 --impl deterministic --dropout 0.2 --progress none --out '$dir'"
    step "train-smallcnn-deterministic-$way" 40 sh -c \
        "'$kit/bin/detrain' train $run_flags --device ${way%-*} --stop-after 7 &&
         '$kit/bin/detrain' train $run_flags --device ${way#*-} --resume '$dir'"
done

# Where the devices part ways, if they do: the first op output, gradient or weight whose bits
# differ between the cpu and the cuda run, with its element statistics (docs/audit.md).
step audit-cpu-vs-cuda 40 sh -c "'$kit/bin/detrain' audit --json --steps 2 --data-dir '$data' \
    --model smallcnn-bn --impl exact-all --dropout 0.2 --limit-train 1024 --vs '--device cuda' \
    >'$out/audit_cpu_vs_cuda.json'"

# ResNet-18 the same way (2 steps of 32 images): the large model's shapes, op by op (full tiles,
# 512 channels, the 1x1 stride-2 shortcuts), which the training pairs above do not reach.
step audit-resnet18-cpu-vs-cuda 40 sh -c "'$kit/bin/detrain' audit --json --steps 2 \
    --data-dir '$data' --model resnet18 --impl exact-all --batch-size 32 --limit-train 64 \
    --vs '--device cuda' >'$out/audit_resnet18_cpu_vs_cuda.json'"

# The guarantee matrix on the GPU: every reduction site x mode rerun, with the samples permuted,
# and on the cpu (SmallCNN, one step each): where atomic really differs, and that every other mode
# keeps the cpu's bits site by site (docs/audit.md).
step audit-matrix-cuda 45 sh -c "'$kit/bin/detrain' audit --matrix --json --steps 1 \
    --data-dir '$data' --model smallcnn --limit-train 256 --batch-size 128 --device cuda \
    >'$out/audit_matrix_cuda.json'"

# The large tile shape of the GEMM-shaped kernels (DT_CUDA_TILE=large; the default is small)
# over a whole run: the cpu's bits too.
step train-smallcnn-deterministic-cuda-large-tiles 40 env DT_CUDA_TILE=large \
    "$kit/bin/detrain" train --data-dir "$data" --model smallcnn --epochs 1 --batch-size 128 \
    --eval-batch-size 500 --impl deterministic --dropout 0.2 --device cuda --progress none \
    --out "$work/smallcnn-deterministic-cuda-large"

# Memory errors of every kernel (compute-sanitizer memcheck: the device tests, a micro-batched
# and a ResNet-18 run); its log in check.log. Exit 2 (no compute-sanitizer, or one that refuses
# the device) is listed as "unavailable", not as a failure.
step memcheck 75 scripts/gpu_memcheck.sh 70

# detrain's training step per model x preset against the atomic baseline (issue 20's targets;
# the models of the targets first, so that the budget cuts smallcnn-bn). "@limbs": conv.wgrad's
# exact mode with limb atomics (DT_CUDA_EXACT_WGRAD=limbs), "@small": the small tile everywhere;
# the same bits. --profile: one more step per case with the launch profile (where the step's
# device time goes, kernel by kernel).
step detrain-step-bench 90 sh -c "'$kit/bin/dt_gpu_step_bench' --steps 10 --budget-s 75 \
    --profile --models smallcnn,resnet18,smallcnn-bn > '$work/steps.jsonl'"

# The PyTorch-CUDA peer (its best settings, each reported): step time on the same GPU.
peers="$work/peers.jsonl"
for model in smallcnn resnet18; do
    for mode in "" "--deterministic" "--tf32"; do
        step "pytorch-$model${mode:+-${mode#--}}" 30 sh -c \
            "python3 bench/peers/pytorch_train.py --device cuda --model $model --batch 128 \
             --steps 30 $mode >> '$peers'"
    done
done

# Each op's kernels per mode, last: the budget cuts it first (CUDA events, L2 flushed).
step detrain-kernel-bench 60 sh -c "'$kit/bin/dt_gpu_kernel_bench' --reps 5 --budget-s 50 \
    > '$work/kernels.jsonl'"

# summary.json: steps, hash pairs, figures and issue 20's targets with verdicts.
python3 scripts/gpu_summary.py "$out" "$steps" "$work" "$kit" "$budget" "$start" "$runs"
rc=$?
rm -rf "$work" "$steps"
exit $rc
