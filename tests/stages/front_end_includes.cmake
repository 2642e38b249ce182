# The front end (src/tensor/, src/nn/) reaches the stages below the engine only through the engine: no source there
# includes a header of runtime/, schedule/, codegen/ or renderer/ itself (the engine answers what it needs to know:
# engine/device_facts.h). cmake/stages.cmake lets a stage see every lower one, since the engine's own headers name
# those stages' types; this check holds the front end to the narrower rule. And nn/ builds on tensors, not on
# their graph: it does not include tensor/tensor_internal.h (the UOp side of a Tensor).
#
#   cmake -D SRC_DIR=<repo>/src -P front_end_includes.cmake
set(_doors "")
# Appends to _doors each line of the sources under `folders` that matches `regex`.
function(find_includes regex)
  set(_globs "")
  foreach(_folder IN LISTS ARGN)
    list(APPEND _globs ${SRC_DIR}/${_folder}/*.cpp ${SRC_DIR}/${_folder}/*.h)
  endforeach()
  file(GLOB_RECURSE _sources ${_globs})
  set(_found ${_doors})
  foreach(_f IN LISTS _sources)
    file(STRINGS ${_f} _lines REGEX "${regex}")
    file(RELATIVE_PATH _rel ${SRC_DIR} ${_f})
    foreach(_l IN LISTS _lines)
      list(APPEND _found "src/${_rel}: ${_l}")
    endforeach()
  endforeach()
  set(_doors ${_found} PARENT_SCOPE)
endfunction()
find_includes("^#include \"(runtime|schedule|codegen|renderer)/" tensor nn)
find_includes("^#include \"tensor/tensor_internal.h\"" nn)
if(_doors)
  list(JOIN _doors "\n  " _text)
  message(FATAL_ERROR "front end includes below the engine (ask the engine instead), or nn/ includes tensor internals:\n  ${_text}")
endif()
message(STATUS "front end includes: none below the engine")
