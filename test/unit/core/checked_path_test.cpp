// The one function every path built from untrusted names goes through.
#include "rfs/core/checked_path.hpp"

#include <catch2/catch.hpp>

using rfs::core::CheckedPath;
using rfs::core::PathSegmentProblem;

TEST_CASE("paths built from untrusted names stay inside their folder", "[core]") {
  CHECK_FALSE(PathSegmentProblem("logs-2024"));
  CHECK_FALSE(PathSegmentProblem("__8PQrZ0q_RW2EmjGZxwy2JQ"));
  CHECK_FALSE(PathSegmentProblem("snap-..x.dat"));  // dots inside a name are a name
  for (const char* bad : {"", ".", "..", "a/b", "a\\b", "/abs", "x\ny", "nul\x01"}) {
    INFO(bad);
    CHECK(PathSegmentProblem(bad).has_value());
  }
  CHECK(PathSegmentProblem(std::string_view("a\0b", 3)).has_value());

  auto ok = CheckedPath({"indices", "8PQrZ0q", "0", "snap-x.dat"}, "index-3");
  REQUIRE(ok.ok());
  CHECK(*ok == "indices/8PQrZ0q/0/snap-x.dat");
  // A part may hold several segments (a folder the repository lists); each is checked.
  CHECK(CheckedPath({"501000001111000/indices/abc/0", "__file"}, "a listing").value() ==
        "501000001111000/indices/abc/0/__file");
  for (auto parts : {std::initializer_list<std::string_view>{"indices", "..", "etc"},
                     std::initializer_list<std::string_view>{"/etc/passwd"},
                     std::initializer_list<std::string_view>{"indices", "a/../../b"},
                     std::initializer_list<std::string_view>{"indices", ""},
                     std::initializer_list<std::string_view>{"indices/", "x"}}) {
    auto refused = CheckedPath(parts, "index-7");
    REQUIRE_FALSE(refused.ok());
    CHECK(absl::IsInvalidArgument(refused.status()));
    CHECK(std::string(refused.status().message()).find("built from index-7") != std::string::npos);
  }
  // The name is shown escaped.
  auto control = CheckedPath({"indices", "x\x1b[2J"}, "index-7");
  REQUIRE_FALSE(control.ok());
  CHECK(std::string(control.status().message()).find("\\x1b") != std::string::npos);
}
