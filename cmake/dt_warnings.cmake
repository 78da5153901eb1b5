# Warning set for detrain's own sources (not for third-party headers).
add_library(dt_warnings INTERFACE)
target_compile_options(dt_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>
  $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter>)
if(DT_WERROR)
  target_compile_options(dt_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
# CUDA sources are always built with warnings as errors (nvcc's own and the host compiler's):
# no CI machine can run them, so the compiler is their first reviewer.
target_compile_options(dt_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CUDA>:--Werror=all-warnings -Xcompiler=-Werror>)
