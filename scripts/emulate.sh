#!/usr/bin/env bash
# The CUDA backend run end to end without a GPU: built against hostcuda, the CUDA runtime emulated
# on the host (tests/hostcuda/: every thread of every block runs, barriers are real, work is
# deferred until waited for, launch errors are a GPU's), in build-emu/ (DT_ENABLE_CUDA=EMULATE),
# the device tests and a training pair again with every launch's blocks and threads in the other
# order (DT_HOSTCUDA_ORDER=backward) and in random orders (DT_HOSTCUDA_ORDER=shuffle: the fast
# preset's float atomics then give other weights from seed to seed, as a GPU's from run to run),
# there with memory handed out undefined filled with NaN bytes (DT_CUDA_POISON=1).
# What it checks, all with the backend's own launchers and kernels:
#   - hostcuda's own tests (dt_test_hostcuda), the GPU tests (dt_test_cuda) and the device ops
#     tests (Device/DeviceOps.*/Cuda: every op x mode x tile shape against the cpu)
#   - the cpu-vs-cuda training pairs of scripts/gpu_check.sh on a slice of Fashion-MNIST: the same
#     weights_sha256 on both devices for the deterministic and exact presets, a micro-batched
#     exact run, runs moved between the devices through a checkpoint, the large tiles
#   - mpirun with the emulated cuda (2 processes, and 3 with micro-batches): the cpu's bits
#   - the guarantee matrix (detrain audit --matrix --device cuda, ~3 min), shuffled: every
#     deterministic mode of every site stable and the cpu's, float atomics moving on a rerun
#   - ResNet-18 audited op by op against the cpu (2 steps of 32 images, exact-all): its shapes
#     (512 channels, full tiles, the 1x1 stride-2 shortcuts) give the cpu's bits everywhere
#   - the GPU check's step bench (one step a case, 15 s): its harness, launch profile and JSON
#   - the GPU check's kernel bench, whole, at a batch of 2 (~30 s): its harness and JSON, and the
#     same bits from every pair of variants it compares (tiles, ways, launches)
#   - scripts/gpu_check.sh itself from a kit of these binaries (~3 min): its training steps and
#     cpu-vs-cuda audit as on a GPU (the kit's data slice and cpu sides), its summary (every hash
#     pair equal)
#     and the record scripts/gpu_record.py writes from it for docs/gpu.md
# Emulation is slow (a training step of SmallCNN takes seconds) and says nothing of speed, of the
# GPU's memory model or of its float atomics' order: scripts/gpu_check.sh on a GPU still decides.
# --asan: the same under AddressSanitizer and UBSan (build-emu-asan/): a kernel reading or writing
# past a device allocation, or host code touching device memory outside a kernel or a copy (it
# is poisoned there), is reported where it happens: compute-sanitizer's memcheck, without a GPU.
# Some 6x slower: the ResNet-18 audit, the benches, the GPU check script, the guarantee matrix,
# the mpirun runs and the backward and shuffled device ops tests are left out. CI runs both
# (.ci/run): ~11 + ~8 min on 2 cores, builds aside.
# --jobs N: checks run N at a time (default: one a core); their outputs print whole as each ends.
#   scripts/emulate.sh [--asan] [--no-build] [--jobs N]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
source scripts/kit/contents.sh  # the GPU kit's binaries (kit_targets, kit_binaries)
asan=0 build_it=1 jobs=$(nproc)
usage="usage: scripts/emulate.sh [--asan] [--no-build] [--jobs N]"
while (($#)); do
  case $1 in
    --asan) asan=1 ;;
    --no-build) build_it=0 ;;
    --jobs) [[ ${2:-} =~ ^[1-9][0-9]*$ ]] || { echo "$usage (--jobs: a count, 1 or more)"; exit 2; }
      jobs=$2
      shift ;;
    *) echo "$usage"; exit 2 ;;
  esac
  shift
done
flags=(-DCMAKE_BUILD_TYPE=Release -DDT_BUILD_BENCH=ON)
targets=(dt_test_hostcuda "${kit_targets[@]}")
build=$root/build-emu
if ((asan)); then
  build=$root/build-emu-asan
  flags=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DDT_BUILD_BENCH=OFF "-DCMAKE_CXX_FLAGS=\
-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer")
  targets=(detrain dt_test_hostcuda dt_test_cuda dt_test_device_ops)
  export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
  export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
fi
if ((build_it)); then
  mkdir -p "$build"
  cmake -S "$root" -B "$build" -G Ninja "${flags[@]}" -DDT_ENABLE_CUDA=EMULATE \
    >"$build/configure.log" 2>&1 || { cat "$build/configure.log"; exit 1; }
  cmake --build "$build" -j2 --target "${targets[@]}"
fi

failed=()
work=$(mktemp -d)
trap 'wait; rm -rf "$work"' EXIT  # (the checks still running first)
mkdir "$work/checks"
launched=()  # the checks in the order they started
# Each check runs in the background, at most $jobs at once (emulation runs on one core: two checks
# at a time take half as long on two), its output kept until it ends and then printed whole.
if ((jobs > 1)); then export OMP_WAIT_POLICY=${OMP_WAIT_POLICY:-passive}; fi  # idle cpu threads
check() {  # check NAME command...: starts it when a slot is free; a failure is remembered
  local name=$1
  shift
  launched+=("$name")
  while (($(jobs -rp | wc -l) >= jobs)); do wait -n || true; done
  (
    t0=$SECONDS result=ok
    "$@" >"$work/checks/$name.out" 2>&1 </dev/null || result=FAILED
    echo "emulate: $name $result ($((SECONDS - t0)) s)" >>"$work/checks/$name.out"
    flock "$work/checks" cat "$work/checks/$name.out"
    echo "$result" >"$work/checks/$name"
  ) &
}
after() {  # after NAME...: waits until these checks have ended (a check that reads their runs)
  local name
  for name in "$@"; do
    [[ " ${launched[*]} " == *" $name "* ]] || { echo "emulate: after $name: not started"; exit 1; }
    while [[ ! -e $work/checks/$name ]]; do
      [[ -n $(jobs -rp) ]] || { echo "emulate: $name ended without a result"; exit 1; }
      wait -n || true
    done
  done
}

backward() { DT_HOSTCUDA_ORDER=backward "$@"; }  # blocks last to first, threads backward
# every launch's blocks and every barrier phase's threads in a random order, from a seed of the
# run's own (on stderr: DT_HOSTCUDA_ORDER=shuffle:SEED replays a failure), and memory handed out
# undefined (reused tensor blocks, scratch) all-ones bytes: NaN where a kernel reads stale values.
# seed=S shuffled ...: the order of seed S (the same S, the same order)
shuffled() { DT_HOSTCUDA_ORDER=shuffle${seed:+:$seed} DT_CUDA_POISON=1 "$@"; }

check numeric-flags python3 tests/e2e/numeric_flags_test.py "$build"  # every compile's float order
check hostcuda-tests "$build/tests/dt_test_hostcuda" --gtest_brief=1
check hostcuda-tests-backward backward "$build/tests/dt_test_hostcuda" --gtest_brief=1
check hostcuda-tests-shuffled shuffled "$build/tests/dt_test_hostcuda" --gtest_brief=1
check cuda-tests "$build/tests/dt_test_cuda" --gtest_brief=1
check device-ops-tests "$build/tests/dt_test_device_ops" --gtest_brief=1 \
  --gtest_filter='Device/DeviceOps.*/Cuda'
# The same with every launch's blocks and threads in the other order, and in random orders: results
# that hang on an order a GPU does not fix show here (the tests compare with the cpu bitwise,
# atomic within a bound).
((asan)) || check device-ops-tests-backward backward "$build/tests/dt_test_device_ops" \
  --gtest_brief=1 --gtest_filter='Device/DeviceOps.*/Cuda'
((asan)) || check device-ops-tests-shuffled shuffled "$build/tests/dt_test_device_ops" \
  --gtest_brief=1 --gtest_filter='Device/DeviceOps.*/Cuda:CudaDevicePoison.*'

data=/usr/share/datasets/fashion-mnist
via=()  # what train starts detrain through (mpirun)
train() {  # train OUT [flags...]: a short run (4 steps of 64, 200 test images)
  local out=$1
  shift
  "${via[@]}" "$build/detrain" train --data-dir "$data" --epochs 1 --batch-size 64 \
    --limit-train 256 --limit-test 200 --eval-batch-size 100 --dropout 0.2 --progress none \
    --out "$work/$out" "$@" >"$work/$out.log" 2>&1 || { cat "$work/$out.log"; return 1; }
}
hash_of() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["weights_sha256"])' \
  "$work/$1/result.json"; }
same_bits() {  # same_bits A B: the two runs' weights_sha256 are equal
  local a b
  a=$(hash_of "$1") b=$(hash_of "$2")
  [[ $a == "$b" ]] || { echo "  $1 $a"; echo "  $2 $b"; return 1; }
}
pair() {  # pair NAME [flags...]: the run on the cpu and on the emulated cuda, same bits
  local name=$1
  shift
  train "$name-cpu" --device cpu "$@" && train "$name-cuda" --device cuda "$@" &&
    same_bits "$name-cpu" "$name-cuda"
}

micro_batches() {  # the exact sites' accumulators on the device, completed through the host
  train micro --device cuda --model smallcnn --impl exact --micro-batch 16 &&
    same_bits smallcnn-exact-cpu micro
}
large_tiles() {  # the large tile shape of the GEMM-shaped kernels over a whole run
  DT_CUDA_TILE=large train large --device cuda --model smallcnn --impl deterministic &&
    same_bits smallcnn-det-cpu large
}
moved() {  # moved FROM TO: 2 of 4 steps on FROM, the rest resumed from its checkpoint on TO
  local out=moved-$1-$2
  train "$out" --device "$1" --model smallcnn --impl deterministic --stop-after 2 &&
    train "$out" --device "$2" --model smallcnn --impl deterministic --resume "$work/$out" &&
    same_bits smallcnn-det-cpu "$out"
}

resnet18_audit() {  # ResNet-18 op by op, cpu against the emulated cuda: identical
  "$build/detrain" audit --json --steps 2 --data-dir "$data" --model resnet18 --impl exact-all \
    --batch-size 32 --limit-train 64 --vs '--device cuda' >"$work/audit.json" 2>"$work/audit.log" ||
    { cat "$work/audit.log"; return 1; }
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))
if not a["identical"]: print(json.dumps(a["first_difference"], indent=1)); sys.exit(1)' \
    "$work/audit.json"
}

mpi_runs() {  # mpirun with the emulated cuda: exact sums make the process count irrelevant
  if ! command -v mpirun >/dev/null ||
    ! "$build/detrain" info | grep '^  mpi  *compiled in' >/dev/null; then
    echo "  no MPI here (scripts/setup.sh installs Open MPI): left out"
    return 0
  fi
  # batch norm's totals and the exact accumulators through the host to the collective and back;
  # 3 processes of micro-batches of 8: uneven shares, 3 micro-steps each
  local mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
    mpirun --oversubscribe) rc=0
  via=("${mpi[@]}" -np 2)
  train mpi-bn --device cuda --model smallcnn-bn --impl exact-all &&
    same_bits smallcnn-bn-exact-all-cpu mpi-bn || rc=1
  via=("${mpi[@]}" -np 3)
  train mpi-micro --device cuda --model smallcnn --impl exact --micro-batch 8 --threads 1 &&
    same_bits smallcnn-exact-cpu mpi-micro || rc=1
  via=()
  return $rc
}
shuffled_runs() {  # the deterministic pair's cuda run shuffled; atomics (fast) per seed
  shuffled train shuffled --device cuda --model smallcnn --impl deterministic &&
    same_bits smallcnn-det-cpu shuffled || return 1
  # The fast preset's float atomics: other weights from another order (as a GPU's from run to
  # run), the same ones from the same seed
  local fast=(--device cuda --model smallcnn --impl fast)
  seed=1 shuffled train fast-1 "${fast[@]}" &&
    seed=1 shuffled train fast-1-again "${fast[@]}" &&
    seed=2 shuffled train fast-2 "${fast[@]}" || return 1
  same_bits fast-1 fast-1-again || return 1
  if [[ $(hash_of fast-1) == "$(hash_of fast-2)" ]]; then
    echo "  the fast preset gave the same weights from two shuffled orders: no atomics seen"
    return 1
  fi
}
backward_run() {  # the deterministic pair's cuda run with blocks and threads backward
  backward train backward --device cuda --model smallcnn --impl deterministic &&
    same_bits smallcnn-det-cpu backward
}
step_bench() {  # the GPU check's step bench, one step a case for 15 s: its harness and JSON
  "$build/bench/dt_gpu_step_bench" --steps 1 --budget-s 15 --profile --models smallcnn \
    >"$work/steps.jsonl" 2>"$work/steps.log" || { cat "$work/steps.log"; return 1; }
  python3 -c 'import json,sys
rows = [json.loads(l) for l in open(sys.argv[1])]
timed = [r for r in rows if "med_ms" in r]
profiles = [r for r in rows if r.get("op") == "profile" and r["kernels"]]
if not timed or not profiles: sys.exit("no timed step or no launch profile: %r" % rows)' \
    "$work/steps.jsonl"
}
matrix() {  # the GPU check's guarantee matrix on the emulated cuda, blocks and threads shuffled
  shuffled "$build/detrain" audit --matrix --json --steps 1 --data-dir "$data" \
    --model smallcnn --limit-train 256 --batch-size 128 --device cuda >"$work/matrix.json" \
    2>"$work/matrix.log" || { cat "$work/matrix.log"; return 1; }
  python3 - "$work/matrix.json" <<'PY'
import json, sys
sys.path.insert(0, "scripts")
import gpu_summary
m = gpu_summary.guarantee_matrix(sys.argv[1])
# every mode but atomic: stable under a rerun and the cpu's; atomic (float atomics in a random
# order) really differs on a rerun somewhere, as on a GPU
moved = [name for name, cells in m["rows"].items()
         if name.endswith(" atomic") and not cells["rerun"]]
if not m["promise_kept"] or not moved:
    sys.exit(f"guarantee matrix: promise kept {m['promise_kept']}, atomic sites that moved on a "
             f"rerun {moved}: {json.dumps(m['rows'], indent=1)}")
print(f"  every mode but atomic kept; atomic moved on a rerun at {', '.join(moved)}")
PY
}
kernel_bench() {  # the GPU check's kernel bench, whole, at a batch of 2: harness, JSON, bits
  "$build/bench/dt_gpu_kernel_bench" --reps 1 --batch 2 --budget-s 600 \
    >"$work/kernels.jsonl" 2>"$work/kernels.log" || { cat "$work/kernels.log"; return 1; }
  python3 - "$work/kernels.jsonl" <<'PY'
import json, sys
sys.path.insert(0, "scripts")
import gpu_summary
rows = [json.loads(line) for line in open(sys.argv[1])]
skipped = [r for r in rows if "skipped" in r]
other = [r for r in rows if any(k.startswith("bits_equal") and r[k] is False for k in r)]
ops = {r["op"] for r in rows}
want = {"conv.wgrad kernel", "conv.dgrad kernel", "tile", "tiny", "optimizer", "channel",
        "conv2d", "linear", "batchnorm2d", "maxpool2d", "dropout", "softmax_cross_entropy"}
modes = {}
for r in rows:
    if "forward_ms" in r:
        modes.setdefault((r["op"], r["shape"]), set()).add(r["mode"])
short = {k: v for k, v in modes.items() if len(v) != 5}
summary = {f.__name__: f(rows)["bits_equal"] for f in (gpu_summary.tiles, gpu_summary.tiny,
                                                       gpu_summary.optimizer, gpu_summary.channels)}
if skipped or other or want - ops or short or not all(summary.values()):
    sys.exit(f"kernel bench: {len(skipped)} lines skipped; variants with other bits: {other}; "
             f"ops missing: {want - ops}; cases short of a mode: {short}; "
             f"gpu_summary's bits_equal: {summary}")
PY
}
gpu_check() {  # scripts/gpu_check.sh itself, its training steps and audit, on the emulated GPU
  local kit=$work/kit out=$work/check
  mkdir -p "$kit/bin"
  for b in "${kit_binaries[@]}"; do ln -s "$build/$b" "$kit/bin/"; done
  python3 scripts/kit/fashion_mnist_slice.py "$data" "$kit/data/fashion-mnist"
  kit_cpu_results "$kit" || return 1
  kit_write_commit "$kit"
  # Its steps run as on a GPU (the kit's slice: 16 steps of 128; the cpu sides the kit's), 30x
  # their limits; the others (tests, ResNet-18, benches) run above, memcheck and the peer need a GPU.
  KIT_DIR=$kit GPU_CHECK_LIMIT_FACTOR=30 GPU_CHECK_BUDGET_S=1500 \
    GPU_CHECK_STEPS='^(detrain-info|cuda-core-tests|train-.*|audit-cpu-vs-cuda)$' \
    scripts/gpu_check.sh "$out" >"$work/check.out" 2>&1
  # every step passed, and the 7 hash pairs and the audit said equal, the pairs' cpu sides the kit's
  local rc=$? said equal
  said=$(cat "$work/check.out")
  equal=$(grep -c "cpu==cuda: equal (.*the kit's$" <<<"$said")
  if ((rc != 0 || equal != 7)) || ! grep -q 'verdict audit-cpu-vs-cuda: identical' <<<"$said"; then
    echo "gpu_check.sh on the emulated GPU: exit $rc, $equal of 7 pairs equal:"
    echo "$said"
    tail -40 "$out/check.log"
    return 1
  fi
  # and the record a lent session writes into docs/gpu.md from it
  python3 scripts/gpu_record.py "$out" >"$work/record.md" && [[ -s $work/record.md ]]
}

if [[ ! -d $data ]]; then
  echo "emulate: $data is missing (scripts/setup.sh installs it): the training pairs are skipped"
  failed+=(data)
else
  # the long ones early, so that none runs alone at the end
  ((asan)) || check guarantee-matrix-shuffled matrix
  check smallcnn-deterministic pair smallcnn-det --model smallcnn --impl deterministic
  check smallcnn-exact pair smallcnn-exact --model smallcnn --impl exact
  check smallcnn-bn-exact-all pair smallcnn-bn-exact-all --model smallcnn-bn --impl exact-all
  ((asan)) || check gpu-check gpu_check
  # (~6x slower under AddressSanitizer, where it would take a quarter of an hour: left out)
  ((asan)) || check resnet18-exact-all-audit resnet18_audit
  # these compare with the cpu runs of the pairs above
  after smallcnn-deterministic smallcnn-exact smallcnn-bn-exact-all
  check smallcnn-shuffled shuffled_runs
  check smallcnn-exact-micro-batches micro_batches
  check smallcnn-deterministic-large-tiles large_tiles
  check smallcnn-deterministic-cuda-cpu moved cuda cpu
  check smallcnn-deterministic-cpu-cuda moved cpu cuda
  check smallcnn-deterministic-backward backward_run
  # (Open MPI's own allocations are never freed: not under LeakSanitizer)
  ((asan)) || check mpirun-cuda mpi_runs
  ((asan)) || check step-bench step_bench
fi
((asan)) || check kernel-bench kernel_bench
wait

for name in "${launched[@]}"; do
  [[ $(cat "$work/checks/$name" 2>/dev/null) == ok ]] || failed+=("$name")
done
if ((${#failed[@]})); then
  echo "emulate: FAILED: ${failed[*]}"
  exit 1
fi
echo "emulate: every check passed"
