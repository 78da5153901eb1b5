# What a GPU kit holds, sourced by scripts/gpu_kit.sh (the binaries built for a GPU, copied),
# scripts/emulate.sh (the emulated build's, linked) and scripts/gpu_check.sh (the recipe): one list
# of its binaries (paths in a build tree; their names are the cmake targets), its COMMIT file, and
# the cpu side of each CPU-vs-GPU hash pair, run once where the kit is made.
kit_binaries=(detrain tests/dt_test_cuda tests/dt_test_device_ops bench/dt_gpu_step_bench
  bench/dt_gpu_kernel_bench)
kit_targets=("${kit_binaries[@]##*/}")
kit_runs="smallcnn:deterministic smallcnn:exact smallcnn-bn:exact-all"  # MODEL:IMPL, the pairs

kit_write_commit() {  # kit_write_commit KIT: the commit the kit was built from (gpu_check says it)
  git describe --always --dirty --abbrev=40 >"$1/COMMIT" 2>/dev/null || echo unknown >"$1/COMMIT"
}

kit_recipe() {  # kit_recipe MODEL:IMPL: a pair's train flags but --data-dir, --device and --out
  echo "--model ${1%%:*} --impl ${1#*:} --epochs 1 --batch-size 128 --eval-batch-size 500" \
    "--dropout 0.2 --progress none"
}

# kit_cpu_results KIT: each pair's cpu run by the kit's own detrain, its result.json kept in
# KIT/cpu/NAME/, and KIT/cpu/index.json (model, impl, flags, weights_sha256 a pair). The cpu's
# bits are the same on every machine (the engine's promise): a GPU host runs only the GPU side.
kit_cpu_results() {
  local kit=$1 run dir pairs=()
  rm -rf "$kit/cpu"
  mkdir -p "$kit/cpu"
  for run in $kit_runs; do
    dir=$kit/cpu/${run/:/-}
    # shellcheck disable=SC2046  # the recipe's flags are words
    LD_LIBRARY_PATH="$kit/lib:${LD_LIBRARY_PATH:-}" "$kit/bin/detrain" train $(kit_recipe "$run") \
      --data-dir "$kit/data/fashion-mnist" --device cpu --out "$dir.run" >"$dir.log" 2>&1 ||
      { cat "$dir.log"; return 1; }
    mkdir "$dir" && mv "$dir.run/result.json" "$dir/" && rm -rf "$dir.run" "$dir.log"
    pairs+=("\"${run/:/-}\": {\"model\": \"${run%%:*}\", \"impl\": \"${run#*:}\", \"flags\":
 \"$(kit_recipe "$run")\", \"weights_sha256\": \"$(kit_sha "$dir/result.json")\"}")
  done
  (IFS=,; echo "{${pairs[*]}}") >"$kit/cpu/index.json"
}

kit_sha() {  # kit_sha RESULT_JSON: a run's weights_sha256, nothing without one
  grep -o '"weights_sha256": *"[0-9a-f]*"' "$1" 2>/dev/null | grep -o '[0-9a-f]\{64\}'
}
