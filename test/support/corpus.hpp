// Locates the shared corpus of real snapshot repositories (../shared/corpus
// beside the checkout; never copied into the repository). Tests that need it
// call CorpusRoot() and return early when it is absent: the printed
// "RFS-SKIPPED:" line makes ctest report them as skipped
// (SKIP_REGULAR_EXPRESSION in rfs_add_test).
#pragma once

#include <filesystem>
#include <iostream>
#include <optional>
#include <string_view>

namespace rfs::test {

/// The corpus root, or std::nullopt after printing an RFS-SKIPPED line naming
/// `test_name`.
inline std::optional<std::filesystem::path> CorpusRoot(std::string_view test_name = "corpus") {
  const std::filesystem::path root =
      std::filesystem::path(RFS_SOURCE_DIR) / ".." / "shared" / "corpus";
  std::error_code ec;
  if (std::filesystem::is_directory(root, ec)) {
    return std::filesystem::canonical(root, ec);
  }
  std::cout << "RFS-SKIPPED: " << test_name << ": no corpus at " << root.string() << std::endl;
  return std::nullopt;
}

}  // namespace rfs::test

namespace rfs::test {

/// A path inside the corpus, or std::nullopt (after the RFS-SKIPPED line) when it is absent.
inline std::optional<std::filesystem::path> CorpusPath(std::string_view relative) {
  auto root = CorpusRoot(relative);
  if (!root) return std::nullopt;
  return *root / relative;
}

}  // namespace rfs::test
