#include <algorithm>

#include "rfs/core/base36.hpp"
#include "rfs/core/crc32.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "lucene/codecs/format_util_internal.hpp"

namespace rfs::lucene::internal {

using core::ByteOrder;
using core::ByteReader;
using core::StrCat;

// Generations are never negative; a non-positive one names no file suffix but "0".
std::string Base36(int64_t value) { return core::ToBase36(value > 0 ? value : 0); }

int64_t ParseBase36(std::string_view text) {
  const auto value = core::ParseBase36(text);
  return value ? static_cast<int64_t>(*value) : -1;
}

std::string SegmentFileName(std::string_view segment, std::string_view suffix,
                            std::string_view ext) {
  std::string out(segment);
  if (!suffix.empty()) out.append("_").append(suffix);
  if (!ext.empty()) out.append(".").append(ext);
  return out;
}

std::string FileNameFromGeneration(std::string_view base, std::string_view ext, int64_t gen) {
  if (gen <= 0) return StrCat(base, ext);
  return StrCat(base, "_", Base36(gen), ext);
}

absl::StatusOr<FileBytes> FileBytes::Read(std::shared_ptr<const core::IRandomAccessFile> file) {
  FileBytes out;
  if (auto view = file->ContiguousView(); view.has_value()) {
    out.view_ = *view;
  } else {
    RFS_ASSIGN_OR_RETURN(out.owned_, core::ReadRange(*file, 0, file->size()));
    out.view_ = out.owned_;
  }
  out.file_ = std::move(file);
  return out;
}

absl::StatusOr<FileBytes> FileBytes::Open(const core::IDirectory& dir, std::string_view name) {
  auto file = dir.OpenFile(name);
  if (!file.ok()) {
    return core::WithContext(file.status(), StrCat(dir.description()));
  }
  return Read(std::move(file).value());
}

absl::Status CheckCount(const ByteReader& in, int64_t count, size_t min_bytes_each,
                        std::string_view what) {
  if (count < 0 ||
      static_cast<uint64_t>(count) * std::max<size_t>(min_bytes_each, 1) > in.remaining()) {
    return in.Error(StrCat("invalid ", what, " count ", count));
  }
  return absl::OkStatus();
}

namespace {

absl::StatusOr<int64_t> ReadCount(ByteReader& in, ByteOrder order, bool int_count) {
  if (int_count) {
    RFS_ASSIGN_OR_RETURN(uint32_t raw, in.ReadU32(order));
    return static_cast<int32_t>(raw);
  }
  RFS_ASSIGN_OR_RETURN(uint32_t raw, in.ReadVInt());
  return static_cast<int32_t>(raw);
}

}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ReadStringMap(ByteReader& in,
                                                                 ByteOrder count_order,
                                                                 bool int_count) {
  RFS_ASSIGN_OR_RETURN(int64_t count, ReadCount(in, count_order, int_count));
  RFS_RETURN_IF_ERROR(CheckCount(in, count, 2, "map entry"));
  std::map<std::string, std::string> out;
  for (int64_t i = 0; i < count; ++i) {
    RFS_ASSIGN_OR_RETURN(std::string_view key, in.ReadString());
    RFS_ASSIGN_OR_RETURN(std::string_view value, in.ReadString());
    out.insert_or_assign(std::string(key), std::string(value));
  }
  return out;
}

absl::StatusOr<std::vector<std::string>> ReadStringSet(ByteReader& in, ByteOrder count_order,
                                                       bool int_count) {
  RFS_ASSIGN_OR_RETURN(int64_t count, ReadCount(in, count_order, int_count));
  RFS_RETURN_IF_ERROR(CheckCount(in, count, 1, "set entry"));
  std::vector<std::string> out;
  out.reserve(count);
  for (int64_t i = 0; i < count; ++i) {
    RFS_ASSIGN_OR_RETURN(std::string_view item, in.ReadString());
    out.emplace_back(item);
  }
  return out;
}

absl::StatusOr<codec::IndexHeader> ReadFileHeader(ByteReader& in, const HeaderSpec& spec,
                                                  const SegmentId* expected_id,
                                                  std::string_view expected_suffix, bool verify_crc,
                                                  size_t* which) {
  const size_t start = in.position();
  // Peek at the header without judging it, so the verdict can depend on
  // whether the name is known (docs/formats.md C.1: dispatch on codec names).
  ByteReader peek_in = in;
  auto peek = codec::ReadCodecHeader(peek_in, "", INT32_MIN, INT32_MAX);
  size_t index = spec.names.size();
  if (peek.ok()) {
    for (size_t i = 0; i < spec.names.size(); ++i) {
      if (peek->codec == spec.names[i]) index = i;
    }
    for (auto legacy : spec.legacy_names) {
      if (peek->codec == legacy) {
        return absl::UnimplementedError(StrCat(in.source(), ": unsupported codec '", peek->codec,
                                               "' version ", peek->version,
                                               " (an older Lucene format)"));
      }
    }
    if (index < spec.names.size() &&
        (peek->version < spec.min_version || peek->version > spec.max_version)) {
      return absl::UnimplementedError(StrCat(in.source(), ": unsupported version ", peek->version,
                                             " of codec '", peek->codec, "' (supported ",
                                             spec.min_version, "..", spec.max_version, ")"));
    }
  }
  if (verify_crc) {
    RFS_RETURN_IF_ERROR(codec::VerifyFooter(in.data(), in.source()).status());
  } else {
    RFS_RETURN_IF_ERROR(codec::ReadFooterChecksum(in.data(), in.source()).status());
  }
  if (!peek.ok()) return peek.status();
  if (index == spec.names.size()) {
    std::string expected;
    for (auto name : spec.names) {
      if (!expected.empty()) expected.append("|");
      expected.append(name);
    }
    return absl::UnimplementedError(StrCat(in.source(), ": unsupported codec '", peek->codec,
                                           "' version ", peek->version, " (expected ", expected,
                                           ")"));
  }
  RFS_ASSIGN_OR_RETURN(
      codec::IndexHeader header,
      codec::ReadIndexHeader(in, spec.names[index], spec.min_version, spec.max_version));
  if (expected_id != nullptr && header.id != *expected_id) {
    return in.ErrorAt(start, StrCat("segment id mismatch (file has ", HexId(header.id),
                                    ", expected ", HexId(*expected_id), ")"));
  }
  if (header.suffix != expected_suffix) {
    return in.ErrorAt(start, StrCat("header suffix mismatch (file has '", header.suffix,
                                    "', expected '", expected_suffix, "')"));
  }
  if (which != nullptr) *which = index;
  return header;
}

absl::StatusOr<uint32_t> ReadStoredChecksum(const core::IRandomAccessFile& file) {
  const uint64_t size = file.size();
  if (size < codec::kFooterLength) {
    return core::DataLossAt(file.name(), 0, "file too short for a codec footer");
  }
  if (const auto view = file.ContiguousView()) return codec::ReadFooterChecksum(*view, file.name());
  RFS_ASSIGN_OR_RETURN(std::vector<uint8_t> footer,
                       core::ReadRange(file, size - codec::kFooterLength, codec::kFooterLength));
  return codec::ReadFooterChecksum(footer, file.name());
}

absl::StatusOr<uint32_t> HashFileRange(const core::IRandomAccessFile& file, uint64_t from,
                                       uint64_t to, uint32_t crc) {
  // A step at a time: a mapped file's pages are dropped once hashed, so the pass does not leave
  // the whole file resident; other files are read a step at a time.
  constexpr uint64_t kStep = uint64_t{8} << 20;
  const auto view = file.ContiguousView();
  std::vector<uint8_t> buf;
  for (uint64_t at = from; at < to;) {
    const uint64_t n = std::min(to - at, kStep);
    if (view) {
      if (at + n > view->size()) return core::DataLossAt(file.name(), at, "hashed past the end");
      crc = core::Crc32(view->subspan(at, n), crc);
      file.DropCachedPages(at, n);
    } else {
      buf.resize(n);
      RFS_RETURN_IF_ERROR(file.ReadAt(at, buf));
      crc = core::Crc32(buf, crc);
    }
    at += n;
  }
  return crc;
}

absl::Status CompareChecksums(const core::IRandomAccessFile& file, uint32_t stored,
                              uint32_t computed) {
  if (computed == stored) return absl::OkStatus();
  return core::DataLossAt(
      file.name(), file.size() - 8,
      StrCat("checksum mismatch (stored ", stored, ", computed ", computed, ")"));
}

absl::Status VerifyFileChecksum(const core::IRandomAccessFile& file) {
  RFS_ASSIGN_OR_RETURN(const uint32_t stored, ReadStoredChecksum(file));
  // The CRC covers everything before its own field.
  RFS_ASSIGN_OR_RETURN(const uint32_t computed, HashFileRange(file, 0, file.size() - 8, 0));
  return CompareChecksums(file, stored, computed);
}

absl::Status VerifyChecksum(std::span<const uint8_t> bytes, std::string_view name) {
  return codec::VerifyFooter(bytes, name).status();
}

std::string HexId(const SegmentId& id) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  for (uint8_t b : id) {
    out.push_back(kDigits[b >> 4]);
    out.push_back(kDigits[b & 15]);
  }
  return out;
}

}  // namespace rfs::lucene::internal
