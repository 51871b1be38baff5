// Compound file reader (FORMATS.md C.4; Lucene50CompoundReader.java,
// Lucene90CompoundReader.java).
#include "rfs/lucene/compound.hpp"

#include <cstring>

#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/format_util_internal.hpp"

namespace rfs::lucene {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

namespace {

// A window [offset, offset + length) of another file, named as the sub-file.
class SliceFile final : public core::IRandomAccessFile {
 public:
  SliceFile(std::string name, std::shared_ptr<const core::IRandomAccessFile> base, uint64_t offset,
            uint64_t length)
      : name_(std::move(name)), base_(std::move(base)), offset_(offset), length_(length) {
    if (auto view = base_->ContiguousView(); view.has_value()) {
      view_ = view->subspan(offset_, length_);
      has_view_ = true;
    }
  }
  const std::string& name() const override { return name_; }
  uint64_t size() const override { return length_; }
  absl::Status ReadAt(uint64_t offset, std::span<uint8_t> out) const override {
    if (offset > length_ || out.size() > length_ - offset) {
      return core::DataLossAt(
          name_, offset,
          StrCat("read of ", out.size(), " bytes past the end (size ", length_, ")"));
    }
    if (has_view_) {
      if (!out.empty()) std::memcpy(out.data(), view_.data() + offset, out.size());
      return absl::OkStatus();
    }
    return base_->ReadAt(offset_ + offset, out);
  }
  std::optional<std::span<const uint8_t>> ContiguousView() const override {
    if (has_view_) return view_;
    return std::nullopt;
  }

 private:
  std::string name_;
  std::shared_ptr<const core::IRandomAccessFile> base_;
  uint64_t offset_;
  uint64_t length_;
  std::span<const uint8_t> view_;
  bool has_view_ = false;
};

constexpr std::string_view kEntriesNames[] = {"Lucene50CompoundEntries", "Lucene90CompoundEntries"};
constexpr std::string_view kDataNames[] = {"Lucene50CompoundData", "Lucene90CompoundData"};

}  // namespace

absl::StatusOr<std::shared_ptr<CompoundDirectory>> CompoundDirectory::Open(
    std::shared_ptr<const core::IDirectory> dir, std::string_view segment,
    const std::array<uint8_t, 16>& segment_id) {
  const std::string cfe_name = internal::SegmentFileName(segment, "", "cfe");
  const std::string cfs_name = internal::SegmentFileName(segment, "", "cfs");
  RFS_ASSIGN_OR_RETURN(internal::FileBytes cfe, internal::FileBytes::Open(*dir, cfe_name));
  ByteReader in = cfe.Reader();
  size_t which = 0;
  RFS_ASSIGN_OR_RETURN(
      core::IndexHeader header,
      internal::ReadFileHeader(in, {kEntriesNames, 0, 0}, &segment_id, "", true, &which));
  (void)header;
  const ByteOrder order = which == 0 ? ByteOrder::kBig : ByteOrder::kLittle;

  auto out = std::shared_ptr<CompoundDirectory>(new CompoundDirectory());
  out->description_ = StrCat(dir->description(), "/", cfs_name);
  auto cfs = dir->OpenFile(cfs_name);
  if (!cfs.ok()) return cfs.status();
  out->cfs_ = std::move(cfs).value();

  // The .cfs must carry the matching data header and a footer; its CRC is
  // not recomputed here (the sub-files carry their own).
  const uint64_t cfs_size = out->cfs_->size();
  const uint64_t header_len = 9 + kDataNames[which].size() + 16 + 1;
  RFS_ASSIGN_OR_RETURN(std::vector<uint8_t> head,
                       core::ReadRange(*out->cfs_, 0, std::min<uint64_t>(header_len, cfs_size)));
  {
    ByteReader head_in(head, cfs_name);
    RFS_RETURN_IF_ERROR(core::ReadIndexHeader(head_in, kDataNames[which], 0, 0).status());
    (void)head_in;
  }
  if (cfs_size < header_len + core::kFooterLength) {
    return core::DataLossAt(cfs_name, 0, "compound data file too short");
  }
  RFS_ASSIGN_OR_RETURN(
      std::vector<uint8_t> footer,
      core::ReadRange(*out->cfs_, cfs_size - core::kFooterLength, core::kFooterLength));
  {
    ByteReader fin(footer, cfs_name, cfs_size - core::kFooterLength);
    RFS_ASSIGN_OR_RETURN(uint32_t magic, fin.ReadBeU32());
    if (magic != core::kFooterMagic) {
      return fin.ErrorAt(0, "codec footer magic mismatch");
    }
  }
  const uint64_t data_end = cfs_size - core::kFooterLength;

  const size_t count_at = in.position();
  RFS_ASSIGN_OR_RETURN(uint32_t count, in.ReadVInt());
  if (static_cast<uint64_t>(count) * 17 > in.remaining()) {
    return in.ErrorAt(count_at, StrCat("invalid entry count ", count));
  }
  for (uint32_t i = 0; i < count; ++i) {
    const size_t at = in.position();
    RFS_ASSIGN_OR_RETURN(std::string_view id, in.ReadString());
    RFS_ASSIGN_OR_RETURN(uint64_t offset, in.ReadU64(order));
    RFS_ASSIGN_OR_RETURN(uint64_t length, in.ReadU64(order));
    if (offset < header_len || offset > data_end || length > data_end - offset) {
      return in.ErrorAt(at, StrCat("entry '", id, "' [", offset, ", +", length,
                                   ") lies outside the data of ", cfs_name));
    }
    std::string full = StrCat(segment, id);
    if (!out->entries_.emplace(full, Entry{offset, length}).second) {
      return in.ErrorAt(at, StrCat("duplicate entry '", id, "'"));
    }
  }
  if (in.remaining() != core::kFooterLength) {
    return in.Error("unexpected bytes before the footer");
  }
  return out;
}

std::vector<std::string> CompoundDirectory::ListFiles() const {
  std::vector<std::string> names;
  names.reserve(entries_.size());
  for (const auto& [name, entry] : entries_) names.push_back(name);
  return names;
}

absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> CompoundDirectory::OpenFile(
    std::string_view name) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) {
    return absl::NotFoundError(StrCat("no file '", name, "' in compound file ", description_));
  }
  return std::shared_ptr<const core::IRandomAccessFile>(
      std::make_shared<SliceFile>(std::string(name), cfs_, it->second.offset, it->second.length));
}

}  // namespace rfs::lucene
