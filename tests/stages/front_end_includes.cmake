# The front end (src/tensor/, src/nn/) reaches the stages below the engine only through the engine: no source there
# includes a header of runtime/, schedule/, codegen/ or renderer/ itself (the engine answers what it needs to know:
# engine/device_facts.h). cmake/stages.cmake lets a stage see every lower one, since the engine's own headers name
# those stages' types; this check holds the front end to the narrower rule. And nn/ builds on tensors, not on
# their graph: it does not include tensor/tensor_internal.h (the UOp side of a Tensor).
#
#   cmake -D SRC_DIR=<repo>/src -P front_end_includes.cmake
file(GLOB_RECURSE _sources ${SRC_DIR}/tensor/*.cpp ${SRC_DIR}/tensor/*.h ${SRC_DIR}/nn/*.cpp ${SRC_DIR}/nn/*.h)
set(_doors "")
foreach(_f IN LISTS _sources)
  file(STRINGS ${_f} _lines REGEX "^#include \"(runtime|schedule|codegen|renderer)/")
  foreach(_l IN LISTS _lines)
    file(RELATIVE_PATH _rel ${SRC_DIR} ${_f})
    list(APPEND _doors "src/${_rel}: ${_l}")
  endforeach()
endforeach()
file(GLOB_RECURSE _nn_sources ${SRC_DIR}/nn/*.cpp ${SRC_DIR}/nn/*.h)
foreach(_f IN LISTS _nn_sources)
  file(STRINGS ${_f} _lines REGEX "^#include \"tensor/tensor_internal.h\"")
  foreach(_l IN LISTS _lines)
    file(RELATIVE_PATH _rel ${SRC_DIR} ${_f})
    list(APPEND _doors "src/${_rel}: ${_l}")
  endforeach()
endforeach()
if(_doors)
  list(JOIN _doors "\n  " _text)
  message(FATAL_ERROR "front end includes below the engine (ask the engine instead), or nn/ includes tensor internals:\n  ${_text}")
endif()
message(STATUS "front end includes: none below the engine")
