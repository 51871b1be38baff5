# Writes a C++ source defining `std::string_view FUNCTION()` over the bytes of INPUT, so that a
# data file (a JSON document, a page) is kept, validated and diffed as itself and still compiled
# into its layer. Run by rfs_embed_file() (RfsHelpers.cmake) as a build step:
#   cmake -DINPUT=<file> -DOUTPUT=<.cpp> -DFUNCTION=<qualified name> -DHEADER=<include>
#         -DSOURCE_NAME=<INPUT relative to the source tree> -P RfsEmbedFile.cmake
# The bytes become an array of numbers rather than a string literal: no delimiter or escape can
# clash with the file's text, and compilers cap the length of a string literal, not of an array.
foreach(var INPUT OUTPUT FUNCTION HEADER SOURCE_NAME)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "RfsEmbedFile.cmake: -D${var}=... is required")
  endif()
endforeach()
file(READ "${INPUT}" hex HEX)
# 16 bytes a line, each as 0xNN; the array ends with a 0 so that an empty file still compiles.
string(REGEX REPLACE "([0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f])"
       "\\1\n" hex "${hex}")
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," bytes "${hex}")
set(content "// Generated from ${SOURCE_NAME} by cmake/RfsEmbedFile.cmake: edit that file, not this one.
#include <string_view>

#include \"${HEADER}\"

namespace {

constexpr unsigned char kBytes[] = {
${bytes}0};

}  // namespace

std::string_view ${FUNCTION}() {
  return {reinterpret_cast<const char*>(kBytes), sizeof(kBytes) - 1};
}
")
# Rewritten only when it changes, so that an unchanged file compiles nothing again.
if(EXISTS "${OUTPUT}")
  file(READ "${OUTPUT}" previous)
  if(previous STREQUAL content)
    return()
  endif()
endif()
file(WRITE "${OUTPUT}" "${content}")
