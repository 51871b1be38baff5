# rfs_add_layer(<layer> HEADERS <files in include/rfs/<layer>/>... [SOURCES <files in lib/<layer>/>...]
#               [DEPENDS <rfs targets>...] [PUBLIC_LIBS ...] [PRIVATE_LIBS ...])
#
# One library per layer: rfs_<layer>, aliased rfs::<layer>, with the listed sources from
# lib/<layer>/ and the listed public headers from include/rfs/<layer>/ (the install list: only
# these are installed; a helper that only the layer's own code uses is lib/<layer>/*_internal.hpp).
# A layer without compiled sources is an INTERFACE target that only forwards its dependencies. A
# .cpp in lib/<layer>/ or a .hpp in include/rfs/<layer>/ that the lists leave out stops the
# configuration, so the lists stay the whole truth.
function(rfs_add_layer layer)
  cmake_parse_arguments(ARG "" "" "HEADERS;SOURCES;DEPENDS;PUBLIC_LIBS;PRIVATE_LIBS" ${ARGN})
  set(target rfs_${layer})
  set(headers "")
  foreach(file IN LISTS ARG_HEADERS)
    list(APPEND headers ${PROJECT_SOURCE_DIR}/include/rfs/${layer}/${file})
  endforeach()
  file(GLOB headers_on_disk CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/include/rfs/${layer}/*.hpp)
  foreach(file IN LISTS headers_on_disk)
    if(NOT file IN_LIST headers)
      message(FATAL_ERROR "${file} is not in the HEADERS of layer ${layer} (lib/CMakeLists.txt): "
                          "list it, or make it lib/${layer}/<name>_internal.hpp")
    endif()
  endforeach()
  foreach(file IN LISTS headers)
    if(NOT EXISTS ${file})
      message(FATAL_ERROR "${file}, in the HEADERS of layer ${layer}, does not exist")
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY RFS_PUBLIC_HEADERS_${layer} ${headers})
  set(sources "")
  foreach(file IN LISTS ARG_SOURCES)
    list(APPEND sources ${PROJECT_SOURCE_DIR}/lib/${layer}/${file})
  endforeach()
  # Recursive: a layer may keep its code in subfolders (lib/lucene/codecs/, ...).
  file(GLOB_RECURSE on_disk CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/lib/${layer}/*.cpp)
  foreach(file IN LISTS on_disk)
    if(NOT file IN_LIST sources)
      message(FATAL_ERROR "${file} is not in the SOURCES of layer ${layer} (lib/CMakeLists.txt)")
    endif()
  endforeach()
  if(sources)
    add_library(${target} STATIC ${sources})
    target_include_directories(${target}
      PUBLIC $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>
      PRIVATE ${PROJECT_SOURCE_DIR}/lib)
    target_link_libraries(${target} PUBLIC ${ARG_DEPENDS} ${ARG_PUBLIC_LIBS} PRIVATE ${ARG_PRIVATE_LIBS})
    target_compile_options(${target} PRIVATE -Wall -Wextra -Wno-unused-parameter)
  else()
    add_library(${target} INTERFACE)
    target_include_directories(${target}
      INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:include>)
    target_link_libraries(${target} INTERFACE ${ARG_DEPENDS} ${ARG_PUBLIC_LIBS})
  endif()
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${layer} OUTPUT_NAME rfs_${layer})
  add_library(rfs::${layer} ALIAS ${target})
  set_property(GLOBAL APPEND PROPERTY RFS_LAYER_TARGETS ${target})
  # The declared layer graph, checked against the #includes by the layers:check test.
  set(deps "")
  foreach(dep IN LISTS ARG_DEPENDS)
    string(REGEX REPLACE "^rfs::" "" dep "${dep}")
    list(APPEND deps ${dep})
  endforeach()
  list(JOIN deps "," deps)
  set_property(GLOBAL APPEND PROPERTY RFS_LAYER_GRAPH "${layer}=${deps}")
endfunction()

# rfs_embed_file(<layer> <file in lib/<layer>/> HEADER <include> FUNCTION <qualified name>):
# compiles the file's bytes into the layer as `std::string_view FUNCTION()`, declared in HEADER.
# The data stays a file of its own (validators and diffs read it); the .cpp defining the function
# is generated in the build tree at build time, again whenever the file changes.
function(rfs_embed_file layer file)
  cmake_parse_arguments(ARG "" "HEADER;FUNCTION" "" ${ARGN})
  if(NOT ARG_HEADER OR NOT ARG_FUNCTION)
    message(FATAL_ERROR "rfs_embed_file(${layer} ${file}): HEADER and FUNCTION are required")
  endif()
  set(input ${PROJECT_SOURCE_DIR}/lib/${layer}/${file})
  if(NOT EXISTS ${input})
    message(FATAL_ERROR "${input}, embedded in layer ${layer}, does not exist")
  endif()
  string(MAKE_C_IDENTIFIER "${file}" stem)
  set(output ${CMAKE_CURRENT_BINARY_DIR}/${layer}/embedded_${stem}.cpp)
  set(script ${PROJECT_SOURCE_DIR}/cmake/RfsEmbedFile.cmake)
  add_custom_command(OUTPUT ${output}
    COMMAND ${CMAKE_COMMAND} -DINPUT=${input} -DOUTPUT=${output} -DFUNCTION=${ARG_FUNCTION}
            -DHEADER=${ARG_HEADER} -DSOURCE_NAME=lib/${layer}/${file} -P ${script}
    DEPENDS ${input} ${script}
    COMMENT "Embedding lib/${layer}/${file}" VERBATIM)
  target_sources(rfs_${layer} PRIVATE ${output})
endfunction()

# rfs_build_paths(<target> [PUBLIC] NAME=VALUE...): a path of this build (folder, tool, jar) for a
# test target's code, as the macro NAME, a const char* (test/support/build_paths.hpp). The values go
# into a source file generated for each test executable, not onto the compile line: a path differs
# from clone to clone, and a compile line naming one misses ccache in every fresh clone. PUBLIC
# (rfs_test_main only): every test executable has the path.
function(rfs_build_paths target)
  set(visibility PRIVATE)
  set(pairs ${ARGN})
  if(pairs AND "${ARGV1}" STREQUAL "PUBLIC")
    set(visibility PUBLIC)
    list(POP_FRONT pairs)
  endif()
  foreach(pair IN LISTS pairs)
    string(FIND "${pair}" "=" eq)
    if(eq LESS 1)
      message(FATAL_ERROR "rfs_build_paths(${target}): '${pair}' is not NAME=VALUE")
    endif()
    string(SUBSTRING "${pair}" 0 ${eq} name)
    target_compile_definitions(${target} ${visibility} "${name}=RfsBuildPath(\"${name}\")")
    if(visibility STREQUAL "PUBLIC")
      set_property(GLOBAL APPEND PROPERTY RFS_COMMON_BUILD_PATHS "${pair}")
    else()
      set_property(TARGET ${target} APPEND PROPERTY RFS_BUILD_PATHS "${pair}")
    endif()
  endforeach()
endfunction()

# Writes <target>'s table of build paths (run at the end of the configuration, once every
# rfs_build_paths() call has been made).
function(_rfs_write_build_paths target out)
  get_property(common GLOBAL PROPERTY RFS_COMMON_BUILD_PATHS)
  get_property(own TARGET ${target} PROPERTY RFS_BUILD_PATHS)
  set(rows "")
  foreach(pair IN LISTS common own)
    string(FIND "${pair}" "=" eq)
    string(SUBSTRING "${pair}" 0 ${eq} name)
    math(EXPR start "${eq} + 1")
    string(SUBSTRING "${pair}" ${start} -1 value)
    string(APPEND rows "      {\"${name}\", \"${value}\"},\n")
  endforeach()
  file(GENERATE OUTPUT "${out}" CONTENT "// Generated by CMake (rfs_build_paths): the paths of this build for ${target}.
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include \"support/build_paths.hpp\"

const char* RfsBuildPath(const char* name) {
  static const char* const kPaths[][2] = {
${rows}      {nullptr, nullptr},
  };
  for (const auto& path : kPaths) {
    if (path[0] != nullptr && std::strcmp(path[0], name) == 0) return path[1];
  }
  std::fprintf(stderr, \"${target} was built without the path %s\\n\", name);
  std::abort();
}
")
endfunction()

# The files an executable compiles for its SOURCES. ThreadSanitizer's tree (scripts/test runs only
# the [tsan] cases there) keeps the test files that hold such a case and every file that is not a
# test file (helpers). With RFS_UNITY_TESTS the test files are then compiled RFS_UNITY_TEST_BATCH
# at a time: a generated file includes each by its path under test/ (relative, so that the
# generated file reads the same in every clone and a fresh clone hits ccache), and catch.hpp,
# Boost and the rfs headers are parsed once per batch instead of once per file. A file whose
# helpers clash with another's in a batch says so with a line `// rfs-test: own translation unit`.
function(_rfs_test_sources name out)
  set(kept "")
  set(batched "")
  foreach(source IN LISTS ARGN)
    get_filename_component(path "${source}" ABSOLUTE BASE_DIR "${CMAKE_CURRENT_SOURCE_DIR}")
    if(NOT path MATCHES "_test\\.cpp$" OR NOT EXISTS "${path}")
      list(APPEND kept "${source}")
      continue()
    endif()
    if(RFS_SANITIZE_THREAD)
      # A case tagged or untagged later changes what this tree compiles.
      set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${path}")
      file(STRINGS "${path}" tagged REGEX "\\[tsan\\]" LIMIT_COUNT 1)
      if(NOT tagged)
        continue()
      endif()
    endif()
    file(STRINGS "${path}" own REGEX "^// rfs-test: own translation unit" LIMIT_COUNT 1)
    file(RELATIVE_PATH relative "${PROJECT_SOURCE_DIR}/test" "${path}")
    if(NOT RFS_UNITY_TESTS OR own OR relative MATCHES "^\\.\\.")
      list(APPEND kept "${source}")
    else()
      list(APPEND batched "${relative}")
    endif()
  endforeach()
  list(SORT batched)
  list(LENGTH batched count)
  if(count EQUAL 1)  # nothing to share a translation unit with
    list(APPEND kept "${PROJECT_SOURCE_DIR}/test/${batched}")
    set(count 0)
  endif()
  set(batch 0)
  while(count GREATER 0)
    set(content "// Generated by rfs_add_test: test files of ${name} compiled as one translation unit.\n")
    foreach(i RANGE 1 ${RFS_UNITY_TEST_BATCH})
      if(count EQUAL 0)
        break()
      endif()
      list(POP_FRONT batched relative)
      math(EXPR count "${count} - 1")
      string(APPEND content "#include \"${relative}\"\n")
    endforeach()
    set(unity "${CMAKE_CURRENT_BINARY_DIR}/${name}_batch_${batch}.cpp")
    file(CONFIGURE OUTPUT "${unity}" CONTENT "${content}")
    list(APPEND kept "${unity}")
    math(EXPR batch "${batch} + 1")
  endwhile()
  set(${out} ${kept} PARENT_SCOPE)
endfunction()

# rfs_add_test(<name> SOURCES ... LIBS ...): one Catch2 executable, its cases discovered by ctest.
function(rfs_add_test name)
  # PROPERTIES: extra ctest properties of every test case (e.g. FIXTURES_REQUIRED), after the
  # defaults so that they may override TIMEOUT.
  cmake_parse_arguments(ARG "" "" "SOURCES;LIBS;PROPERTIES" ${ARGN})
  _rfs_test_sources(${name} sources ${ARG_SOURCES})
  add_executable(${name} ${sources})
  # Without ccache rfs_test_main publishes catch.hpp as a precompiled header, so each test target
  # builds its own (REUSE_FROM across directories fails to configure in CMake 3.25).
  target_link_libraries(${name} PRIVATE rfs_test_main ${ARG_LIBS})
  # Its build paths (rfs_build_paths), written once the whole tree is configured.
  set(paths_source "${CMAKE_CURRENT_BINARY_DIR}/${name}_build_paths.cpp")
  target_sources(${name} PRIVATE "${paths_source}")
  set_source_files_properties("${paths_source}" PROPERTIES GENERATED ON SKIP_PRECOMPILE_HEADERS ON)
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY \"${PROJECT_SOURCE_DIR}\" CALL _rfs_write_build_paths \"${name}\" \"${paths_source}\")")
  # Every test that serves the OpenSearch double asserts that nothing sent to it was malformed.
  if("rfs_opensearch_double" IN_LIST ARG_LIBS)
    target_sources(${name} PRIVATE ${PROJECT_SOURCE_DIR}/test/support/double_checks.cpp)
  endif()
  # -w NoTests: a test name that matches no test case (a ';' splits names in ctest) fails instead
  # of passing with nothing run. A case that checks nothing fails too (catch_main.cpp's listener:
  # Catch2 v2 takes a single -w).
  catch_discover_tests(${name} TEST_PREFIX "${name}:" EXTRA_ARGS -w NoTests
    PROPERTIES TIMEOUT 600 SKIP_RETURN_CODE 77 ${ARG_PROPERTIES}
    WORKING_DIRECTORY ${PROJECT_SOURCE_DIR})
endfunction()
