include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

get_property(rfs_layer_targets GLOBAL PROPERTY RFS_LAYER_TARGETS)
install(TARGETS ${rfs_layer_targets} rfs_rfs EXPORT rfsTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
# The public headers each layer lists (rfs_add_layer HEADERS), and the umbrella header.
foreach(rfs_target IN LISTS rfs_layer_targets)
  string(REGEX REPLACE "^rfs_" "" rfs_layer ${rfs_target})
  get_property(rfs_headers GLOBAL PROPERTY RFS_PUBLIC_HEADERS_${rfs_layer})
  install(FILES ${rfs_headers} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rfs/${rfs_layer})
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/include/rfs/rfs.hpp DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/rfs)

set(rfs_cmake_dir ${CMAKE_INSTALL_LIBDIR}/cmake/rfs)
install(EXPORT rfsTargets NAMESPACE rfs:: DESTINATION ${rfs_cmake_dir})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/rfsConfig.cmake.in
  ${PROJECT_BINARY_DIR}/rfsConfig.cmake INSTALL_DESTINATION ${rfs_cmake_dir})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/rfsConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/rfsConfig.cmake ${PROJECT_BINARY_DIR}/rfsConfigVersion.cmake
        DESTINATION ${rfs_cmake_dir})
# Build-tree export for FetchContent/add_subdirectory users who want the targets file.
export(EXPORT rfsTargets NAMESPACE rfs:: FILE ${PROJECT_BINARY_DIR}/rfsTargets.cmake)
