# cmake -DGRAPH="core=;snapshot=core;..." -DSOURCE_DIR=<repo> -P RfsCheckLayers.cmake
#
# Fails when a layer's code includes a layer it does not depend on (directly or through the
# layers it depends on): an upward or sideways include. Public headers (include/rfs/<layer>/) may
# include only public headers of the layer itself and of its dependencies; compiled code
# (lib/<layer>/) may also include its own layer's private headers (lib/<layer>/*_internal.hpp),
# never another layer's. The graph comes from the DEPENDS of each rfs_add_layer().
cmake_minimum_required(VERSION 3.25)

set(layers "")
foreach(entry IN LISTS GRAPH)
  string(REPLACE "=" ";" parts "${entry}")
  list(GET parts 0 layer)
  list(LENGTH parts n)
  set(direct "")
  if(n GREATER 1)
    list(GET parts 1 direct)
    string(REPLACE "," ";" direct "${direct}")
  endif()
  set(deps_${layer} ${direct})
  list(APPEND layers ${layer})
endforeach()

# Transitive closure (layers are declared bottom-up, so one pass in order suffices).
foreach(layer IN LISTS layers)
  set(closure ${deps_${layer}})
  foreach(dep IN LISTS deps_${layer})
    list(APPEND closure ${all_${dep}})
  endforeach()
  list(REMOVE_DUPLICATES closure)
  set(all_${layer} ${closure})
endforeach()

set(violations 0)
foreach(layer IN LISTS layers)
  file(GLOB_RECURSE files ${SOURCE_DIR}/include/rfs/${layer}/*.hpp ${SOURCE_DIR}/lib/${layer}/*.hpp
       ${SOURCE_DIR}/lib/${layer}/*.cpp)
  foreach(file IN LISTS files)
    file(STRINGS ${file} includes REGEX "^#include \"[a-z_]+/")
    foreach(line IN LISTS includes)
      string(REGEX MATCH "^#include \"([a-z_]+)/([a-z_]+)?" _ "${line}")
      set(root ${CMAKE_MATCH_1})
      set(second ${CMAKE_MATCH_2})
      if(root STREQUAL "rfs")
        set(target ${second})  # a public header: rfs/<layer>/...
        if(target STREQUAL "" OR NOT IS_DIRECTORY ${SOURCE_DIR}/include/rfs/${target})
          continue()
        endif()
        if(target STREQUAL layer OR target IN_LIST all_${layer})
          continue()
        endif()
      else()
        set(target ${root})  # a private header: <layer>/..._internal.hpp under lib/
        if(NOT IS_DIRECTORY ${SOURCE_DIR}/lib/${target} OR target STREQUAL layer)
          continue()
        endif()
      endif()
      file(RELATIVE_PATH rel ${SOURCE_DIR} ${file})
      message(SEND_ERROR "${rel}: ${line} reaches layer '${target}', which layer '${layer}' "
                         "does not depend on (declared: ${all_${layer}})")
      math(EXPR violations "${violations} + 1")
    endforeach()
  endforeach()
endforeach()
list(LENGTH layers count)
if(violations EQUAL 0)
  message(STATUS "layers: ${count} layers, every include follows the declared graph")
endif()
