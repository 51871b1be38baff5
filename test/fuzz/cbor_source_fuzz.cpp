// libFuzzer entry point for CBOR _source -> JSON (Elasticsearch's CBOR content type): any input
// must convert or fail with a clean status, never crash, hang or read out of bounds; and whatever
// it converts must be valid JSON.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <string>

#include <boost/json/parse.hpp>
#include <boost/json/parse_options.hpp>

#include "rfs/content/source_json.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string out;
  if (rfs::content::AppendCborAsJson(std::span<const uint8_t>(data, size), "fuzz.cbor", out).ok()) {
    boost::system::error_code ec;
    // As deep as the converter accepts (Boost.JSON stops at 32 by default).
    boost::json::parse_options options;
    options.max_depth = 100'000;
    (void)boost::json::parse(out, ec, {}, options);
    if (ec) std::abort();  // converted to something that is not JSON
  }
  return 0;
}
