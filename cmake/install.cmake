# `cmake --install` lays out an SDK as CANN does: libraries (libascendcl, its -lacl_rt name,
# libhccl, libmsprofiler), headers under include/acl and include/hccl, hcclrun and the perf tools under bin/,
# pkg-config files and a CMake package (find_package(OpenHCCL) -> OpenHCCL::hccl, OpenHCCL::ascendcl).
include(CMakePackageConfigHelpers)

install(TARGETS ascendcl hccl msprofiler EXPORT OpenHCCLTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(FILES $<TARGET_FILE_DIR:ascendcl>/libacl_rt.so DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(DIRECTORY include/acl include/hccl DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})

install(TARGETS hcclrun RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
get_property(perf_colls GLOBAL PROPERTY OH_PERF_COLLS) # tools/perf/CMakeLists.txt
foreach(coll ${perf_colls})
  install(TARGETS ${coll}_perf RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
endforeach()

# Package files under share/: CMake and pkg-config search <prefix>/share on every distribution, while
# lib64 is not searched on multiarch ones (Debian).
set(OH_CMAKE_DIR ${CMAKE_INSTALL_DATADIR}/cmake/OpenHCCL)
install(EXPORT OpenHCCLTargets NAMESPACE OpenHCCL:: DESTINATION ${OH_CMAKE_DIR})
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/OpenHCCLConfig.cmake.in
  ${CMAKE_BINARY_DIR}/OpenHCCLConfig.cmake INSTALL_DESTINATION ${OH_CMAKE_DIR})
write_basic_package_version_file(${CMAKE_BINARY_DIR}/OpenHCCLConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/OpenHCCLConfig.cmake ${CMAKE_BINARY_DIR}/OpenHCCLConfigVersion.cmake
  DESTINATION ${OH_CMAKE_DIR})

# Relocatable: the prefix is found from where the .pc file lies, so `cmake --install --prefix X`
# into any folder gives working files.
file(RELATIVE_PATH OH_PC_TO_PREFIX /p/${CMAKE_INSTALL_DATADIR}/pkgconfig /p)
foreach(pc hccl ascendcl msprofiler)
  configure_file(${CMAKE_CURRENT_LIST_DIR}/${pc}.pc.in ${CMAKE_BINARY_DIR}/${pc}.pc @ONLY)
  install(FILES ${CMAKE_BINARY_DIR}/${pc}.pc DESTINATION ${CMAKE_INSTALL_DATADIR}/pkgconfig)
endforeach()

# A Debian package of the same tree: cpack -G DEB in the build folder.
set(CPACK_PACKAGE_NAME openhccl)
set(CPACK_PACKAGE_CONTACT "OpenHCCL developers")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "HCCL-compatible collective communication library with an NPU emulator")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_GENERATOR DEB)
include(CPack)
