# TG_FUZZ (the fuzz preset, scripts/run-fuzzers.sh): how libtg's sources are built for the libFuzzer harnesses.
#
# The code that parses files (the weight loaders, the idx reader, the compile cache's entries) gets libFuzzer's
# coverage feedback and -O1; the rest of libtg keeps ASan and UBSan but no coverage (its branches would only
# distract the fuzzer) and the preset's -O0, which halves the build (CI has 2 cores and minutes for this).
file(GLOB TG_PARSER_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/nn/state/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/src/nn/datasets.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/runtime/compile_cache.cpp)
set_source_files_properties(${TG_PARSER_SOURCES} PROPERTIES COMPILE_OPTIONS "-O1;-fsanitize=fuzzer-no-link")

# clang 16 rejects src/renderer/tensor_core.cpp's
#   std::vector<std::vector<double>> d(size_t(TensorCore::kLanes), std::vector<double>(size_t(TensorCore::kC)));
# as a function declaration with a qualified parameter name (the most vexing parse); g++ takes it as a variable.
# Until that line is fixed there, this build compiles a copy with static_cast in place of the functional casts.
# Once the line is gone the original is compiled again and this block does nothing.
set(tg_tc ${CMAKE_CURRENT_SOURCE_DIR}/src/renderer/tensor_core.cpp)
set(tg_tc_bad "d(size_t(TensorCore::kLanes), std::vector<double>(size_t(TensorCore::kC)))")
file(READ ${tg_tc} tg_tc_text)
string(FIND "${tg_tc_text}" "${tg_tc_bad}" tg_tc_at)
set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${tg_tc})
if(NOT tg_tc_at EQUAL -1)
  string(REPLACE "${tg_tc_bad}"
         "d(static_cast<size_t>(TensorCore::kLanes), std::vector<double>(static_cast<size_t>(TensorCore::kC)))"
         tg_tc_text "${tg_tc_text}")
  file(CONFIGURE OUTPUT ${CMAKE_CURRENT_BINARY_DIR}/clang_compat/tensor_core.cpp CONTENT "${tg_tc_text}" @ONLY)
  list(REMOVE_ITEM TG_SOURCES ${tg_tc})
  list(APPEND TG_SOURCES ${CMAKE_CURRENT_BINARY_DIR}/clang_compat/tensor_core.cpp)
  message(STATUS "TG_FUZZ: compiling a clang-compatible copy of src/renderer/tensor_core.cpp (see cmake/fuzz_sources.cmake)")
endif()
