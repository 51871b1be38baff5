// ScatteredRepo: a repository that passes every call to a real one, but whose blobs are never
// contiguous in memory (as S3's are not): readers must go through ReadAt, and the largest single
// read is recorded, so a test can tell whether a reader streamed a file or took it whole.
// Made with Mode::kMapped, its blobs keep the real ones' mapped views instead, and the largest
// span of pages offered back at once (DropCachedPages) is recorded: a reader that lets a mapped
// file's pages go as it reads drops them a step at a time, not a whole huge chunk after it.
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
  enum class Mode { kScattered, kMapped };
  explicit ScatteredRepo(std::shared_ptr<const snapshot::ISourceRepo> base,
                         Mode mode = Mode::kScattered)
      : base_(std::move(base)), mode_(mode) {}

  /// The most bytes one ReadAt asked for, over every blob opened.
  uint64_t largest_read() const { return largest_read_->load(); }
  /// Bytes read through ReadAt, over every blob opened.
  uint64_t bytes_read() const { return bytes_read_->load(); }
  /// Mode::kMapped: the most bytes one DropCachedPages offered back, over every blob opened.
  uint64_t largest_drop() const { return largest_drop_->load(); }

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
    return std::make_shared<File>(*std::move(file), this);
  }
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlobOfSize(
      std::string_view path, uint64_t size) const override {
    auto file = base_->OpenBlobOfSize(path, size);
    if (!file.ok()) return file;
    return std::make_shared<File>(*std::move(file), this);
  }

 private:
  static void RaiseTo(std::atomic<uint64_t>& most, uint64_t value) {
    uint64_t seen = most.load();
    while (value > seen && !most.compare_exchange_weak(seen, value)) {
    }
  }

  class File final : public core::IRandomAccessFile {
   public:
    File(std::shared_ptr<const core::IRandomAccessFile> base, const ScatteredRepo* repo)
        : base_(std::move(base)),
          mapped_(repo->mode_ == Mode::kMapped),
          largest_(repo->largest_read_),
          total_(repo->bytes_read_),
          largest_drop_(repo->largest_drop_) {}
    const std::string& name() const override { return base_->name(); }
    uint64_t size() const override { return base_->size(); }
    absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
      RaiseTo(*largest_, out.size());
      total_->fetch_add(out.size());
      return base_->ReadAt(offset, out);
    }
    // Scattered: no ContiguousView (the default says the bytes are not in memory).
    std::optional<std::span<const uint8_t>> ContiguousView() const override {
      return mapped_ ? base_->ContiguousView() : std::nullopt;
    }
    void DropCachedPages(uint64_t offset, uint64_t length) const override {
      RaiseTo(*largest_drop_, length);
      base_->DropCachedPages(offset, length);
    }

   private:
    std::shared_ptr<const core::IRandomAccessFile> base_;
    const bool mapped_;
    std::shared_ptr<std::atomic<uint64_t>> largest_;
    std::shared_ptr<std::atomic<uint64_t>> total_;
    std::shared_ptr<std::atomic<uint64_t>> largest_drop_;
  };

  std::shared_ptr<const snapshot::ISourceRepo> base_;
  std::shared_ptr<std::atomic<uint64_t>> largest_read_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<uint64_t>> bytes_read_ = std::make_shared<std::atomic<uint64_t>>(0);
  std::shared_ptr<std::atomic<uint64_t>> largest_drop_ = std::make_shared<std::atomic<uint64_t>>(0);
  const Mode mode_;
};

}  // namespace rfs::test
