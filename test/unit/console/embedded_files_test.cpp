// The OpenAPI document and the page are data files in lib/console/ compiled in at build time: the
// bytes the console serves are the file's bytes, and the document is JSON with the API's paths.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <string_view>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "console/console_openapi_internal.hpp"
#include "console/console_page_internal.hpp"

namespace {

std::string SourceFile(const std::string& name) {
  const auto path = std::filesystem::path(RFS_SOURCE_DIR) / "lib" / "console" / name;
  std::ifstream in(path, std::ios::binary);
  INFO(path.string());
  REQUIRE(in);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

TEST_CASE("the console's embedded OpenAPI document and page are their files' bytes", "[console]") {
  const std::string document = SourceFile("openapi.json");
  REQUIRE(document.size() > 1000);
  CHECK(rfs::console::internal::ConsoleOpenApi() == document);
  const boost::json::value parsed = boost::json::parse(rfs::console::internal::ConsoleOpenApi());
  CHECK(parsed.at("openapi").as_string() == "3.0.3");
  CHECK(parsed.at("paths").as_object().contains("/sessions/{name}/{space}/work-items/status"));

  const std::string page = SourceFile("page.html");
  REQUIRE(page.size() > 1000);
  CHECK(rfs::console::internal::ConsolePage() == page);
  CHECK(rfs::console::internal::ConsolePage().starts_with("<!doctype html>"));
  CHECK(rfs::console::internal::ConsolePage().ends_with("</html>\n"));
}
