// ISourceRepo: the blob store that holds a snapshot repository.
//
// A repository is a tree of named blobs (a file-system folder, an S3 prefix, ...). Paths are
// relative to the repository root and use '/' separators ("index-3",
// "indices/<id>/0/snap-<uuid>.dat"). Blobs are opened as core::IRandomAccessFile, so every read
// is positional: a local implementation memory-maps, a remote one issues ranged GETs and may
// cache ranges locally behind the same interface. Nothing is ever copied out of the repository
// to read it.
//
// Thread safety: every method may be called concurrently.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/memory_budget.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/core/str_cat.hpp"

#include "absl/status/statusor.h"

namespace rfs::snapshot {

/// A blob and the size its caller knows it has (a shard's files are listed with their lengths).
struct BlobExtent {
  std::string path;
  uint64_t size = 0;
};

class ISourceRepo {
 public:
  virtual ~ISourceRepo() = default;

  /// Where the repository lives, for messages (a path or URI).
  virtual const std::string& description() const = 0;

  /// Names of the blobs directly inside `dir` ("" for the root), sorted. A missing folder is an
  /// empty list, as in an object store.
  virtual absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view dir) const = 0;

  /// Names of the child folders of `dir`, sorted.
  virtual absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view dir) const = 0;

  /// Paths (relative to `dir`) of every blob under `dir` at any depth below it, at most
  /// `max_depth` folders down, sorted. This walks ListFolders; an object store lists the keys
  /// under the prefix in one paged listing instead.
  virtual absl::StatusOr<std::vector<std::string>> ListBlobsBelow(std::string_view dir,
                                                                  int max_depth = 16) const;

  /// Opens a blob for positional reads. NotFound when it does not exist.
  virtual absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const = 0;

  /// Opens a blob whose size the caller already knows (a shard's files are listed with their
  /// lengths), so that a store where asking for the size costs a round trip need not ask. A blob
  /// shorter than `size` fails with DataLoss, here or when the missing bytes are read; a longer
  /// one may be seen only up to `size` (callers check contents, as shard files by checksum). The
  /// default opens the blob and compares sizes.
  virtual absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlobOfSize(
      std::string_view path, uint64_t size) const;

  /// Size of a blob in bytes. NotFound when it does not exist.
  virtual absl::StatusOr<uint64_t> BlobSize(std::string_view path) const = 0;

  /// A hint that these blobs will be opened soon with OpenBlobOfSize, roughly in this order: a
  /// store where each open costs a round trip may start fetching them in parallel. Errors are
  /// not reported here but by the opens. Does nothing by default.
  virtual void Prefetch(std::span<const BlobExtent> blobs) const { (void)blobs; }

  /// The memory budget of the documents read from this repository (nullptr: none), set by the
  /// worker that owns it for its lifetime: a store that reads ahead keeps less ahead while a
  /// huge document is in memory (core::MemoryBudget::large_document_held). Ignored by default.
  virtual void ShareMemoryBudget(const core::MemoryBudget* budget) const { (void)budget; }

  /// Reads a whole blob into memory (for small metadata blobs). Refuses blobs larger than
  /// `max_bytes` with ResourceExhausted.
  absl::StatusOr<std::vector<uint8_t>> ReadBlob(std::string_view path,
                                                uint64_t max_bytes = 1ull << 30) const;
};

/// A repository in a local folder (an Elasticsearch `fs` repository). Blobs are memory-mapped.
class FileSystemRepo final : public ISourceRepo {
 public:
  /// Fails with NotFound when `root` is not a folder.
  static absl::StatusOr<std::shared_ptr<FileSystemRepo>> Open(std::string root);

  const std::string& description() const override { return root_; }
  absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view dir) const override;
  absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view dir) const override;
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const override;
  absl::StatusOr<uint64_t> BlobSize(std::string_view path) const override;

 private:
  explicit FileSystemRepo(std::string root) : root_(std::move(root)) {}
  absl::StatusOr<std::string> Resolve(std::string_view path) const;
  std::string root_;
};

/// A shard's Lucene files as a directory, listed up front from a repository's metadata (a
/// snapshot's shard, a Solr backup's core), each by its Lucene name with `Info`, what it takes to
/// open it: the listing here, the opening of a listed file in OpenListed.
template <typename Info>
class ListedDirectory : public core::IDirectory {
 public:
  const std::string& description() const override { return description_; }

  std::vector<std::string> ListFiles() const override {
    std::vector<std::string> names;
    names.reserve(files_.size());
    for (const auto& [name, info] : files_) names.push_back(name);
    return names;
  }

  /// NotFound for a name not listed.
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenFile(
      std::string_view name) const final {
    const Info* info = Find(name);
    if (info == nullptr) {
      return absl::NotFoundError(core::StrCat("Lucene file ", name, " is not in ", description_));
    }
    return OpenListed(*info);
  }

 protected:
  explicit ListedDirectory(std::string description) : description_(std::move(description)) {}

  /// Lists a file (a name listed already keeps its first entry).
  void Add(std::string name, Info info) { files_.emplace(std::move(name), std::move(info)); }
  /// The entry of `name`, or nullptr when it is not listed.
  const Info* Find(std::string_view name) const {
    auto it = files_.find(name);
    return it == files_.end() ? nullptr : &it->second;
  }
  virtual absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenListed(
      const Info& info) const = 0;

 private:
  std::string description_;
  std::map<std::string, Info, std::less<>> files_;
};

}  // namespace rfs::snapshot
