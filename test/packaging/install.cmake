# cmake -DBUILD_DIR=<build> -DPREFIX=<prefix> -P install.cmake
# Installs the build into an empty prefix: a header renamed or removed since the last run must not
# linger there and be found by the consumers. Only what an embedder links (libraries, headers, the
# CMake package: install rules without a component): the sanitized tools (component "tools") are
# a gigabyte the consumers never use.
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${PREFIX}"
                        --component Unspecified
                RESULT_VARIABLE result)
if(NOT result EQUAL 0)
  message(FATAL_ERROR "cmake --install failed: ${result}")
endif()
