# The CUDA architectures a build compiles for when the configure line does not say
# (-DCMAKE_CUDA_ARCHITECTURES=...), in this order:
#   1. $CUDAARCHS, CMake's own environment variable for it;
#   2. the compute capability of every GPU nvidia-smi lists on this machine (8.0 -> 80: sm_80
#      machine code plus compute_80 PTX), so that a build on a GPU host runs machine code there
#      instead of having the driver JIT-compile every kernel from PTX at first use; a capability
#      newer than the compiler knows becomes the newest it does (its PTX is JIT-compiled);
#   3. 80: no GPU on the machine (the build machines): one portable real arch plus its PTX.
# dt_default_cuda_architectures(OUT WHY NVCC): OUT the list, WHY a phrase saying where it came
# from. nvidia-smi is looked up as DT_NVIDIA_SMI (tests/cmake/cuda_arch_test.cmake sets it to a
# stand-in); NVCC lists what the compiler knows (--list-gpu-arch; empty: not checked).
function(dt_default_cuda_architectures out why nvcc)
  if(NOT "$ENV{CUDAARCHS}" STREQUAL "")
    set(${out} "$ENV{CUDAARCHS}" PARENT_SCOPE)
    set(${why} "from $CUDAARCHS" PARENT_SCOPE)
    return()
  endif()
  find_program(DT_NVIDIA_SMI nvidia-smi)
  set(found "")
  if(DT_NVIDIA_SMI)
    execute_process(COMMAND "${DT_NVIDIA_SMI}" --query-gpu=compute_cap --format=csv,noheader
                    RESULT_VARIABLE rc OUTPUT_VARIABLE caps ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0)
      string(REPLACE "\n" ";" caps "${caps}")
      foreach(cap IN LISTS caps)
        string(STRIP "${cap}" cap)
        if(cap MATCHES "^([0-9]+)\\.([0-9])$")
          list(APPEND found "${CMAKE_MATCH_1}${CMAKE_MATCH_2}")
        endif()
      endforeach()
    endif()
  endif()
  if(found STREQUAL "")
    set(${out} 80 PARENT_SCOPE)
    set(${why} "no GPU found on this machine by nvidia-smi" PARENT_SCOPE)
    return()
  endif()
  # The compiler's own list (compute_50 ... compute_120): a capability it does not know becomes
  # the newest one below it, whose PTX the driver JIT-compiles for the newer GPU.
  set(known "")
  if(nvcc)
    execute_process(COMMAND "${nvcc}" --list-gpu-arch RESULT_VARIABLE rc OUTPUT_VARIABLE listed
                    ERROR_QUIET TIMEOUT 30)
    if(rc EQUAL 0)
      string(REGEX MATCHALL "compute_[0-9]+" listed "${listed}")
      string(REPLACE "compute_" "" known "${listed}")
    endif()
  endif()
  set(archs "")
  foreach(arch IN LISTS found)
    if(NOT known STREQUAL "" AND NOT arch IN_LIST known)
      set(best "")
      foreach(k IN LISTS known)
        if(k LESS arch AND (best STREQUAL "" OR k GREATER best))
          set(best ${k})
        endif()
      endforeach()
      if(best STREQUAL "")
        continue()  # older than anything the compiler knows: it cannot build for it at all
      endif()
      set(arch ${best})
    endif()
    list(APPEND archs ${arch})
  endforeach()
  list(REMOVE_DUPLICATES archs)
  string(REPLACE ";" ", " found "${found}")
  list(SORT archs COMPARE NATURAL)
  if(archs STREQUAL "")
    set(${out} 80 PARENT_SCOPE)
    set(${why} "the GPUs nvidia-smi found (${found}) are older than nvcc builds for" PARENT_SCOPE)
    return()
  endif()
  set(${out} "${archs}" PARENT_SCOPE)
  set(${why} "this machine's GPUs (nvidia-smi: compute capability ${found})" PARENT_SCOPE)
endfunction()
