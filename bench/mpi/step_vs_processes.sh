#!/usr/bin/env bash
# Training-step throughput of `mpirun -np P detrain train` for P = 1..4 per --impl preset, on
# Fashion-MNIST (the Debian package's install location), with the weights hash of each run, so
# that one table shows what P costs and that exact gives one set of weights for every P.
# On one 2-core machine the processes share the cores (--threads is split among them): this
# measures the overhead of splitting and exchanging, not a speed-up. One JSON object per run.
#   bench/mpi/step_vs_processes.sh [BUILD_DIR] [--limit-train N] [--models smallcnn,smallcnn-bn]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=${1:-build}
limit=4096 models=smallcnn,smallcnn-bn presets="deterministic exact fast"
shift || true
while (($#)); do
  case $1 in
    --limit-train) limit=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    *) echo "unknown argument $1" >&2; exit 2 ;;
  esac
done
exe=$build/detrain
[[ -x $exe ]] || { echo "no $exe (build first: scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
cores=$(nproc)
for model in ${models//,/ }; do
  for preset in $presets; do
    for P in 1 2 3 4; do
      threads=$((cores / P)); ((threads >= 1)) || threads=1
      out=$tmp/$model-$preset-$P
      mpiexec --oversubscribe -np "$P" "$exe" train --model "$model" --impl "$preset" \
        --limit-train "$limit" --limit-test 512 --epochs 1 --batch-size 128 \
        --threads "$threads" --progress none --out "$out" >/dev/null
      python3 - "$out/result.json" "$threads" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"bench": "step_vs_processes", "model": r["model"],
                  "impl": r["config"]["impl"], "processes": r["processes"],
                  "threads_per_process": int(sys.argv[2]),
                  "images_per_second": round(r["images_per_second"], 1),
                  "bytes_sent_per_step": r["bytes_sent_per_step"],
                  "allreduce": r.get("allreduce"),
                  "weights_sha256": r["weights_sha256"][:16]}))
PY
    done
  done
done
