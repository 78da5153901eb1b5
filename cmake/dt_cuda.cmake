# CUDA detection. AUTO compiles the CUDA parts when nvcc is found and silently stays CPU-only
# otherwise; ON fails with a clear message; OFF never looks. A CPU-only build never needs nvcc.
# EMULATE builds the CUDA backend with the host compiler against hostcuda, the CUDA runtime
# emulated on the host (tests/hostcuda/, scripts/emulate.sh): the `cuda` device then runs the
# backend's own launchers and kernels on the CPU, for tests on machines without a GPU.
set(DT_WITH_CUDA OFF)
set(DT_CUDA_EMULATED OFF)
if(DT_ENABLE_CUDA STREQUAL "EMULATE")
  set(DT_WITH_CUDA ON)
  set(DT_CUDA_EMULATED ON)
  find_package(Python3 REQUIRED COMPONENTS Interpreter)  # tests/hostcuda/rewrite_cu.py
  message(STATUS "detrain: CUDA backend EMULATED on the host (hostcuda; not for speed)")
elseif(NOT DT_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    # nvcc is often installed outside PATH; its conventional location is /usr/local/cuda.
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(dt_cuda_arch_why "from the configure line")
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # $CUDAARCHS, else this machine's GPUs, else 80 (cmake/dt_cuda_arch.cmake). Not "native":
      # it fails where there is no GPU, which is every build machine here.
      include(dt_cuda_arch)
      dt_default_cuda_architectures(CMAKE_CUDA_ARCHITECTURES dt_cuda_arch_why
                                    "${CMAKE_CUDA_COMPILER}")
    endif()
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    # The contract headers (kernels/*.h) are C++20. CMake 3.25 does not know nvcc 12+'s C++20
    # dialect flag: teach it.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    list(APPEND CMAKE_CUDA_COMPILE_FEATURES cuda_std_20)
    set(CMAKE_CUDA_STANDARD 20)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(DT_WITH_CUDA ON)
    message(STATUS "detrain: CUDA backend ON (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, arch "
                   "${CMAKE_CUDA_ARCHITECTURES}: ${dt_cuda_arch_why})")
  elseif(DT_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "DT_ENABLE_CUDA=ON but no CUDA compiler was found. Install the CUDA "
                        "toolkit or set CMAKE_CUDA_COMPILER, or configure with -DDT_ENABLE_CUDA=OFF.")
  else()
    message(STATUS "detrain: CUDA backend OFF (no nvcc found)")
  endif()
endif()
