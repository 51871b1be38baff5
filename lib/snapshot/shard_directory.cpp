#include <algorithm>

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

  // A view of the part that holds [offset, offset + min_length), up to its end: the part's own
  // mapping, or what the part holds.
  absl::StatusOr<std::optional<HeldBytes>> ViewAt(uint64_t offset, uint64_t min_length,
                                                  uint64_t max_length) const override {
    if (offset > size_ || min_length > size_ - offset) {
      return core::DataLossAt(
          name_, offset, StrCat("read of ", min_length, " bytes past the end (size ", size_, ")"));
    }
    if (offset == size_) return std::nullopt;
    const size_t i = std::upper_bound(starts_.begin(), starts_.end(), offset) - starts_.begin() - 1;
    const uint64_t in_part = offset - starts_[i];
    const uint64_t part_left = parts_[i]->size() - in_part;
    if (part_left < min_length) return std::nullopt;
    max_length = std::min(max_length, part_left);
    if (const auto view = parts_[i]->ContiguousView()) {
      return HeldBytes{view->subspan(in_part, max_length), nullptr};
    }
    auto held = parts_[i]->ViewAt(in_part, min_length, max_length);
    if (!held.ok()) return core::WithContext(held.status(), name_);
    return held;
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

class ShardDirectory final : public ListedDirectory<FileInfo> {
 public:
  ShardDirectory(std::shared_ptr<const ISourceRepo> repo, std::string folder, ShardSnapshot shard,
                 std::string description, ShardFilesOptions options)
      : ListedDirectory(std::move(description)),
        repo_(std::move(repo)),
        folder_(std::move(folder)),
        options_(options) {
    for (auto& file : shard.files) {
      std::string name = file.physical_name;
      Add(std::move(name), std::move(file));
    }
  }

  void Prefetch(std::span<const std::string> names) const override {
    std::vector<BlobExtent> blobs;
    for (const std::string& name : names) {
      const FileInfo* info = Find(name);
      if (info == nullptr || info->is_virtual()) continue;
      auto parts = PartsOf(*info);
      if (!parts.ok()) continue;  // OpenFile reports it
      for (BlobExtent& part : *parts) blobs.push_back(std::move(part));
    }
    if (!blobs.empty()) repo_->Prefetch(blobs);
  }

 private:
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenListed(
      const FileInfo& info) const override {
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
                                                         info.name, ") in ", description()));
        }
        parts.push_back(*std::move(part));
      }
      file = std::make_shared<PartsFile>(
          StrCat(info.physical_name, " (", folder_, "/", info.name, ")"), std::move(parts));
    }
    if (file->size() != info.length) {
      return absl::DataLossError(StrCat(file->name(), " in ", description(), " holds ",
                                        file->size(), " bytes but the snapshot lists ",
                                        info.length));
    }
    if (options_.verify_checksums) RFS_RETURN_IF_ERROR(Verify(*file, info));
    return file;
  }

  // The blobs that hold a Lucene file, in order, with their sizes: every part but the last holds
  // part_size bytes (number_of_parts() > 1 only with one).
  absl::StatusOr<std::vector<BlobExtent>> PartsOf(const FileInfo& info) const {
    std::vector<BlobExtent> parts;
    const uint64_t count = info.number_of_parts();
    parts.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      RFS_ASSIGN_OR_RETURN(std::string path,
                           core::CheckedPath({folder_, info.PartName(i)}, description()));
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
    RFS_ASSIGN_OR_RETURN(const uint32_t actual, codec::VerifyFileFooter(file));
    if (actual != *expected) {
      return core::DataLossAt(file.name(), file.size() - 8,
                              StrCat("footer checksum ", actual,
                                     " differs from the snapshot's checksum ", info.checksum));
    }
    return absl::OkStatus();
  }

  std::shared_ptr<const ISourceRepo> repo_;
  std::string folder_;
  ShardFilesOptions options_;
};

}  // namespace

absl::StatusOr<std::shared_ptr<const core::IDirectory>> MakeShardDirectory(
    std::shared_ptr<const ISourceRepo> repo, std::string folder, ShardSnapshot shard,
    std::string description, ShardFilesOptions options) {
  return std::make_shared<ShardDirectory>(std::move(repo), std::move(folder), std::move(shard),
                                          std::move(description), options);
}

}  // namespace rfs::snapshot::internal
