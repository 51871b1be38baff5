// A compound segment (`<seg>.cfs` + `<seg>.cfe`, docs/formats.md C.4) viewed as an
// IDirectory of its sub-files.
//
// The entry table of the `.cfe` (Lucene50CompoundEntries, big-endian,
// Lucene90CompoundEntries, little-endian, or Lucene 4.x
// CompoundFileWriterEntries, big-endian) maps each sub-file's id (its name
// without the segment prefix, e.g. ".fdt") to a slice of the `.cfs`. Files
// opened from the view are zero-copy slices when the `.cfs` has a contiguous
// view (mmap or memory), else positional reads into the `.cfs`. Full names
// (`_0.fdt`) are used on both sides, as Lucene's CompoundDirectory does.
//
// Thread-safety: immutable after Open; every method may be called
// concurrently.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/core/random_access.hpp"

#include "absl/status/statusor.h"

namespace rfs::lucene {

class CompoundDirectory final : public core::IDirectory {
 public:
  struct Entry {
    uint64_t offset = 0;
    uint64_t length = 0;
  };

  /// Opens `<segment>.cfe`/`.cfs` in `dir`, checking headers against
  /// `segment_id`, the `.cfe` checksum and that every entry lies within the
  /// `.cfs` data area.
  static absl::StatusOr<std::shared_ptr<CompoundDirectory>> Open(
      std::shared_ptr<const core::IDirectory> dir, std::string_view segment,
      const std::array<uint8_t, 16>& segment_id);

  const std::string& description() const override { return description_; }
  std::vector<std::string> ListFiles() const override;
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenFile(
      std::string_view name) const override;

  /// Entries by full file name.
  const std::map<std::string, Entry, std::less<>>& entries() const { return entries_; }

 private:
  CompoundDirectory() = default;
  // Lucene 4.x `.cfe`/`.cfs` (CompoundFileWriterEntries/Data, no segment id).
  static absl::StatusOr<std::shared_ptr<CompoundDirectory>> OpenLucene4(
      std::shared_ptr<const core::IDirectory> dir, std::string_view segment,
      std::span<const uint8_t> cfe_bytes, const std::string& cfe_name, const std::string& cfs_name);
  std::string description_;
  std::shared_ptr<const core::IRandomAccessFile> cfs_;
  std::map<std::string, Entry, std::less<>> entries_;
};

}  // namespace rfs::lucene
