# shellcheck shell=bash disable=SC2034  # (sourced: kit_targets is for the sourcing scripts)
# What a GPU kit holds, sourced by scripts/gpu_kit.sh (the binaries built for a GPU, copied),
# tests/emulated/checks.sh (the emulated build's, linked) and scripts/gpu_check.sh (the recipe):
# its binaries (paths in a build tree; their names are the cmake targets) and the CPU-vs-GPU hash
# pairs, whose cpu side kit_fill runs where the kit is made.
kit_binaries=(detrain tests/dt_test_cuda tests/dt_test_device_ops bench/dt_gpu_step_bench
  bench/dt_gpu_kernel_bench)
kit_targets=("${kit_binaries[@]##*/}")
kit_runs="smallcnn:deterministic smallcnn:exact smallcnn-bn:exact-all"  # MODEL:IMPL, the pairs

kit_recipe() {  # kit_recipe MODEL:IMPL: a pair's train flags but --data-dir, --device and --out
  echo "--model ${1%%:*} --impl ${1#*:} --epochs 1 --batch-size 128 --eval-batch-size 500" \
    "--dropout 0.2 --progress none"
}
kit_sha() {  # kit_sha RESULT_JSON: a run's weights_sha256, nothing without one
  grep -o '"weights_sha256": *"[0-9a-f]*"' "$1" 2>/dev/null | grep -o '[0-9a-f]\{64\}'
}

# kit_fill KIT DATA, KIT/bin filled: the first 2048 training and 1000 test images of DATA
# (Fashion-MNIST IDX, plain or .gz; the pairs' 16 steps of 128) uncompressed in KIT/data/, each
# pair's cpu run by the kit's own detrain (KIT/cpu/MODEL-IMPL/result.json) and KIT/COMMIT. The
# cpu's bits are the same on every machine (the engine's promise): a GPU host runs only the GPU
# side.
kit_fill() {
  local kit=$1 run dir
  python3 - "$2" "$kit/data/fashion-mnist" <<'PY' || return 1
import gzip, os, struct, sys
src, dst = sys.argv[1:]
os.makedirs(dst, exist_ok=True)
for name, keep, head in (("train-images-idx3", 2048, 16), ("train-labels-idx1", 2048, 8),
                         ("t10k-images-idx3", 1000, 16), ("t10k-labels-idx1", 1000, 8)):
    path = os.path.join(src, name + "-ubyte")
    data = (open(path, "rb") if os.path.exists(path) else gzip.open(path + ".gz")).read()
    count, *dims = struct.unpack(f">{head // 4 - 1}I", data[4:head])
    if count < keep:
        sys.exit(f"kit_fill: {path} has {count} items, {keep} wanted")
    size = dims[0] * dims[1] if dims else 1  # an image's rows x columns, or one label
    with open(os.path.join(dst, name + "-ubyte"), "wb") as f:
        f.write(data[:4] + struct.pack(">I", keep) + data[8:head + keep * size])
PY
  rm -rf "$kit/cpu"
  for run in $kit_runs; do
    dir=$kit/cpu/${run/:/-}
    mkdir -p "$dir"
    # shellcheck disable=SC2046  # the recipe's flags are words
    LD_LIBRARY_PATH="$kit/lib:${LD_LIBRARY_PATH:-}" "$kit/bin/detrain" train $(kit_recipe "$run") \
      --data-dir "$kit/data/fashion-mnist" --device cpu --out "$dir.run" >"$dir.log" 2>&1 ||
      { cat "$dir.log"; return 1; }
    mv "$dir.run/result.json" "$dir/" && rm -rf "$dir.run" "$dir.log"
  done
  { git describe --always --dirty --abbrev=40 || echo unknown; } >"$kit/COMMIT" 2>/dev/null
}
