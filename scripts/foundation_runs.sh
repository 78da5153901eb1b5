#!/usr/bin/env bash
# Reproduces the foundation acceptance runs and writes docs/results/foundation.md:
#   - SmallCNN on Fashion-MNIST, the tooling paper's recipe (defaults), 10 epochs, seeds 0 and 1,
#     and seed 0 again to show the weights hash repeats;
#   - MediumCNN k = 1, 3, 5, 7 and ResNet-18 on a 2,048-image subset: the training loss falls.
# Takes about 10-20 minutes on 2 cores. Usage: scripts/foundation_runs.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:-runs/foundation}
exe=build/detrain
[[ -x $exe ]] || scripts/build.sh
mkdir -p "$out"
run() {  # name, flags...
  local name=$1; shift
  echo "== $name: $exe train $* --out $out/$name"
  "$exe" train "$@" --progress plain --out "$out/$name" 2>&1 | tail -n 3
}
run smallcnn-seed0 --seed 0
run smallcnn-seed1 --seed 1
run smallcnn-seed0-again --seed 0
for k in 1 3 5 7; do
  run mediumcnn-k$k --model mediumcnn --kernel-size $k --epochs 3 --limit-train 2048 \
      --limit-test 1000 --batch-size 64 --lr 1e-3
done
run resnet18 --model resnet18 --epochs 2 --limit-train 1024 --limit-test 500 --batch-size 64 \
    --lr 1e-3
python3 scripts/summarize_runs.py "$out" > docs/results/foundation.md
echo "wrote docs/results/foundation.md"
