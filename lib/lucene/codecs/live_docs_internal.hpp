// Which documents of a segment are live: hard deletes from `.liv`
// (docs/formats.md C.9; Lucene50LiveDocs big-endian, Lucene90LiveDocs
// little-endian) or, for Lucene 4.x segments, `.del` (Lucene40LiveDocs
// BitVector) combined with soft deletes, i.e. documents that have a value
// in the soft-deletes doc-values field (C.10-C.12; Lucene70/80/90 doc values,
// including generation files written by doc-values updates).
//
// A document is live iff its `.liv` bit is set (or the segment has no
// `.liv`) AND it has no value in the soft-deletes field. ReadHardLiveDocs and
// ReadLiveDocs (dispatch_internal.hpp) read a segment of either kind.
//
// LiveDocs is a plain value (a bit set); thread-safe to share once built.
#pragma once

#include <cstdint>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "absl/status/statusor.h"
#include "lucene/codecs/field_infos_internal.hpp"

namespace rfs::lucene {

class LiveDocs {
 public:
  LiveDocs() = default;
  /// Every one of `max_doc` documents live.
  static LiveDocs AllLive(int32_t max_doc);
  /// From Lucene's bit words (bit d & 63 of word d >> 6; 1 = live).
  static LiveDocs FromWords(int32_t max_doc, std::vector<uint64_t> words);

  int32_t max_doc() const { return max_doc_; }
  bool IsLive(int32_t doc) const {
    return (words_[static_cast<uint32_t>(doc) >> 6] >> (doc & 63)) & 1;
  }
  void Delete(int32_t doc) {
    words_[static_cast<uint32_t>(doc) >> 6] &= ~(uint64_t{1} << (doc & 63));
  }
  int32_t CountLive() const;
  const std::vector<uint64_t>& words() const { return words_; }

 private:
  int32_t max_doc_ = 0;
  std::vector<uint64_t> words_;
};

namespace internal {

/// Hard deletes only of a Lucene 5.0+ segment with deletions (del_gen != -1): its `.liv` (from
/// `index_dir`; never inside a compound file). Checks that the number of deleted docs equals
/// del_count.
absl::StatusOr<LiveDocs> ReadModernLiveDocs(const core::IDirectory& index_dir,
                                            const SegmentCommitInfo& segment);

}  // namespace internal

/// Clears the bits of documents that have a value in the soft-deletes field
/// (the field flagged 0x08 in `fields`, else one named "__soft_deletes" with
/// NUMERIC doc values). No-op when the segment has no such field.
absl::Status ApplySoftDeletes(const core::IDirectory& index_dir,
                              const core::IDirectory& segment_dir, const SegmentCommitInfo& segment,
                              const FieldInfos& fields, LiveDocs& live);

}  // namespace rfs::lucene
