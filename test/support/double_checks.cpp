// Linked into every test executable that uses the OpenSearch double: when a double goes away, the
// test that served it checks that nothing a client sent was malformed or unsupported (400, 405,
// 406, 413), unless the test provoked such answers on purpose (AllowProtocolErrors).
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "support/opensearch_double.hpp"

namespace {

const bool kRegistered = [] {
  rfs::testing::OpenSearchDouble::SetProtocolErrorCheck([](const std::vector<std::string>& errors) {
    INFO("requests the double refused as malformed: " << (errors.empty() ? std::string()
                                                                         : errors.front()));
    CHECK(errors.empty());
  });
  return true;
}();

}  // namespace
