// FlippingRepo: a repository that passes every call to a real one, except that one blob reads
// with one byte changed (or is hidden), for sweeps that damage a repository one byte at a time.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/snapshot/source_repo.hpp"

namespace rfs::test {

class FlippingRepo final : public snapshot::ISourceRepo {
 public:
  explicit FlippingRepo(std::shared_ptr<const snapshot::ISourceRepo> base)
      : base_(std::move(base)) {}

  /// Reads `blob` with the byte at `offset` XORed with `mask`.
  void Flip(std::string blob, uint64_t offset, uint8_t mask = 0x01) {
    blob_ = std::move(blob);
    offset_ = offset;
    mask_ = mask;
    hidden_.clear();
  }
  /// Leaves every blob intact.
  void Reset() {
    blob_.clear();
    hidden_.clear();
  }
  /// Makes `blob` disappear: not listed, NotFound when opened.
  void Hide(std::string blob) {
    blob_.clear();
    hidden_ = std::move(blob);
  }

  const std::string& description() const override { return base_->description(); }
  absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view dir) const override {
    auto blobs = base_->ListBlobs(dir);
    if (!blobs.ok() || hidden_.empty()) return blobs;
    std::vector<std::string> out;
    for (auto& blob : *blobs) {
      const std::string path = dir.empty() ? blob : std::string(dir) + "/" + blob;
      if (path != hidden_) out.push_back(std::move(blob));
    }
    return out;
  }
  absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view dir) const override {
    return base_->ListFolders(dir);
  }
  absl::StatusOr<uint64_t> BlobSize(std::string_view path) const override {
    if (path == hidden_) return absl::NotFoundError(std::string(path) + " is hidden");
    return base_->BlobSize(path);
  }
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const override {
    if (path == hidden_) return absl::NotFoundError(std::string(path) + " is hidden");
    auto file = base_->OpenBlob(path);
    if (!file.ok() || blob_.empty() || path != blob_) return file;
    auto bytes = core::ReadRange(**file, 0, (*file)->size());
    if (!bytes.ok()) return bytes.status();
    (*bytes)[offset_] ^= mask_;
    return std::make_shared<core::MemoryFile>((*file)->name(), *std::move(bytes));
  }

 private:
  std::shared_ptr<const snapshot::ISourceRepo> base_;
  std::string blob_;
  std::string hidden_;
  uint64_t offset_ = 0;
  uint8_t mask_ = 0x01;
};

}  // namespace rfs::test
