# The pipeline's direction, enforced by the build: a stage's sources see the headers of their own stage and of
# the stages below it, and nothing above (docs/architecture.md, "Stages"). Each stage gets an include root under the build
# folder holding links to the src/ folders it may include and to the public headers (include/tg/) of its tier; an
# upward #include then fails to compile with "file not found", naming the file.
#
#   tg_stage_include_roots(<target> <src dir> <include dir>)
#
# Stages, bottom first (folders in one stage may include each other):
set(TG_STAGES
    "helpers"                  # knobs, env, progress: below everything
    "dtype,shape,uop"          # the IR
    "schedule"
    "renderer"
    "codegen"
    "runtime"
    "engine"
    "tensor"
    "nn")
# The public headers each stage may include (its tier's and every lower tier's): the engine and below see the
# vocabulary types only, tensor/ the Tensor and JIT API, nn/ everything.
set(TG_PUBLIC_TIER_engine context.h counters.h dtype.h error.h progress.h sint.h variable.h)
set(TG_PUBLIC_TIER_tensor tensor.h jit.h)
set(TG_PUBLIC_TIER_nn ALL)

function(tg_stage_include_roots target src_dir include_dir)
  file(GLOB _public RELATIVE ${include_dir}/tg ${include_dir}/tg/*.h)
  set(_visible "")         # src/ folders visible so far
  set(_public_visible "")  # public headers visible so far
  list(LENGTH TG_STAGES _n)
  math(EXPR _last "${_n} - 1")
  foreach(_i RANGE ${_last})
    list(GET TG_STAGES ${_i} _stage)
    string(REPLACE "," ";" _folders "${_stage}")
    list(GET _folders -1 _name)
    list(APPEND _visible ${_folders})
    if(_i EQUAL 0)
      set(_public_visible ${TG_PUBLIC_TIER_engine})
    endif()
    if(TG_PUBLIC_TIER_${_name} STREQUAL "ALL")
      set(_public_visible ${_public})
    elseif(DEFINED TG_PUBLIC_TIER_${_name})
      list(APPEND _public_visible ${TG_PUBLIC_TIER_${_name}})
    endif()
    list(REMOVE_DUPLICATES _public_visible)
    set(_root ${CMAKE_BINARY_DIR}/stage_include/${_name})
    file(REMOVE_RECURSE ${_root})
    file(MAKE_DIRECTORY ${_root}/tg)
    foreach(_f IN LISTS _visible)
      file(CREATE_LINK ${src_dir}/${_f} ${_root}/${_f} SYMBOLIC)
    endforeach()
    foreach(_h IN LISTS _public_visible)
      file(CREATE_LINK ${include_dir}/tg/${_h} ${_root}/tg/${_h} SYMBOLIC)
    endforeach()
    foreach(_f IN LISTS _folders)
      file(GLOB_RECURSE _sources CONFIGURE_DEPENDS ${src_dir}/${_f}/*.cpp)
      if(_sources)
        set_source_files_properties(${_sources} TARGET_DIRECTORY ${target} PROPERTIES INCLUDE_DIRECTORIES ${_root})
      endif()
    endforeach()
  endforeach()
endfunction()
