// Giving memory back page by page while a buffer is still allocated: a huge document is copied
// out of the buffer it was decoded into a step at a time, and the pages already copied go back
// to the system as it goes, so the document is not held twice at the copy's end.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace rfs::core {

/// Gives back the whole pages inside [data, data + size) of heap memory that nothing reads
/// again (they read back as zeros; writing them maps fresh pages). The memory stays allocated.
void ReleasePages(const void* data, size_t size);

/// AppendJsonOneLine (json_string.hpp) for a source whose bytes are not read again: copied a
/// step of `step` bytes at a time, the pages of each step released once it is copied.
void AppendJsonOneLineReleasing(std::string_view json, std::string& out,
                                size_t step = size_t{8} << 20);

}  // namespace rfs::core
