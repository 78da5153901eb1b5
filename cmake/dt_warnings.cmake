# Warning set for detrain's own sources (not for third-party headers).
add_library(dt_warnings INTERFACE)
target_compile_options(dt_warnings INTERFACE
  $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
if(DT_WERROR)
  target_compile_options(dt_warnings INTERFACE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
endif()
