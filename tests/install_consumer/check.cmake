# Run by ctest (install_consumer, see tests/CMakeLists.txt) with cmake -P. Inputs: TG_BUILD_DIR, CONSUMER_DIR,
# WORK_DIR, CONFIG, GENERATOR, CXX, PKG_CONFIG (empty: the pkg-config half is skipped).
cmake_minimum_required(VERSION 3.25)
set(prefix ${WORK_DIR}/prefix)
file(REMOVE_RECURSE ${WORK_DIR})
file(MAKE_DIRECTORY ${WORK_DIR})  # the consumers' working directory (they write a scratch idx file)

function(run what)
  execute_process(COMMAND ${ARGN} WORKING_DIRECTORY ${WORK_DIR} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                  ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "install_consumer: ${what} failed (${rc}):\n${ARGN}\n${out}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(check_output how)
  message(STATUS "${how}: ${out}")
  # and main.cpp's exit code checks the rest
  if(NOT out MATCHES "sum\\(1\\) = \\[20, 52, 84, 116\\]" OR NOT out MATCHES "read_idx: 1 dims, 3 bytes")
    message(FATAL_ERROR "install_consumer: unexpected output from the ${how} consumer:\n${out}")
  endif()
endfunction()

if(NOT CONFIG)
  set(CONFIG Release)
endif()
run("cmake --install" ${CMAKE_COMMAND} --install ${TG_BUILD_DIR} --prefix ${prefix} --config ${CONFIG})

# 1. CMake: find_package(tg CONFIG REQUIRED) + tg::tg.
run("configure" ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_BUILD_TYPE=${CONFIG} -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_PREFIX_PATH=${prefix})
run("build" ${CMAKE_COMMAND} --build ${WORK_DIR}/build --config ${CONFIG})
file(GLOB_RECURSE exe LIST_DIRECTORIES false ${WORK_DIR}/build/consumer)  # build/ or build/<config>/
if(NOT exe)
  message(FATAL_ERROR "install_consumer: no consumer executable under ${WORK_DIR}/build")
endif()
list(GET exe 0 exe)
run("find_package consumer" ${exe})
check_output("find_package(tg)")

# 2. pkg-config: c++ main.cpp $(pkg-config --cflags --libs tg).
if(NOT PKG_CONFIG)
  message(STATUS "pkg-config not found: the pkg-config consumer is skipped")
  return()
endif()
file(GLOB_RECURSE pc ${prefix}/tg.pc)
get_filename_component(pcdir "${pc}" DIRECTORY)
run("pkg-config" ${CMAKE_COMMAND} -E env PKG_CONFIG_PATH=${pcdir} ${PKG_CONFIG} --cflags --libs tg)
string(STRIP "${out}" flags)
message(STATUS "pkg-config --cflags --libs tg: ${flags}")
separate_arguments(flags UNIX_COMMAND "${flags}")
run("pkg-config build" ${CXX} ${CONSUMER_DIR}/main.cpp ${flags} -o ${WORK_DIR}/consumer_pc)
get_filename_component(libdir "${pcdir}" DIRECTORY)
run("pkg-config consumer" ${CMAKE_COMMAND} -E env LD_LIBRARY_PATH=${libdir} ${WORK_DIR}/consumer_pc)
check_output("pkg-config")
