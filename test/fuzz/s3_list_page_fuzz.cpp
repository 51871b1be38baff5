// libFuzzer entry point for S3 ListObjectsV2 answers (XML from the network): any input must
// parse or fail with a clean status, never crash, hang or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "s3/list_page_internal.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view xml(reinterpret_cast<const char*>(data), size);
  auto page = rfs::s3::internal::ParseListPage(xml, "fuzz");
  if (page.ok()) {
    for (const auto& key : page->keys) (void)key.size();
  }
  return 0;
}
