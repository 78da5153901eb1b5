# What a GPU kit holds, sourced by scripts/gpu_kit.sh (the binaries built for a GPU, copied) and
# scripts/emulate.sh (the emulated build's, linked, for scripts/gpu_check.sh to run from): one list
# of its binaries (paths in a build tree; their names are the cmake targets) and its COMMIT file.
kit_binaries=(detrain tests/dt_test_cuda tests/dt_test_device_ops bench/dt_gpu_step_bench
  bench/dt_gpu_kernel_bench)
kit_targets=("${kit_binaries[@]##*/}")

kit_write_commit() {  # kit_write_commit KIT: the commit the kit was built from (gpu_check reports it)
  git describe --always --dirty --abbrev=40 >"$1/COMMIT" 2>/dev/null || echo unknown >"$1/COMMIT"
}
