# install.cmake: `cmake --install BUILD --prefix P` puts kiln in place as a
# C library:
#   P/include/kiln/*.h                          the public headers
#   P/lib/libkiln.so, libkiln.a                 the compiler (the .so holds the runtime too)
#   P/lib/libkiln_runtime.so, libkiln_runtime.a the runtime alone (no toolchain)
#   P/bin/kiln                                  the command-line tool
#   P/lib/pkgconfig/kiln.pc, kiln_runtime.pc    relocatable (${pcfiledir})
#   P/lib/cmake/kiln/                           find_package(kiln): the targets
#       kiln::kiln, kiln::kiln_runtime (shared) and kiln::kiln_static,
#       kiln::kiln_runtime_static (static, carrying their link dependencies)
# Included from the top-level CMakeLists.txt after the targets are defined;
# tests/install/test_install.sh checks it from outside.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

if(PROJECT_VERSION)
  set(KILN_VERSION ${PROJECT_VERSION})
else()
  set(KILN_VERSION 0.1.0)
endif()

# The static archives are libkiln.a and libkiln_runtime.a, beside the shared
# libraries, so `-lkiln` with `-static` (or pkg-config --static) finds them.
set_target_properties(kiln_static PROPERTIES OUTPUT_NAME kiln)
set_target_properties(kiln_runtime_static PROPERTIES OUTPUT_NAME kiln_runtime)
set_target_properties(kiln kiln_runtime kiln_cli_lib PROPERTIES VERSION ${KILN_VERSION} SOVERSION 0)
set_target_properties(kiln_cli_lib PROPERTIES INSTALL_RPATH "$ORIGIN")
# The installed CLI finds libkiln.so next to it, wherever the prefix is.
set_target_properties(kiln_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

# libkiln.a's dependency on protobuf-c is found by the build as a full path;
# installed, it is the plain library name, so the package does not name a
# path of the machine that built it.
get_target_property(_kiln_static_libs kiln_static INTERFACE_LINK_LIBRARIES)
set(_kiln_libs)
foreach(lib ${_kiln_static_libs})
  if(lib STREQUAL PROTOBUF_C_LIBRARY)
    list(APPEND _kiln_libs "$<BUILD_INTERFACE:${lib}>" "$<INSTALL_INTERFACE:protobuf-c>")
  elseif(KILN_XGBOOST_LIBS AND lib STREQUAL KILN_XGBOOST_LIBS)
    list(APPEND _kiln_libs "$<BUILD_INTERFACE:${lib}>" "$<INSTALL_INTERFACE:xgboost>")
  else()
    list(APPEND _kiln_libs "${lib}")
  endif()
endforeach()
set_target_properties(kiln_static PROPERTIES INTERFACE_LINK_LIBRARIES "${_kiln_libs}")

install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/kiln DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
        FILES_MATCHING PATTERN "*.h")
install(TARGETS kiln kiln_static kiln_runtime kiln_runtime_static
        EXPORT kilnTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(TARGETS kiln_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(TARGETS kiln_cli_lib LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(KILN_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/kiln)
install(EXPORT kilnTargets NAMESPACE kiln:: DESTINATION ${KILN_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/kilnConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/kilnConfig.cmake
                              INSTALL_DESTINATION ${KILN_CMAKE_DIR})
# 0.x: a minor version may break compatibility
write_basic_package_version_file(${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
                                 VERSION ${KILN_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/kilnConfig.cmake ${CMAKE_BINARY_DIR}/kilnConfigVersion.cmake
        DESTINATION ${KILN_CMAKE_DIR})

# pkg-config: the prefix is found from the .pc file's own place, so the
# files are right for any --prefix given at install time.
file(RELATIVE_PATH KILN_PC_TO_PREFIX /${CMAKE_INSTALL_LIBDIR}/pkgconfig /)
string(REGEX REPLACE "/$" "" KILN_PC_TO_PREFIX "${KILN_PC_TO_PREFIX}")
set(KILN_PC_LIBS_PRIVATE "-lz -pthread")
if(CMAKE_DL_LIBS)
  string(APPEND KILN_PC_LIBS_PRIVATE " -l${CMAKE_DL_LIBS}")
endif()
string(APPEND KILN_PC_LIBS_PRIVATE " -lm")
foreach(pc kiln kiln_runtime)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endforeach()
