# Install rules: libtg, the public headers include/tg/*.h, a CMake config package so that
#   find_package(tg CONFIG REQUIRED)  +  target_link_libraries(app PRIVATE tg::tg)
# works, and a pkg-config file tg.pc (`pkg-config --cflags --libs tg`). Both are relocatable: a prefix
# given at install time (`cmake --install build --prefix /opt/tg`) works as well as the configured one.
include(CMakePackageConfigHelpers)

set(TG_INSTALL_CMAKEDIR ${CMAKE_INSTALL_LIBDIR}/cmake/tg)

install(TARGETS tg EXPORT tgTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY include/tg DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} FILES_MATCHING PATTERN "*.h")

# CMake package: tgConfig.cmake, tgConfigVersion.cmake, tgTargets*.cmake.
install(EXPORT tgTargets NAMESPACE tg:: DESTINATION ${TG_INSTALL_CMAKEDIR})
configure_package_config_file(cmake/tgConfig.cmake.in ${PROJECT_BINARY_DIR}/tgConfig.cmake
  INSTALL_DESTINATION ${TG_INSTALL_CMAKEDIR})
# 0.x: a new minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tgConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tgConfig.cmake ${PROJECT_BINARY_DIR}/tgConfigVersion.cmake
  DESTINATION ${TG_INSTALL_CMAKEDIR})

# pkg-config: the prefix is found from the .pc file's own place, so the file survives `--prefix`.
file(RELATIVE_PATH _tg_up "${CMAKE_INSTALL_FULL_LIBDIR}/pkgconfig" "${CMAKE_INSTALL_PREFIX}")
string(REGEX REPLACE "/$" "" _tg_up "${_tg_up}")
set(TG_PC_PREFIX "\${pcfiledir}/${_tg_up}")
foreach(_tg_dir LIBDIR INCLUDEDIR)  # relative to ${prefix} unless configured as absolute paths
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${_tg_dir}}")
    set(TG_PC_${_tg_dir} "${CMAKE_INSTALL_${_tg_dir}}")
  else()
    set(TG_PC_${_tg_dir} "\${prefix}/${CMAKE_INSTALL_${_tg_dir}}")
  endif()
endforeach()
# libtg.a needs its own link dependencies (dlopen, threads, zlib for datasets and torch_load, SQLite for the
# BEAM cache when built with it) on the consumer's link line; libtg.so carries them.
set(_tg_deps "-lz -ldl -lpthread")
if(SQLite3_FOUND)
  set(_tg_deps "-lsqlite3 ${_tg_deps}")
endif()
if(TG_SHARED)
  set(TG_PC_LIBS "-L\${libdir} -ltg")
  set(TG_PC_LIBS_PRIVATE "${_tg_deps}")
else()
  set(TG_PC_LIBS "-L\${libdir} -ltg ${_tg_deps}")
  set(TG_PC_LIBS_PRIVATE "")
endif()
if(TG_SANITIZE)  # an instrumented libtg needs the sanitizer runtimes in the final link
  string(PREPEND TG_PC_LIBS "-fsanitize=address,undefined ")
endif()
file(CONFIGURE OUTPUT ${PROJECT_BINARY_DIR}/tg.pc @ONLY CONTENT [=[
prefix=@TG_PC_PREFIX@
libdir=@TG_PC_LIBDIR@
includedir=@TG_PC_INCLUDEDIR@

Name: tg
Description: @PROJECT_DESCRIPTION@
Version: @PROJECT_VERSION@
Cflags: -std=c++20 -I${includedir}
Libs: @TG_PC_LIBS@
Libs.private: @TG_PC_LIBS_PRIVATE@
]=])
install(FILES ${PROJECT_BINARY_DIR}/tg.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
