#!/usr/bin/env bash
# The GPU kit's own binaries, run here without a GPU (CI, after scripts/gpu_kit.sh): the whole
# scripts/gpu_check.sh from the kit, whose steps that need no device must pass (detrain info,
# the CUDA test binaries, which skip their device tests and run the stand-in's, and the cpu
# sides of the CPU-vs-GPU runs) and which must write its summary. So a kit whose binaries do not
# load (a library left out, a glibc too new) or whose check script breaks fails here, not in the
# GPU session's few minutes. Usage: scripts/gpu_kit_smoke.sh (KIT_DIR as gpu_check.sh).
set -uo pipefail
cd "$(dirname "$0")/.."
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
scripts/gpu_check.sh "$out" >"$out/stdout" 2>&1  # exit 1 here: the device steps fail
python3 - "$out" <<'PY'
import json, os, sys
out = sys.argv[1]
path = os.path.join(out, "summary.json")
if not os.path.exists(path):
    print(open(os.path.join(out, "stdout")).read()[-3000:])
    sys.exit("gpu_kit_smoke.sh: gpu_check.sh wrote no summary.json")
steps = {s["step"]: s["status"] for s in json.load(open(path))["steps"]}
need = ["detrain-info", "cuda-core-tests", "device-ops-tests"] + \
       [n for n in steps if n.startswith("train-") and n.endswith("-cpu") and "-cuda" not in n]
bad = [f"{n}: {steps.get(n, 'missing')}" for n in need if steps.get(n) != "0"]
if len(need) < 6 or bad:
    log = open(os.path.join(out, "check.log")).read()
    print(log[-4000:])
    sys.exit(f"gpu_kit_smoke.sh: steps that need no GPU did not pass: {bad or need}")
print(f"gpu_kit_smoke.sh: the kit's binaries ran here: {', '.join(need)} passed")
PY
