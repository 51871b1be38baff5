#include "rfs/core/memory_pages.hpp"

#include <cstdint>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/core/json_string.hpp"

namespace {

// A source of `size` bytes with a line break every 1000 bytes, in a page-aligned heap buffer.
std::unique_ptr<char[]> PrettySource(size_t size, std::string_view& view) {
  auto buffer = std::make_unique<char[]>(size + 8192);
  char* data = reinterpret_cast<char*>((reinterpret_cast<uintptr_t>(buffer.get()) + 4095) & ~4095);
  for (size_t i = 0; i < size; ++i) data[i] = i % 1000 == 999 ? '\n' : "{}[]:,ab"[i % 8];
  view = std::string_view(data, size);
  return buffer;
}

}  // namespace

TEST_CASE("AppendJsonOneLineReleasing copies as AppendJsonOneLine does and frees what it copied",
          "[core]") {
  std::string_view source;
  auto buffer = PrettySource(3 * 65536 + 123, source);
  std::string expected = "prefix ";
  rfs::core::AppendJsonOneLine(source, expected);
  std::string got = "prefix ";
  rfs::core::AppendJsonOneLineReleasing(source, got, 65536);
  CHECK(got == expected);
  CHECK(got.find('\n') == std::string::npos);
  // Every whole page of the copied steps was given back: it reads as zeros now.
  CHECK(source[0] == '\0');
  CHECK(source[65536 + 4096] == '\0');
  CHECK(source[3 * 65536 - 1] == '\0');
}

TEST_CASE("ReleasePages keeps the pages that are only partly inside the range", "[core]") {
  std::string_view source;
  auto buffer = PrettySource(4 * 4096, source);
  const std::string before(source);
  // From the middle of the first page to the middle of the fourth: only pages two and three go.
  rfs::core::ReleasePages(source.data() + 2048, 3 * 4096);
  CHECK(source.substr(0, 4096) == std::string_view(before).substr(0, 4096));
  CHECK(source.substr(4096, 2 * 4096) == std::string(2 * 4096, '\0'));
  CHECK(source.substr(3 * 4096) == std::string_view(before).substr(3 * 4096));
}
