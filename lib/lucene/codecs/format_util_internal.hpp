// Small helpers shared by the Lucene file readers: file naming with
// generations (docs/formats.md C.5), Lucene Map/Set encodings (0.1), whole-file
// access over IRandomAccessFile, and index-header checks (C.1).
//
// Internal to rfs::lucene (never installed). Stateless functions; thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/codec/codec_util.hpp"
#include "rfs/core/byte_reader.hpp"
#include "rfs/core/random_access.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::lucene::internal {

using SegmentId = std::array<uint8_t, 16>;

/// Java Long.toString(value, 36) for non-negative values (generation
/// suffixes, docs/formats.md 0.1).
std::string Base36(int64_t value);

/// Parses a base36 generation; -1 when `text` is not a valid one.
int64_t ParseBase36(std::string_view text);

/// IndexFileNames.segmentFileName: seg + ("_" + suffix if any) + "." + ext.
std::string SegmentFileName(std::string_view segment, std::string_view suffix,
                            std::string_view ext);

/// IndexFileNames.fileNameFromGeneration: base + "_" + gen36 + ext, or
/// base + ext when gen is 0 or -1 (only gen > 0 gets a suffix).
std::string FileNameFromGeneration(std::string_view base, std::string_view ext, int64_t gen);

/// A whole file's bytes: a view of a mapped/in-memory file, or an owned copy
/// when the file has no contiguous view.
class FileBytes {
 public:
  static absl::StatusOr<FileBytes> Read(std::shared_ptr<const core::IRandomAccessFile> file);
  static absl::StatusOr<FileBytes> Open(const core::IDirectory& dir, std::string_view name);

  std::span<const uint8_t> bytes() const { return view_; }
  const std::string& name() const { return file_->name(); }
  const core::IRandomAccessFile& file() const { return *file_; }
  core::ByteReader Reader() const { return core::ByteReader(view_, name()); }

 private:
  std::shared_ptr<const core::IRandomAccessFile> file_;
  std::vector<uint8_t> owned_;
  std::span<const uint8_t> view_;
};

/// Lucene 6+ Map<String,String> (VInt count) or, with `int_count`, the
/// pre-6 "unsafe" form with a BE/LE i32 count.
absl::StatusOr<std::map<std::string, std::string>> ReadStringMap(core::ByteReader& in,
                                                                 core::ByteOrder count_order,
                                                                 bool int_count);
absl::StatusOr<std::vector<std::string>> ReadStringSet(core::ByteReader& in,
                                                       core::ByteOrder count_order, bool int_count);

/// What a file's index header may say: accepted codec names with a version
/// range, and names of older formats rfs knows of but does not read.
struct HeaderSpec {
  std::span<const std::string_view> names;
  int32_t min_version = 0;
  int32_t max_version = 0;
  std::span<const std::string_view> legacy_names = {};
};

/// Checks a whole small file and reads its index header at the cursor:
///  * a known name with a version out of range, or a legacy name, is
///    Unimplemented naming the file, codec and version;
///  * then the footer (and, with `verify_crc`, the CRC of the whole file) is
///    checked: DataLoss on mismatch;
///  * an unknown codec name in an intact file is Unimplemented;
///  * the header id must equal `expected_id` (when given) and the suffix
///    `expected_suffix`, else DataLoss.
/// `*which` receives the index of the matched name in `spec.names`.
absl::StatusOr<codec::IndexHeader> ReadFileHeader(core::ByteReader& in, const HeaderSpec& spec,
                                                  const SegmentId* expected_id,
                                                  std::string_view expected_suffix, bool verify_crc,
                                                  size_t* which = nullptr);

/// Verifies the footer and CRC-32 of a whole file, reading it in pieces when
/// it has no contiguous view.
absl::Status VerifyFileChecksum(const core::IRandomAccessFile& file);

/// The pieces of VerifyFileChecksum, for files hashed in parts: the checksum
/// the footer stores (its structure checked); `crc` continued over
/// [from, to) of `file`; DataLoss naming the file unless the two agree.
absl::StatusOr<uint32_t> ReadStoredChecksum(const core::IRandomAccessFile& file);
absl::StatusOr<uint32_t> HashFileRange(const core::IRandomAccessFile& file, uint64_t from,
                                       uint64_t to, uint32_t crc);
absl::Status CompareChecksums(const core::IRandomAccessFile& file, uint32_t stored,
                              uint32_t computed);

/// Verifies the footer and CRC of a whole file (docs/formats.md C.1).
absl::Status VerifyChecksum(std::span<const uint8_t> bytes, std::string_view name);

/// Rejects a signed 32-bit count that is negative or larger than the bytes
/// left could possibly hold (at `min_bytes_each` bytes per element).
absl::Status CheckCount(const core::ByteReader& in, int64_t count, size_t min_bytes_each,
                        std::string_view what);

std::string HexId(const SegmentId& id);

}  // namespace rfs::lucene::internal
