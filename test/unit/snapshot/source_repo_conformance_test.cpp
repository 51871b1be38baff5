// The ISourceRepo conformance suite on FileSystemRepo: blobs written as files of a folder.
#include "conformance/source_repo_conformance.hpp"

#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>

#include <catch2/catch.hpp>

#include "rfs/snapshot/source_repo.hpp"

#include "support/temp_dir.hpp"

TEST_CASE("FileSystemRepo keeps the ISourceRepo contract", "[snapshot][conformance]") {
  rfs::test::TempDir dir("rfs-repo-conformance");
  rfs::snapshot::conformance::RunSourceRepoConformance(
      [&](const std::map<std::string, std::string>& blobs) {
        for (const auto& [path, bytes] : blobs) {
          const std::filesystem::path file = dir.path() / path;
          std::filesystem::create_directories(file.parent_path());
          std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
        }
        auto repo = rfs::snapshot::FileSystemRepo::Open(dir.path().string());
        REQUIRE(repo.ok());
        return std::shared_ptr<const rfs::snapshot::ISourceRepo>(*std::move(repo));
      });
}
