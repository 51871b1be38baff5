#include <algorithm>
#include <map>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/base36.hpp"
#include "rfs/core/checked_path.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "snapshot/shard_directory_internal.hpp"

namespace rfs::snapshot::internal {

using core::StrCat;

namespace {

// A Lucene file made of one or more blobs laid end to end. Errors name the Lucene file and the
// blob that failed.
class PartsFile final : public core::IRandomAccessFile {
 public:
  PartsFile(std::string name, std::vector<std::shared_ptr<const core::IRandomAccessFile>> parts)
      : name_(std::move(name)), parts_(std::move(parts)) {
    starts_.reserve(parts_.size());
    for (const auto& part : parts_) {
      starts_.push_back(size_);
      size_ += part->size();
    }
  }

  const std::string& name() const override { return name_; }
  uint64_t size() const override { return size_; }

  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (offset > size_ || out.size() > size_ - offset) {
      return core::DataLossAt(
          name_, offset, StrCat("read of ", out.size(), " bytes past the end (size ", size_, ")"));
    }
    // First part holding `offset`.
    size_t i = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1;
    size_t done = 0;
    while (done < out.size()) {
      const uint64_t in_part = offset + done - starts_[i];
      const uint64_t n = std::min<uint64_t>(out.size() - done, parts_[i]->size() - in_part);
      RFS_RETURN_IF_ERROR(
          core::WithContext(parts_[i]->ReadAt(in_part, out.subspan(done, n)), name_));
      done += n;
      ++i;
    }
    return absl::OkStatus();
  }

  std::optional<std::span<const uint8_t>> ContiguousView() const override {
    if (parts_.size() == 1) return parts_[0]->ContiguousView();
    if (parts_.empty()) return std::span<const uint8_t>();
    return std::nullopt;
  }

  void DropCachedPages(uint64_t offset, uint64_t length) const override {
    if (parts_.size() == 1) parts_[0]->DropCachedPages(offset, length);
  }

 private:
  std::string name_;
  std::vector<std::shared_ptr<const core::IRandomAccessFile>> parts_;
  std::vector<uint64_t> starts_;
  uint64_t size_ = 0;
};

class ShardDirectory final : public core::IDirectory {
 public:
  ShardDirectory(std::shared_ptr<const ISourceRepo> repo, std::string folder, ShardSnapshot shard,
                 std::string description, ShardFilesOptions options)
      : repo_(std::move(repo)),
        folder_(std::move(folder)),
        description_(std::move(description)),
        options_(options) {
    for (auto& file : shard.files) {
      std::string name = file.physical_name;
      files_.emplace(std::move(name), std::move(file));
    }
  }

  const std::string& description() const override { return description_; }

  std::vector<std::string> ListFiles() const override {
    std::vector<std::string> names;
    names.reserve(files_.size());
    for (const auto& [name, info] : files_) names.push_back(name);
    return names;
  }

  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenFile(
      std::string_view name) const override {
    auto it = files_.find(std::string(name));
    if (it == files_.end()) {
      return absl::NotFoundError(StrCat("Lucene file ", name, " is not in ", description_));
    }
    const FileInfo& info = it->second;
    std::shared_ptr<const core::IRandomAccessFile> file;
    if (info.is_virtual()) {
      // Virtual blobs: the content is the meta_hash itself (A.6).
      file = std::make_shared<core::MemoryFile>(info.physical_name, info.meta_hash);
    } else {
      std::vector<std::shared_ptr<const core::IRandomAccessFile>> parts;
      RFS_ASSIGN_OR_RETURN(const std::vector<BlobExtent> extents, PartsOf(info));
      parts.reserve(extents.size());
      for (const BlobExtent& extent : extents) {
        auto part = repo_->OpenBlobOfSize(extent.path, extent.size);
        if (!part.ok()) {
          // Named as the Lucene file it holds, as the snapshot lists it.
          return core::WithContext(part.status(), StrCat(info.physical_name, " (", folder_, "/",
                                                         info.name, ") in ", description_));
        }
        parts.push_back(*std::move(part));
      }
      file = std::make_shared<PartsFile>(
          StrCat(info.physical_name, " (", folder_, "/", info.name, ")"), std::move(parts));
    }
    if (file->size() != info.length) {
      return absl::DataLossError(StrCat(file->name(), " in ", description_, " holds ", file->size(),
                                        " bytes but the snapshot lists ", info.length));
    }
    if (options_.verify_checksums) RFS_RETURN_IF_ERROR(Verify(*file, info));
    return file;
  }

  void Prefetch(std::span<const std::string> names) const override {
    std::vector<BlobExtent> blobs;
    for (const std::string& name : names) {
      auto it = files_.find(name);
      if (it == files_.end() || it->second.is_virtual()) continue;
      auto parts = PartsOf(it->second);
      if (!parts.ok()) continue;  // OpenFile reports it
      for (BlobExtent& part : *parts) blobs.push_back(std::move(part));
    }
    if (!blobs.empty()) repo_->Prefetch(blobs);
  }

 private:
  // The blobs that hold a Lucene file, in order, with their sizes: every part but the last holds
  // part_size bytes (number_of_parts() > 1 only with one).
  absl::StatusOr<std::vector<BlobExtent>> PartsOf(const FileInfo& info) const {
    std::vector<BlobExtent> parts;
    const uint64_t count = info.number_of_parts();
    parts.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      RFS_ASSIGN_OR_RETURN(std::string path,
                           core::CheckedPath({folder_, info.PartName(i)}, description_));
      const uint64_t bytes =
          count == 1 ? info.length
                     : (i + 1 < count ? *info.part_size : info.length - *info.part_size * i);
      parts.push_back(BlobExtent{std::move(path), bytes});
    }
    return parts;
  }

  absl::Status Verify(const core::IRandomAccessFile& file, const FileInfo& info) const {
    const auto expected = core::ParseBase36(info.checksum);
    if (!expected) {
      return absl::DataLossError(
          StrCat(file.name(), ": bad base36 checksum '", info.checksum, "' in the snapshot"));
    }
    std::vector<uint8_t> buffer;
    std::span<const uint8_t> bytes;
    if (auto view = file.ContiguousView()) {
      bytes = *view;
    } else {
      RFS_ASSIGN_OR_RETURN(buffer, core::ReadRange(file, 0, file.size()));
      bytes = buffer;
    }
    RFS_ASSIGN_OR_RETURN(const uint32_t actual, codec::VerifyFooter(bytes, file.name()));
    if (actual != *expected) {
      return core::DataLossAt(file.name(), file.size() - 8,
                              StrCat("footer checksum ", actual,
                                     " differs from the snapshot's checksum ", info.checksum));
    }
    return absl::OkStatus();
  }

  std::shared_ptr<const ISourceRepo> repo_;
  std::string folder_;
  std::string description_;
  ShardFilesOptions options_;
  std::map<std::string, FileInfo> files_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const core::IDirectory>> MakeShardDirectory(
    std::shared_ptr<const ISourceRepo> repo, std::string folder, ShardSnapshot shard,
    std::string description, ShardFilesOptions options) {
  return std::make_shared<ShardDirectory>(std::move(repo), std::move(folder), std::move(shard),
                                          std::move(description), options);
}

}  // namespace rfs::snapshot::internal
