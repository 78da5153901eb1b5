#!/usr/bin/env bash
# The emulated build's checks that are runs of detrain, its benches or scripts/gpu_check.sh rather
# than a test binary (tests/emulated/CMakeLists.txt registers each; scripts/emulate.sh runs them).
# Runs go to WORK/NAME, where the checks that compare with a pair's cpu run find it.
#   tests/emulated/checks.sh BUILD WORK CHECK [ARGS...]     (from the repository root)
set -uo pipefail
build=$1 work=$2 check=$3
shift 3
data=/usr/share/datasets/fashion-mnist
[[ -d $data ]] || { echo "$data is missing (scripts/setup.sh installs it)"; exit 1; }
mkdir -p "$work"

via=()  # what train starts detrain through (mpirun)
train() {  # train OUT [flags...]: a short run (4 steps of 64, 200 test images); --resume: goes on
  local out=$1
  shift
  [[ " $* " == *" --resume "* ]] || rm -rf "${work:?}/$out"
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
ordered() {  # ordered NAME: the deterministic pair's cuda run in DT_HOSTCUDA_ORDER's order
  train "$1" --device cuda --model smallcnn --impl deterministic && same_bits smallcnn-det-cpu "$1"
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
shuffled_atomics() {  # the fast preset's float atomics: other weights from another order (as a
  # GPU's from run to run), the same ones from the same seed
  local fast=(--device cuda --model smallcnn --impl fast)
  DT_HOSTCUDA_ORDER=shuffle:1 train fast-1 "${fast[@]}" &&
    DT_HOSTCUDA_ORDER=shuffle:1 train fast-1-again "${fast[@]}" &&
    DT_HOSTCUDA_ORDER=shuffle:2 train fast-2 "${fast[@]}" && same_bits fast-1 fast-1-again ||
    return 1
  if [[ $(hash_of fast-1) == "$(hash_of fast-2)" ]]; then
    echo "  the fast preset gave the same weights from two shuffled orders: no atomics seen"
    return 1
  fi
}
gpt_generate() {  # a small GPT on both devices: the same weights; then generate's KV-cache
  # steps on the emulated cuda give the cpu's bytes and log-probabilities
  local text=$work/gpt-text.txt
  python3 - "$text" <<'PY' || return 1
import random, sys
words = "the devil is a word of wit and to that which man his with not by one who".split()
rng = random.Random(1)
open(sys.argv[1], "w").write(" ".join(rng.choice(words) for _ in range(3000)))
PY
  local gpt=(--model gpt --data-file "$text" --layers 2 --heads 2 --width 32 --context 48
    --limit-train 64 --limit-test 8 --batch-size 16 --eval-batch-size 8 --impl exact)
  train gpt-cpu --device cpu "${gpt[@]}" && train gpt-cuda --device cuda "${gpt[@]}" &&
    same_bits gpt-cpu gpt-cuda || return 1
  local g=("$build/detrain" generate --from "$work/gpt-cpu" --prompt "The " --tokens 120 --seed 3
    --json)
  "${g[@]}" --device cpu >"$work/generate-cpu.json" &&
    "${g[@]}" --device cuda >"$work/generate-cuda.json" || return 1
  python3 - "$work/generate-cpu.json" "$work/generate-cuda.json" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
same = a["tokens"] == b["tokens"] and a["log_probs"] == b["log_probs"]
print("  generate: cpu and cuda", "agree" if same else "DIFFER",
      "on", len(a["tokens"]), "bytes,", a["context_restarts"], "cache restarts")
sys.exit(0 if same and a["context_restarts"] >= 1 else 1)
PY
}
mpi_runs() {  # mpirun with the emulated cuda: exact sums make the process count irrelevant
  if ! command -v mpirun >/dev/null || ! "$build/detrain" info | grep -q '^  mpi  *compiled in'
  then
    echo "  no MPI here (scripts/setup.sh installs Open MPI): left out"
    return 0
  fi
  # batch norm's totals and the exact accumulators through the host to the collective and back;
  # 3 processes of micro-batches of 8: uneven shares, 3 micro-steps each. --overlap auto is on
  # for a GPU run: the accumulators leave the device during the backward, bucket by bucket.
  local mpi=(env OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 mpirun --oversubscribe)
  via=("${mpi[@]}" -np 2)
  train mpi-bn --device cuda --model smallcnn-bn --impl exact-all --bucket-elements 2000 &&
    same_bits smallcnn-bn-exact-all-cpu mpi-bn || return 1
  python3 -c 'import json,sys; b=json.load(open(sys.argv[1]))["gradient_buckets"]
if b < 2: print("  mpi-bn: gradient_buckets", b, "(expected overlap on a GPU run)"); sys.exit(1)' \
    "$work/mpi-bn/result.json" || return 1
  via=("${mpi[@]}" -np 3)
  train mpi-micro --device cuda --model smallcnn --impl exact --micro-batch 8 --threads 1 &&
    same_bits smallcnn-exact-cpu mpi-micro
}
resnet18_audit() {  # ResNet-18 op by op, cpu against the emulated cuda: identical
  "$build/detrain" audit --json --steps 2 --data-dir "$data" --model resnet18 --impl exact-all \
    --batch-size 32 --limit-train 64 --vs '--device cuda' >"$work/audit.json" || return 1
  python3 -c 'import json,sys; a=json.load(open(sys.argv[1]))
if not a["identical"]: print(json.dumps(a["first_difference"], indent=1)); sys.exit(1)' \
    "$work/audit.json"
}
matrix() {  # the GPU check's guarantee matrix (blocks and threads shuffled: CMakeLists.txt)
  "$build/detrain" audit --matrix --json --steps 1 --data-dir "$data" --model smallcnn \
    --limit-train 256 --batch-size 128 --device cuda >"$work/matrix.json" || return 1
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
step_bench() {  # the GPU check's step bench, one step a case for 15 s: its harness and JSON
  "$build/bench/dt_gpu_step_bench" --steps 1 --budget-s 15 --profile --models smallcnn \
    >"$work/steps.jsonl" || return 1
  python3 -c 'import json,sys
rows = [json.loads(l) for l in open(sys.argv[1])]
timed = [r for r in rows if "med_ms" in r]
profiles = [r for r in rows if r.get("op") == "profile" and r["kernels"]]
if not timed or not profiles: sys.exit("no timed step or no launch profile: %r" % rows)' \
    "$work/steps.jsonl"
}
kernel_bench() {  # the GPU check's kernel bench, whole, at a batch of 2: harness, JSON, bits
  "$build/bench/dt_gpu_kernel_bench" --reps 1 --batch 2 --budget-s 600 >"$work/kernels.jsonl" ||
    return 1
  python3 - "$work/kernels.jsonl" <<'PY'
import json, sys
sys.path.insert(0, "scripts")
import gpu_summary
rows = [json.loads(line) for line in open(sys.argv[1])]
skipped = [r for r in rows if "skipped" in r]
other = [r for r in rows if any(k.startswith("bits_equal") and r[k] is False for k in r)]
want = {"conv.wgrad kernel", "conv.dgrad kernel", "tile", "tiny", "optimizer", "channel",
        "conv2d", "linear", "batchnorm2d", "maxpool2d", "dropout", "softmax_cross_entropy"}
missing = want - {r["op"] for r in rows}
modes = {}
for r in rows:
    if "forward_ms" in r:
        modes.setdefault((r["op"], r["shape"]), set()).add(r["mode"])
short = {k: v for k, v in modes.items() if len(v) != 5}
bits = {k: v["bits_equal"] for k, v in gpu_summary.compared(rows).items()}
if skipped or other or missing or short or not all(bits.values()):
    sys.exit(f"kernel bench: {len(skipped)} lines skipped; variants with other bits: {other}; "
             f"ops missing: {missing}; cases short of a mode: {short}; summary's bits: {bits}")
PY
}
gpu_check() {  # scripts/gpu_check.sh itself from a kit of these binaries, as on a GPU
  source scripts/kit/contents.sh
  local kit=$work/kit out=$work/check rc said
  rm -rf "$kit" "$out"
  mkdir -p "$kit/bin"
  for b in "${kit_binaries[@]}"; do ln -s "$build/$b" "$kit/bin/"; done
  kit_fill "$kit" "$data" || return 1
  # Its training steps and cpu-vs-cuda audit as on a GPU (the kit's slice: 16 steps of 128; the
  # cpu sides the kit's), at 30x their limits; the tests, ResNet-18 and the benches are checks of
  # their own here, and the peer needs a GPU.
  KIT_DIR=$kit GPU_CHECK_LIMIT_FACTOR=30 GPU_CHECK_BUDGET_S=1500 \
    GPU_CHECK_STEPS='^(detrain-info|cuda-core-tests|train-.*|audit-cpu-vs-cuda)$' \
    scripts/gpu_check.sh "$out" >"$work/check.out" 2>&1
  rc=$? said=$(cat "$work/check.out")
  # every step passed, the 7 hash pairs and the audit said equal, and the record says so too
  if ((rc != 0)) || [[ $(grep -c "cpu==cuda: equal (" <<<"$said") != 7 ]] ||
    ! grep -q 'verdict audit-cpu-vs-cuda: identical' <<<"$said" ||
    [[ $(grep -c "^- verdict .*cpu==cuda: equal (" "$out/record.md") != 7 ]]; then
    echo "gpu_check.sh on the emulated GPU: exit $rc:"
    echo "$said"
    cat "$out/record.md"
    return 1
  fi
}

"$check" "$@"
