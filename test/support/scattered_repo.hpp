// ScatteredRepo: a repository that passes every call to a real one, but whose blobs are never
// contiguous in memory (as S3's are not): readers must go through ReadAt, and the largest single
// read is recorded, so a test can tell whether a reader streamed a file or took it whole.
#pragma once

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/snapshot/source_repo.hpp"

namespace rfs::test {

class ScatteredRepo final : public snapshot::ISourceRepo {
 public:
  explicit ScatteredRepo(std::shared_ptr<const snapshot::ISourceRepo> base)
      : base_(std::move(base)) {}

  /// The most bytes one ReadAt asked for, over every blob opened.
  uint64_t largest_read() const { return largest_read_->load(); }
  /// Bytes read through ReadAt, over every blob opened.
  uint64_t bytes_read() const { return bytes_read_->load(); }

  const std::string& description() const override { return base_->description(); }
  absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view dir) const override {
    return base_->ListBlobs(dir);
  }
  absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view dir) const override {
    return base_->ListFolders(dir);
  }
  absl::StatusOr<std::vector<std::string>> ListBlobsBelow(std::string_view dir,
                                                          int max_depth) const override {
    return base_->ListBlobsBelow(dir, max_depth);
  }
  absl::StatusOr<uint64_t> BlobSize(std::string_view path) const override {
    return base_->BlobSize(path);
  }
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const override {
    auto file = base_->OpenBlob(path);
    if (!file.ok()) return file;
    return std::make_shared<File>(*std::move(file), largest_read_, bytes_read_);
  }
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlobOfSize(
      std::string_view path, uint64_t size) const override {
    auto file = base_->OpenBlobOfSize(path, size);
    if (!file.ok()) return file;
    return std::make_shared<File>(*std::move(file), largest_read_, bytes_read_);
  }

 private:
  class File final : public core::IRandomAccessFile {
   public:
    File(std::shared_ptr<const core::IRandomAccessFile> base,
         std::shared_ptr<std::atomic<uint64_t>> largest,
         std::shared_ptr<std::atomic<uint64_t>> total)
        : base_(std::move(base)), largest_(std::move(largest)), total_(std::move(total)) {}
    const std::string& name() const override { return base_->name(); }
    uint64_t size() const override { return base_->size(); }
    absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
      uint64_t seen = largest_->load();
      while (out.size() > seen && !largest_->compare_exchange_weak(seen, out.size())) {
      }
      total_->fetch_add(out.size());
      return base_->ReadAt(offset, out);
    }
    // No ContiguousView: the default says the bytes are not in memory.

   private:
    std::shared_ptr<const core::IRandomAccessFile> base_;
    std::shared_ptr<std::atomic<uint64_t>> largest_;
    std::shared_ptr<std::atomic<uint64_t>> total_;
  };

  std::shared_ptr<const snapshot::ISourceRepo> base_;
  std::shared_ptr<std::atomic<uint64_t>> largest_read_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<uint64_t>> bytes_read_ = std::make_shared<std::atomic<uint64_t>>(0);
};

}  // namespace rfs::test
