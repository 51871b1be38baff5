#include "rfs/core/memory_pages.hpp"

#include <algorithm>
#include <cstdint>

#include "rfs/core/json_string.hpp"

#include <sys/mman.h>
#include <unistd.h>

namespace rfs::core {

void ReleasePages(const void* data, size_t size) {
  static const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = reinterpret_cast<uintptr_t>(data);
  // Only pages wholly inside the range: one shared with bytes still in use stays.
  const uintptr_t first = (begin + page - 1) / page * page;
  const uintptr_t last = (begin + size) / page * page;
  if (last <= first) return;
  // Private anonymous memory (the heap): MADV_DONTNEED frees the pages at once, and a later
  // access maps zero-filled ones, so the allocator's view of the buffer stays valid.
  ::madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED);
}

void AppendJsonOneLineReleasing(std::string_view json, std::string& out, size_t step) {
  out.reserve(out.size() + json.size() + 1);
  for (size_t at = 0; at < json.size(); at += step) {
    const std::string_view piece = json.substr(at, step);
    AppendJsonOneLine(piece, out);  // a line break inside a piece is still between tokens
    ReleasePages(piece.data(), piece.size());
  }
}

}  // namespace rfs::core
