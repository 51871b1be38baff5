// Locates the shared corpus of real snapshot repositories (../shared/corpus
// beside the checkout; never copied into the repository). A test that needs it
// and runs without it is skipped (SkipTest: RFS-SKIPPED and exit code 77).
#pragma once

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>

#include "support/skip.hpp"

namespace rfs::test {

/// The corpus root; skips the running test (naming `test_name`) when it is absent. The optional is
/// never empty; it stays for the callers' `if (!root) return;`.
inline std::optional<std::filesystem::path> CorpusRoot(std::string_view test_name = "corpus") {
  const std::filesystem::path root =
      std::filesystem::path(RFS_SOURCE_DIR) / ".." / "shared" / "corpus";
  std::error_code ec;
  if (std::filesystem::is_directory(root, ec)) {
    return std::filesystem::canonical(root, ec);
  }
  // Where the corpus is known to be there (CI sets RFS_REQUIRE_CORPUS=1), its absence is a
  // failure: otherwise every corpus test would pass by skipping.
  if (const char* required = std::getenv("RFS_REQUIRE_CORPUS");
      required != nullptr && std::string_view(required) == "1") {
    std::cout << "RFS_REQUIRE_CORPUS=1 but " << test_name << " finds no corpus at " << root.string()
              << std::endl;
    std::exit(1);
  }
  SkipTest(std::string(test_name) + ": no corpus at " + root.string());
}

}  // namespace rfs::test

namespace rfs::test {

/// A path inside the corpus (skips the test when the corpus is absent).
inline std::optional<std::filesystem::path> CorpusPath(std::string_view relative) {
  auto root = CorpusRoot(relative);
  if (!root) return std::nullopt;
  return *root / relative;
}

}  // namespace rfs::test
