# hostcuda (tests/hostcuda/): CUDA sources compiled by the host compiler, for DT_ENABLE_CUDA=EMULATE.
# dt_hostcuda_sources(OUT src...) rewrites each .cu/.cuh (tests/hostcuda/rewrite_cu.py: launches
# and shared memory declarations) into ${CMAKE_BINARY_DIR}/hostcuda/<same path>, a .cu as a
# .cu.cpp compiled as C++ with the emulated <cuda_runtime.h> force-included, as nvcc includes the
# real one. A target compiling them puts ${DT_HOSTCUDA_TREE} before the source tree on its include
# path (target_include_directories BEFORE), so that rewritten .cuh headers are the ones included.
set(DT_HOSTCUDA_TREE ${CMAKE_BINARY_DIR}/hostcuda)
set(DT_HOSTCUDA_REWRITE ${PROJECT_SOURCE_DIR}/tests/hostcuda/rewrite_cu.py)
set(DT_HOSTCUDA_HEADER ${PROJECT_SOURCE_DIR}/tests/hostcuda/cuda_runtime.h)
# The kernels' explicit fma() inline to one instruction where the build machine has FMA (a libm
# call each otherwise: a third of an emulated training step). Same bits either way (fma rounds
# once); the emulated build runs where it is built.
include(CheckCXXSourceRuns)
set(CMAKE_REQUIRED_FLAGS -mfma)
check_cxx_source_runs("int main() { return __builtin_cpu_supports(\"fma\") ? 0 : 1; }"
                      DT_HOSTCUDA_HOST_FMA)
unset(CMAKE_REQUIRED_FLAGS)
# DT_HOSTCUDA_KERNELS marks a rewritten CUDA source (kernel code: GridPos::here, DeviceSync's
# barrier, launch_elementwise); host code that includes <cuda_runtime.h> sees DT_HOSTCUDA only.
set(DT_HOSTCUDA_FLAGS "-include;${DT_HOSTCUDA_HEADER};-DDT_HOSTCUDA_KERNELS=1")
if(DT_HOSTCUDA_HOST_FMA)
  list(APPEND DT_HOSTCUDA_FLAGS -mfma)
endif()

function(dt_hostcuda_sources OUT)
  set(outs)
  foreach(src ${ARGN})
    file(RELATIVE_PATH rel ${PROJECT_SOURCE_DIR} ${src})
    if(src MATCHES "\\.cu$")
      set(dst ${DT_HOSTCUDA_TREE}/${rel}.cpp)
    else()
      set(dst ${DT_HOSTCUDA_TREE}/${rel})
    endif()
    add_custom_command(OUTPUT ${dst}
      COMMAND ${Python3_EXECUTABLE} ${DT_HOSTCUDA_REWRITE} ${src} ${dst}
      DEPENDS ${src} ${DT_HOSTCUDA_REWRITE}
      COMMENT "hostcuda: rewriting ${rel}" VERBATIM)
    if(src MATCHES "\\.cu$")
      set_source_files_properties(${dst} PROPERTIES COMPILE_OPTIONS "${DT_HOSTCUDA_FLAGS}")
    endif()
    list(APPEND outs ${dst})
  endforeach()
  set(${OUT} ${outs} PARENT_SCOPE)
endfunction()
