#!/usr/bin/env bash
# Training-step throughput of `mpirun -np P detrain train` for P = 1..4 per --impl preset, with
# the gradients sent during the backward (--overlap on) and after it (off), on Fashion-MNIST
# (the Debian package's install location), with the weights hash of each run, so that one table
# shows what P and overlap cost and that neither changes the weights (exact: for any P).
# On one 2-core machine the processes share the cores (--threads is split among them): this
# measures the overhead of splitting and exchanging, not a speed-up. Rounds interleave the
# configurations; one JSON object per run, then the median images/s per configuration.
#   bench/mpi/step_vs_processes.sh [BUILD_DIR] [--limit-train N] [--models smallcnn,resnet18]
#       [--presets deterministic,exact] [--processes 1,2,4] [--rounds R]
set -euo pipefail
cd "$(dirname "$0")/../.."
build=build
if (($#)) && [[ $1 != --* ]]; then build=$1; shift; fi
limit=4096 models=smallcnn,smallcnn-bn presets=deterministic,exact,fast processes=1,2,3,4 rounds=1
while (($#)); do
  case $1 in
    --limit-train) limit=$2; shift 2 ;;
    --models) models=$2; shift 2 ;;
    --presets) presets=$2; shift 2 ;;
    --processes) processes=$2; shift 2 ;;
    --rounds) rounds=$2; shift 2 ;;
    *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
  esac
done
exe=$build/detrain
[[ -x $exe ]] || { echo "no $exe (build first: scripts/build.sh)" >&2; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMP_WAIT_POLICY=passive
cores=$(nproc)
for model in ${models//,/ }; do
  for preset in ${presets//,/ }; do
    for ((round = 1; round <= rounds; ++round)); do
      for P in ${processes//,/ }; do
        overlaps="on off"
        ((P > 1)) || overlaps=off  # one process exchanges nothing
        for overlap in $overlaps; do
          threads=$((cores / P)); ((threads >= 1)) || threads=1
          out=$tmp/$model-$preset-$P-$overlap
          mpiexec --oversubscribe -np "$P" "$exe" train --model "$model" --impl "$preset" \
            --limit-train "$limit" --limit-test 512 --epochs 1 --batch-size 128 \
            --threads "$threads" --overlap "$overlap" --progress none --out "$out" >/dev/null
          python3 - "$out/result.json" "$threads" "$round" <<'PY' | tee -a "$tmp/runs.jsonl"
import json, sys
r = json.load(open(sys.argv[1]))
print(json.dumps({"bench": "step_vs_processes", "model": r["model"],
                  "impl": r["config"]["impl"], "processes": r["processes"],
                  "overlap": r["config"]["overlap"], "buckets": r["gradient_buckets"],
                  "round": int(sys.argv[3]), "threads_per_process": int(sys.argv[2]),
                  "images_per_second": round(r["images_per_second"], 1),
                  "bytes_sent_per_step": r["bytes_sent_per_step"],
                  "allreduce": r.get("allreduce"),
                  "weights_sha256": r["weights_sha256"][:16]}))
PY
        done
      done
    done
  done
done
python3 - "$tmp/runs.jsonl" <<'PY'
import json, statistics, sys
runs = [json.loads(line) for line in open(sys.argv[1])]
keys = []
for r in runs:
    k = (r["model"], r["impl"], r["processes"], r["overlap"])
    if k not in keys:
        keys.append(k)
print("model        impl           P  overlap  images/s (median)  hashes")
for k in keys:
    rs = [r for r in runs if (r["model"], r["impl"], r["processes"], r["overlap"]) == k]
    ips = statistics.median(r["images_per_second"] for r in rs)
    hashes = sorted({r["weights_sha256"] for r in rs})
    print(f"{k[0]:12} {k[1]:14} {k[2]}  {k[3]:7}  {ips:17.1f}  {' '.join(hashes)}")
PY
