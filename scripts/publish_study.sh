#!/usr/bin/env bash
# Copies a finished study's report into the repository (docs/results/<name>/): report.md,
# summary.csv, study.json and plots/ — not the replicas (weights and logits stay in runs/).
#   scripts/publish_study.sh runs/study-fmnist docs/results/study-fashion-mnist
set -euo pipefail
if [[ $# -ne 2 ]]; then
  echo "usage: $0 STUDY_DIR DEST_DIR" >&2
  exit 2
fi
src=$1 dest=$2
for f in study.json summary.csv report.md; do
  [[ -f "$src/$f" ]] || { echo "publish_study: $src/$f missing: has the study finished?" >&2; exit 1; }
done
mkdir -p "$dest/plots"
cp "$src/study.json" "$src/summary.csv" "$src/report.md" "$dest/"
cp "$src"/plots/*.svg "$dest/plots/"
echo "publish_study: $dest (report.md, summary.csv, study.json, plots/)"
