#!/usr/bin/env bash
# The GPU check, run on a GPU host from the repository root with the kit scripts/gpu_kit.sh built
# (gpu-kit/, the packed gpu-kit.tar.xz, or KIT_DIR). A GPU is lent for minutes, so the steps run by
# value, each verdict said on stdout as soon as it is known: (1) the CUDA tests, (2) the CPU==GPU
# hash pairs (their GPU side against the cpu side the kit ships) and the cpu-vs-cuda audits, (3) the
# step bench and the PyTorch-CUDA peer, (4) the kernel bench, (5) the guarantee matrix. No memcheck:
# the lent hosts' compute-sanitizer refused the device; emulate.sh --asan checks memory on the host.
# Writes check.log, summary.json and record.md (scripts/gpu_summary.py), the audits' JSON and the
# tests' XML into $1, else $OUT, else gpu-check-out/: 8 files, what the device tool brings back.
# Exit status 0 when every step that ran passed, 1 otherwise, 2 when the kit is missing or cannot
# load here. GPU_CHECK_STEPS, an extended regular expression, picks the steps of a rerun (e.g.
# 'tests|train-smallcnn'; the others are listed as not selected); GPU_CHECK_BUDGET_S (340) and
# GPU_CHECK_LIMIT_FACTOR (every step's limit times it) are for a slower device (tests/emulated/).
# shellcheck disable=SC2046  # (kit_recipe's flags are words)
set -uo pipefail
start=$(date +%s)

# The host's facts first, before anything that can fail: a check that dies at once still says
# what it met. A tool that is missing or fails gives "unknown".
smi=$(timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.free --format=csv,noheader \
    2>/dev/null) || smi=
gpu_col() { cut -d, -f"$1" <<<"$smi" | sed 's/^ *//' | awk 'NF' | paste -sd, - | sed 's/,/, /g'; }
glibc=$(getconf GNU_LIBC_VERSION 2>/dev/null | cut -d' ' -f2)
python=$(python3 -c 'import platform; print(platform.python_version())' 2>/dev/null)
torch=$(timeout 20 python3 -c 'from importlib.metadata import version; print(version("torch"))' \
    2>/dev/null || timeout 20 python3 -c 'import torch; print(torch.__version__)' 2>/dev/null)
[[ -z $torch && -n $python ]] && torch=none
host_free=$(awk '/^MemAvailable:/ {printf "%d MiB", $2 / 1024}' /proc/meminfo 2>/dev/null)
facts="gpus=$(gpu_col 1); driver=$(gpu_col 2 | cut -d, -f1); glibc=$glibc; python3=$python;\
 torch=$torch; gpu_free=$(gpu_col 3); host_free=$host_free"
facts=$(sed -E 's/=(;|$)/=unknown\1/g' <<<"$facts")
echo "gpu_check: host facts: $facts"
cd "$(dirname "$0")/.." || exit 2

source scripts/kit/contents.sh  # the pairs' recipe (kit_runs, kit_recipe, kit_sha)
kit=${KIT_DIR:-gpu-kit} out=${1:-${OUT:-gpu-check-out}} budget=${GPU_CHECK_BUDGET_S:-340}
factor=${GPU_CHECK_LIMIT_FACTOR:-1} only=${GPU_CHECK_STEPS:-} steps=$(mktemp) work=$(mktemp -d)
log=$out/check.log
mkdir -p "$out"
printf 'host facts: %s\nnvidia-smi: %s\n' "$facts" "$smi" >"$log"
LD_LIBRARY_PATH="$(realpath -m "$kit/lib"):${LD_LIBRARY_PATH:-}"
export LD_LIBRARY_PATH OMP_WAIT_POLICY=passive

# The kit travels packed (gpu-kit.tar.xz beside the folder): unpacked where the folder is missing,
# with tar's xz or, failing that, Python's tarfile.
if [[ ! -x "$kit/bin/detrain" && -f "$kit.tar.xz" ]]; then
    mkdir -p "$kit"
    tar -C "$kit" -xJf "$kit.tar.xz" 2>/dev/null || python3 -m tarfile -e "$kit.tar.xz" "$kit" ||
        echo "gpu_check.sh: could not unpack $kit.tar.xz" >&2
fi
if [[ ! -x "$kit/bin/detrain" ]]; then
    echo "gpu_check.sh: no kit in $kit or $kit.tar.xz (scripts/gpu_kit.sh)" | tee -a "$log" >&2
    exit 2
fi
# The kit's binaries were linked against the building machine's glibc: a host with an older one
# cannot load any of them, so say that once instead of failing every step with a loader error.
need=$(cat "$kit/GLIBC" 2>/dev/null || echo 0)
if [[ -n $glibc && $(printf '%s\n' "$need" "$glibc" | sort -V | head -1) != "$need" ]]; then
    echo "gpu_check.sh: the kit needs glibc $need or newer and this host has $glibc: build the" \
         "kit on a machine whose glibc is at most $glibc (scripts/gpu_kit.sh)" | tee -a "$log" >&2
    exit 2
fi

# step NAME LIMIT_S COMMAND...: runs COMMAND with its output in the log, under min(LIMIT, what is
# left of the budget); records name, exit status and milliseconds, and says them on stdout (a
# line a step: what a caller that gets only the output's tail, as the device tool's, still sees).
# Returns 1 when the step did not run (not selected, budget spent), else 0.
step() {
    local name=$1 limit=$(($2 * factor)) left=$((budget - ($(date +%s) - start))) why='' t0 rc ms
    shift 2
    ((left < 5)) && why="the ${budget} s budget is spent"
    [[ -n $only ]] && ! grep -Eq -- "$only" <<<"$name" && why="not selected by GPU_CHECK_STEPS"
    if [[ -n $why ]]; then
        echo "== $name: skipped ($why)" >>"$log"
        printf '%s\tskipped\t0\n' "$name" >>"$steps"
        [[ $why == *budget* ]] && echo "gpu_check: $name: skipped (budget spent)"
        return 1
    fi
    ((limit > left)) && limit=$left
    echo "== $name (limit ${limit} s): $*" >>"$log"
    t0=$(date +%s%N)
    timeout -k 5 "$limit" "$@" >>"$log" 2>&1
    rc=$? ms=$((($(date +%s%N) - t0) / 1000000))
    printf '%s\t%s\t%s\n' "$name" "$rc" "$ms" >>"$steps"
    echo "gpu_check: $name: exit $rc ($((ms / 1000)) s)"
    return 0
}
say() { echo "gpu_check: verdict $*" | tee -a "$log"; }
same() {  # same NAME RUN_DIR [HOW]: the GPU run's weights_sha256 against the kit's cpu one
    local a b v
    a=$(kit_sha "$kit/cpu/$1/result.json") b=$(kit_sha "$2/result.json")
    if [[ -n $a && $a == "$b" ]]; then v="equal (${a:0:16})"
    elif [[ -n $a && -n $b ]]; then v="DIFFERENT (cpu ${a:0:16}, cuda ${b:0:16})"
    else v="no hash (cpu ${a:-none}, cuda ${b:-none})"; fi
    say "$1${3:+ ($3)} cpu==cuda: $v"
}
figures() {  # figures KIND FILE [NAME]: the tests' counts, an audit's verdict, a bench's figures
    python3 scripts/gpu_summary.py --brief "$@" | tee -a "$log"
}

# Time limits (seconds on an H100 or H200): (1)+(2), the verdicts a session needs first, 116 in
# all, so that with the facts and the unpacking they are done within 2 minutes; (3) 130; (4) 54;
# (5) 40: 340, the budget. The steps' and the tests' own budgets stay inside their limits.
data="$kit/data/fashion-mnist"
detrain=("$kit/bin/detrain" train --data-dir "$data")

# (1) The CUDA tests through scripts/gtest_resume.py: one that crashes, hangs or leaves a sticky
# CUDA error (which would fail every later test of its process) does not take the others' verdicts
# along. DT_CUDA_POISON=1: memory handed out undefined is all-ones bytes (NaN), so that a kernel
# reading what no one wrote fails its comparison instead of finding the last tensor's values there.
step detrain-info 6 "$kit/bin/detrain" info
step cuda-core-tests 15 env DT_CUDA_POISON=1 python3 scripts/gtest_resume.py \
    --xml "$out/tests_cuda.xml" --budget-s $((13 * factor)) --hang-s $((8 * factor)) \
    "$kit/bin/dt_test_cuda" && figures tests "$out/tests_cuda.xml" cuda-core-tests
step device-ops-tests 33 env DT_CUDA_POISON=1 python3 scripts/gtest_resume.py \
    --xml "$out/tests_device_ops.xml" --budget-s $((31 * factor)) --hang-s $((10 * factor)) \
    "$kit/bin/dt_test_device_ops" --gtest_filter='Device/DeviceOps.*:CudaDevicePoison.*' &&
    figures tests "$out/tests_device_ops.xml" device-ops-tests

# (2) CPU vs GPU: the same run on each device; the deterministic presets promise the same bits.
for run in $kit_runs; do
    name=${run/:/-}
    step "train-$name-cuda" 6 "${detrain[@]}" $(kit_recipe "$run") --device cuda \
        --out "$work/$name-cuda" && same "$name" "$work/$name-cuda"
done
# A split batch on the GPU (micro-batches: the exact sites' accumulators on the device,
# completed through the host) must give the cpu's whole-batch bits too, and so must the large
# tile shape of the GEMM-shaped kernels (DT_CUDA_TILE=large) over a whole run.
step train-smallcnn-exact-cuda-micro 6 "${detrain[@]}" $(kit_recipe smallcnn:exact) --device cuda \
    --micro-batch 32 --out "$work/micro" && same smallcnn-exact "$work/micro" micro-batched
step train-smallcnn-deterministic-cuda-large-tiles 6 env DT_CUDA_TILE=large "${detrain[@]}" \
    $(kit_recipe smallcnn:deterministic) --device cuda --out "$work/large" &&
    same smallcnn-deterministic "$work/large" "large tiles"

# Where the devices part ways, if they do: the first op output, gradient or weight whose bits
# differ between the cpu and the cuda run, with its element statistics (docs/audit.md); and
# ResNet-18 the same way (2 steps of 32 images): the large model's shapes, op by op (full tiles,
# 512 channels, the 1x1 stride-2 shortcuts), which the training pairs do not reach.
step audit-cpu-vs-cuda 6 sh -c "'$kit/bin/detrain' audit --json --steps 2 --data-dir '$data' \
    --model smallcnn-bn --impl exact-all --dropout 0.2 --limit-train 1024 --vs '--device cuda' \
    >'$out/audit_cpu_vs_cuda.json'" &&
    figures audit "$out/audit_cpu_vs_cuda.json" audit-cpu-vs-cuda
step audit-resnet18-cpu-vs-cuda 10 sh -c "'$kit/bin/detrain' audit --json --steps 2 \
    --data-dir '$data' --model resnet18 --impl exact-all --batch-size 32 --limit-train 64 \
    --vs '--device cuda' >'$out/audit_resnet18_cpu_vs_cuda.json'" &&
    figures audit "$out/audit_resnet18_cpu_vs_cuda.json" audit-resnet18-cpu-vs-cuda

# Runs moved between devices mid-way (--stop-after 7 of 16 steps, then --resume on the other):
# checkpoints written on one and read on the other give the cpu's bits. Last of (2): half cpu.
for way in cuda-cpu cpu-cuda; do
    flags="--data-dir '$data' $(kit_recipe smallcnn:deterministic) --out '$work/$way'"
    step "train-smallcnn-deterministic-$way" 8 sh -c \
        "'$kit/bin/detrain' train $flags --device ${way%-*} --stop-after 7 &&
         '$kit/bin/detrain' train $flags --device ${way#*-} --resume '$work/$way'" &&
        same smallcnn-deterministic "$work/$way" "moved ${way/-/ to }"
done

# (3) detrain's training step per model x preset against the atomic baseline in the same run
# (issue 20's targets first; the budget cuts smallcnn-bn). "@limbs": conv.wgrad's exact mode with
# limb atomics, "@small": the small tile everywhere; the same bits. --profile: one more step per
# case with the launch profile (where the step's device time goes, kernel by kernel).
step detrain-step-bench 70 sh -c "'$kit/bin/dt_gpu_step_bench' --steps 10 \
    --budget-s $((60 * factor)) --profile --models smallcnn,resnet18,smallcnn-bn \
    --presets deterministic,exact,exact@limbs,deterministic@small,exact-all,exact-all@limbs \
    > '$work/steps.jsonl'" && figures steps "$work/steps.jsonl"
# The PyTorch-CUDA peer on the same GPU, TF32 off as detrain: its fastest eager settings (the
# targets' figure), then with deterministic algorithms.
for mode in "" --deterministic; do
    for model in smallcnn resnet18; do
        step "pytorch-$model${mode:+-${mode#--}}" 15 sh -c \
            "python3 bench/peers/pytorch_train.py --device cuda --model $model --batch 128 \
             --steps 20 $mode >> '$work/peers.jsonl'"
    done
done
figures peers "$work/peers.jsonl"

# (4) conv.wgrad's and conv.dgrad's ways (the exact wgrad's limb atomics among them) and the tile
# shapes first, then each op's kernels per mode until the bench's budget (CUDA events, L2 flushed).
step detrain-kernel-bench 54 sh -c "'$kit/bin/dt_gpu_kernel_bench' --reps 5 \
    --budget-s $((46 * factor)) > '$work/kernels.jsonl'" && figures kernels "$work/kernels.jsonl"

# (5) Last, as the least news a GPU brings (the tests and pairs above hold every mode to the cpu's
# bits; CI runs it shuffled on the emulated GPU): the guarantee matrix, every reduction site x mode
# rerun, with the samples permuted, and on the cpu (SmallCNN, one step each; docs/audit.md).
step audit-matrix-cuda 40 sh -c "'$kit/bin/detrain' audit --matrix --json --steps 1 \
    --data-dir '$data' --model smallcnn --limit-train 256 --batch-size 128 --device cuda \
    >'$out/audit_matrix_cuda.json'" &&
    figures matrix "$out/audit_matrix_cuda.json" audit-matrix-cuda

# summary.json and record.md: steps, hash pairs, figures and issue 20's targets with verdicts.
python3 scripts/gpu_summary.py "$out" "$steps" "$work" "$kit" "$budget" "$start" "$kit_runs" \
    "$facts"
rc=$?
rm -rf "$work" "$steps"
exit $rc
