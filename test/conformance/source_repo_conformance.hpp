// The ISourceRepo conformance suite: the contract of rfs/snapshot/source_repo.hpp, run against any
// backend (a folder, an S3 bucket) through a factory that stores a set of blobs and opens a
// repository over them.
//
// Call RunSourceRepoConformance(make_repo) from a Catch2 TEST_CASE. What it checks: listings are
// sorted, split into blobs and folders, and a missing folder lists empty; ListBlobsBelow walks to
// its depth; a blob reads back byte for byte at any offset, an empty blob included, and a read
// past its end is DataLoss naming it; a missing blob is NotFound from OpenBlob and BlobSize;
// ReadBlob refuses a blob over its limit with ResourceExhausted; concurrent readers of one blob
// all see its bytes.
#pragma once

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/random_access.hpp"
#include "rfs/snapshot/source_repo.hpp"

namespace rfs::snapshot::conformance {

/// Stores `blobs` (path -> bytes) in a fresh backing store and opens a repository over it.
using MakeRepo = std::function<std::shared_ptr<const ISourceRepo>(
    const std::map<std::string, std::string>& blobs)>;

inline std::string PatternBytes(size_t n, uint8_t seed) {
  std::string out(n, '\0');
  for (size_t i = 0; i < n; ++i) out[i] = static_cast<char>((i * 131 + seed) & 0xff);
  return out;
}

inline std::vector<std::string> Sorted(std::vector<std::string> names) {
  std::sort(names.begin(), names.end());
  return names;
}

/// What a backend's test server cannot do.
struct SourceRepoKnobs {
  /// Whether a folder that holds only folders is listed. s3rver's filesystem store lists a
  /// folder only when it holds an object itself (lib/stores/filesystem.js prunes deeper folders
  /// while walking); S3 lists every common prefix.
  bool lists_folders_of_folders = true;
};

inline void RunSourceRepoConformance(const MakeRepo& make_repo, SourceRepoKnobs knobs = {}) {
  const std::map<std::string, std::string> blobs = {
      {"index-3", R"({"snapshots":[]})"},
      {"index.latest", std::string("\0\0\0\0\0\0\0\3", 8)},
      {"indices/a/0/__large", PatternBytes(3 << 20, 7)},
      {"indices/a/0/snap-x.dat", PatternBytes(1000, 1)},
      {"indices/a/1/empty", ""},
      {"indices/b/meta-y.dat", PatternBytes(77, 2)},
      {"snap-x.dat", PatternBytes(300, 3)},
  };
  const std::shared_ptr<const ISourceRepo> repo = make_repo(blobs);
  REQUIRE(repo != nullptr);
  CHECK_FALSE(repo->description().empty());

  SECTION("listings are sorted and split into blobs and folders") {
    auto root = repo->ListBlobs("");
    REQUIRE(root.ok());
    CHECK(*root == std::vector<std::string>{"index-3", "index.latest", "snap-x.dat"});
    auto folders = repo->ListFolders("");
    REQUIRE(folders.ok());
    if (knobs.lists_folders_of_folders) {
      CHECK(*folders == std::vector<std::string>{"indices"});
    }
    auto shards = repo->ListFolders("indices/a");
    REQUIRE(shards.ok());
    CHECK(*shards == std::vector<std::string>{"0", "1"});
    auto shard = repo->ListBlobs("indices/a/0");
    REQUIRE(shard.ok());
    CHECK(*shard == std::vector<std::string>{"__large", "snap-x.dat"});
    auto missing = repo->ListBlobs("indices/none");
    REQUIRE(missing.ok());
    CHECK(missing->empty());
    auto below = repo->ListBlobsBelow("indices");
    INFO(below.status().ToString());
    REQUIRE(below.ok());
    CHECK(Sorted(*below) == *below);
    CHECK(*below ==
          std::vector<std::string>{"a/0/__large", "a/0/snap-x.dat", "a/1/empty", "b/meta-y.dat"});
    auto shallow = repo->ListBlobsBelow("indices", 1);
    INFO(shallow.status().ToString());
    REQUIRE(shallow.ok());
    CHECK(*shallow == std::vector<std::string>{"b/meta-y.dat"});
  }

  SECTION("blobs read back byte for byte at any offset") {
    for (const auto& [path, bytes] : blobs) {
      INFO(path);
      auto size = repo->BlobSize(path);
      REQUIRE(size.ok());
      CHECK(*size == bytes.size());
      auto whole = repo->ReadBlob(path);
      INFO(whole.status().ToString());
      REQUIRE(whole.ok());
      CHECK(std::string(whole->begin(), whole->end()) == bytes);
      auto file = repo->OpenBlob(path);
      REQUIRE(file.ok());
      CHECK((*file)->size() == bytes.size());
      if (bytes.size() > 10) {
        std::vector<uint8_t> middle(bytes.size() / 3);
        const uint64_t at = bytes.size() / 2 - middle.size() / 2;
        REQUIRE((*file)->ReadAt(at, middle).ok());
        CHECK(std::string(middle.begin(), middle.end()) == bytes.substr(at, middle.size()));
      }
      // A read reaching past the end fails naming the blob.
      std::vector<uint8_t> past(4);
      const absl::Status beyond =
          (*file)->ReadAt(bytes.size() - std::min<size_t>(bytes.size(), 2), past);
      CHECK(absl::IsDataLoss(beyond));
      const std::string name = path.substr(path.rfind('/') + 1);
      CHECK(std::string(beyond.message()).find(name) != std::string::npos);
    }
  }

  SECTION("a blob opened with its known size reads back; one shorter than said is DataLoss") {
    for (const auto& [path, bytes] : blobs) {
      INFO(path);
      auto file = repo->OpenBlobOfSize(path, bytes.size());
      REQUIRE(file.ok());
      REQUIRE((*file)->size() == bytes.size());
      auto read = core::ReadRange(**file, 0, bytes.size());
      REQUIRE(read.ok());
      CHECK(std::string(read->begin(), read->end()) == bytes);
      // Told 10 bytes more than it holds: the open or the read of those bytes fails. (Not asked
      // of the empty blob: s3rver breaks off its answer to a ranged GET of an empty object.)
      if (bytes.empty()) continue;
      auto longer = repo->OpenBlobOfSize(path, bytes.size() + 10);
      if (longer.ok()) {
        CHECK(absl::IsDataLoss(core::ReadRange(**longer, 0, bytes.size() + 10).status()));
      } else {
        CHECK(absl::IsDataLoss(longer.status()));
      }
    }
    CHECK(absl::IsNotFound(repo->OpenBlobOfSize("indices/a/0/nothing", 5).status()));
  }

  SECTION("a missing blob is NotFound") {
    CHECK(absl::IsNotFound(repo->OpenBlob("indices/a/0/nothing").status()));
    CHECK(absl::IsNotFound(repo->BlobSize("nothing").status()));
    CHECK(absl::IsNotFound(repo->ReadBlob("indices/none/x").status()));
  }

  SECTION("ReadBlob refuses a blob over its limit") {
    CHECK(absl::IsResourceExhausted(repo->ReadBlob("indices/a/0/__large", 1 << 20).status()));
    CHECK(repo->ReadBlob("indices/a/0/__large", 3 << 20).ok());
  }

  SECTION("concurrent readers of one blob all see its bytes") {
    auto file = repo->OpenBlob("indices/a/0/__large");
    REQUIRE(file.ok());
    const std::string& expected = blobs.at("indices/a/0/__large");
    std::vector<int> wrong(4, 0);
    std::vector<std::thread> readers;
    for (size_t t = 0; t < wrong.size(); ++t) {
      readers.emplace_back([&, t] {
        std::vector<uint8_t> chunk(64 << 10);
        for (uint64_t at = t * chunk.size(); at + chunk.size() <= expected.size();
             at += wrong.size() * chunk.size()) {
          if (!(*file)->ReadAt(at, chunk).ok() ||
              std::string(chunk.begin(), chunk.end()) != expected.substr(at, chunk.size())) {
            ++wrong[t];
          }
        }
      });
    }
    for (auto& reader : readers) reader.join();
    CHECK(wrong == std::vector<int>(wrong.size(), 0));
  }
}

}  // namespace rfs::snapshot::conformance
