# TG_FUZZ (the fuzz preset, scripts/run-fuzzers.sh): how libtg's sources are built for the libFuzzer harnesses.
#
# The code that parses files (the weight loaders, the idx reader, the compile cache's entries) gets libFuzzer's
# coverage feedback and -O1; the rest of libtg keeps ASan and UBSan but no coverage (its branches would only
# distract the fuzzer) and the preset's -O0, which halves the build (CI has 2 cores and minutes for this).
file(GLOB TG_PARSER_SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/src/nn/state/*.cpp ${CMAKE_CURRENT_SOURCE_DIR}/src/nn/datasets.cpp
     ${CMAKE_CURRENT_SOURCE_DIR}/src/runtime/compile_cache.cpp)
set_source_files_properties(${TG_PARSER_SOURCES} PROPERTIES COMPILE_OPTIONS "-O1;-fsanitize=fuzzer-no-link")
