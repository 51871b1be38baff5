// libFuzzer entry point for YAML _source -> JSON: any input must convert or
// fail with a clean status, never crash, hang or read out of bounds; and
// whatever it converts must be valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include <boost/json/parse.hpp>

#include "rfs/lucene/source_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::span<const uint8_t> bytes(data, size);
  std::string out;
  if (rfs::lucene::AppendYamlAsJson(bytes, "fuzz.yaml", out).ok()) {
    boost::system::error_code ec;
    (void)boost::json::parse(out, ec);
    if (ec) std::abort();  // converted to something that is not JSON
  }
  return 0;
}
