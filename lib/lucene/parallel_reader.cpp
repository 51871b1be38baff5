#include "rfs/lucene/parallel_reader.hpp"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "rfs/core/crc32.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/memory_pages.hpp"
#include "rfs/core/status_macros.hpp"

#include "lucene/codecs/format_util_internal.hpp"

namespace rfs::lucene {
namespace {

// Verifies the `.fdt` of each segment the scan reads whole from the chunks its threads decode,
// so the file is read once, not once to hash and again to decode. Each chunk's CRC is computed
// on the decoding thread while its bytes are in cache; Finish combines them in file order with
// the bytes no thread decoded (the header, chunks skipped for holding only deleted documents, the
// tail) and compares the result with the footer.
class ChunkChecksums final : public IStoredFieldsVerifier {
 public:
  explicit ChunkChecksums(std::vector<bool> covered)
      : covered_(std::move(covered)), files_(covered_.size()) {}

  bool Covers(size_t segment) const override {
    return segment < covered_.size() && covered_[segment];
  }

  void OnChunk(size_t segment, const std::shared_ptr<const core::IRandomAccessFile>& file,
               uint64_t offset, std::span<const uint8_t> bytes) override {
    {
      // Two threads may decode the same chunk (ranges meet inside it): the first piece stays,
      // and the second is not hashed.
      std::lock_guard lock(mu_);
      if (files_[segment].pieces.contains(offset)) return;
    }
    const uint32_t crc = core::Crc32(bytes);
    std::lock_guard lock(mu_);
    File& f = files_[segment];
    if (!f.file) f.file = file;
    f.pieces.emplace(offset, Piece{offset + bytes.size(), crc});
  }

  /// The verdict on segment `segment` once every document of it has been decoded.
  absl::Status Finish(size_t segment) {
    if (!Covers(segment)) return absl::OkStatus();
    File f;
    {
      std::lock_guard lock(mu_);
      f = std::move(files_[segment]);
      files_[segment] = File();
    }
    if (!f.file) return absl::OkStatus();  // no chunk was decoded: nothing of the file was used
    const core::IRandomAccessFile& file = *f.file;
    RFS_ASSIGN_OR_RETURN(const uint32_t stored, internal::ReadStoredChecksum(file));
    const uint64_t end = file.size() - 8;  // the CRC covers everything before its field
    uint32_t crc = 0;
    uint64_t at = 0;
    for (const auto& [begin, piece] : f.pieces) {
      if (piece.end > end) {
        return core::DataLossAt(file.name(), begin, "a chunk runs into the footer's checksum");
      }
      if (begin < at) {
        // Overlapping chunk boundaries (only damaged bytes make decoders disagree): the rest of
        // this piece is hashed from the file.
        const uint64_t to = std::max(at, piece.end);
        RFS_ASSIGN_OR_RETURN(crc, internal::HashFileRange(file, at, to, crc));
        at = to;
        continue;
      }
      RFS_ASSIGN_OR_RETURN(crc, internal::HashFileRange(file, at, begin, crc));
      crc = core::Crc32Combine(crc, piece.crc, piece.end - begin);
      at = piece.end;
    }
    RFS_ASSIGN_OR_RETURN(crc, internal::HashFileRange(file, at, end, crc));
    return internal::CompareChecksums(file, stored, crc);
  }

 private:
  struct Piece {
    uint64_t end;
    uint32_t crc;
  };
  struct File {
    std::shared_ptr<const core::IRandomAccessFile> file;
    std::map<uint64_t, Piece> pieces;  // by offset
  };
  const std::vector<bool> covered_;
  std::mutex mu_;
  std::vector<File> files_;  // by segment
};

// The segments that lie whole in [start, end).
std::vector<bool> WholeSegments(const ShardReader& reader, uint64_t start, uint64_t end) {
  std::vector<bool> whole(reader.segments().size());
  for (size_t i = 0; i < whole.size(); ++i) {
    whole[i] = reader.segment_base(i) >= start && reader.segment_base(i + 1) <= end;
  }
  return whole;
}

void Add(ReaderStats& into, const ReaderStats& delta) {
  into.docs_emitted += delta.docs_emitted;
  into.deleted_skipped += delta.deleted_skipped;
  into.nested_skipped += delta.nested_skipped;
  into.no_source_docs += delta.no_source_docs;
  into.rebuilt_docs += delta.rebuilt_docs;
  into.source_bytes += delta.source_bytes;
}

ReaderStats Minus(const ReaderStats& a, const ReaderStats& b) {
  ReaderStats out;
  out.docs_emitted = a.docs_emitted - b.docs_emitted;
  out.deleted_skipped = a.deleted_skipped - b.deleted_skipped;
  out.nested_skipped = a.nested_skipped - b.nested_skipped;
  out.no_source_docs = a.no_source_docs - b.no_source_docs;
  out.rebuilt_docs = a.rebuilt_docs - b.rebuilt_docs;
  out.source_bytes = a.source_bytes - b.source_bytes;
  return out;
}

// A decoded range, or the error that stopped its decoding.
struct Slot {
  std::unique_ptr<ScannedRange> range;
  absl::Status status;
  bool last = true;  // the range's last part
};

}  // namespace

struct ParallelShardScan::Impl {
  const ShardReader& reader;
  const uint64_t start;
  const uint64_t max_cursor;
  const ParallelReadOptions options;
  const NewRange new_range;
  const OnDocument on_document;
  const OnRangeDone on_range_done;

  std::mutex mu;
  std::condition_variable produced;                 // a range is ready
  std::condition_variable consumed;                 // the caller moved on (or stop)
  std::map<std::pair<size_t, size_t>, Slot> ready;  // by (range, part)
  size_t next_range = 0;                            // the range the caller takes next
  size_t next_part = 0;                             // and its part
  bool caller_waiting = false;                      // for that part, in Next
  size_t buffered_bytes = 0;
  bool stopping = false;
  std::atomic<bool> stop_requested{false};  // `stopping`, for waits outside `mu`
  std::vector<std::thread> threads;
  ReaderStats stats;  // the caller's side
  ChunkChecksums checksums;
  size_t next_to_verify = 0;  // the first segment whose verdict the caller has not had

  Impl(const ShardReader& r, uint64_t s, ParallelReadOptions o, NewRange n, OnDocument d,
       OnRangeDone done)
      : reader(r),
        start(s),
        max_cursor(std::min(r.max_cursor(), o.end_cursor)),
        options(o),
        new_range(std::move(n)),
        on_document(std::move(d)),
        on_range_done(std::move(done)),
        checksums(WholeSegments(r, s, max_cursor)) {}

  size_t range_count() const {
    if (start >= max_cursor) return 0;
    return static_cast<size_t>((max_cursor - start + options.range_docs - 1) / options.range_docs);
  }

  // Fills `range` with the documents of [begin, range.end) through `cursor`.
  // Before a huge chunk of range `index` is decompressed: wait until the caller waits for that
  // range (decoded ahead, the document would sit beside the one the caller holds), then for room
  // in the budget for the chunk and the caller's copy of its document.
  absl::StatusOr<core::MemoryBudget::LargeDocumentHold> AdmitLargeChunk(size_t index, size_t part,
                                                                        size_t decoded_bytes) {
    const size_t need = 2 * decoded_bytes;  // the chunk and the caller's copy of its document
    {
      std::unique_lock lock(mu);
      // Also every earlier part of the range taken: a huge document never sits decoded beside
      // another in the read-ahead. A chunk too large for the budget (it goes alone) also waits
      // for the caller to ask for its part. A reindexer submits a batch once a document fills it
      // (DocumentReindexer, with unique cursors and a batch limit), so by then a huge document
      // before this one is in a bulk that charges the budget, and the wait below counts it.
      // Admitted as soon as the part before was taken, this chunk could be decoded while the
      // caller still laid that document out uncharged (its bulk waiting for the ones in flight):
      // 100 MB more in a run of huge documents. Smaller chunks keep decoding ahead.
      const bool alone = options.memory_budget != nullptr && options.memory_budget->limit() != 0 &&
                         need > options.memory_budget->limit();
      consumed.wait(lock, [&] {
        return stopping || (index == next_range && next_part == part && (caller_waiting || !alone));
      });
      if (stopping) return absl::CancelledError("the parallel scan stopped");
    }
    if (options.memory_budget != nullptr && !options.memory_budget->WaitForRoom(need, [this] {
          return stop_requested.load(std::memory_order_relaxed);
        })) {
      return absl::CancelledError("the parallel scan stopped");
    }
    if (options.memory_budget == nullptr) return nullptr;
    return options.memory_budget->HoldLargeDocument();
  }

  // Hands out `range` as part `part` of range `index`, not its last; then waits while the
  // read-ahead is full, unless the caller has taken every part before it.
  void PublishPart(size_t index, size_t part, std::unique_ptr<ScannedRange> range) {
    {
      std::unique_lock lock(mu);
      buffered_bytes += range->bytes;
      ready.emplace(std::pair(index, part), Slot{std::move(range), absl::OkStatus(), false});
    }
    produced.notify_all();
    std::unique_lock lock(mu);
    consumed.wait(lock, [&] {
      return stopping || buffered_bytes < options.max_buffered_bytes ||
             (index == next_range && next_part == part + 1);
    });
  }

  absl::Status OpenCursor(std::unique_ptr<DocumentCursor>& cursor, uint64_t at, const size_t& index,
                          const size_t& part, bool& had_large_chunk) {
    auto opened = reader.OpenAt(at);
    if (!opened.ok()) return opened.status();
    cursor = *std::move(opened);
    cursor->set_stored_fields_verifier(&checksums);
    cursor->set_large_chunk_gate([this, &index, &part, &had_large_chunk](size_t decoded_bytes) {
      had_large_chunk = true;
      return AdmitLargeChunk(index, part, decoded_bytes);
    });
    return absl::OkStatus();
  }

  // Fills `range` with the documents of [begin, range.end) through `cursor`; once the documents
  // of a part reach max_range_bytes, the part is handed out and a new one started (`part`).
  absl::Status DecodeRange(std::unique_ptr<DocumentCursor>& cursor, uint64_t begin,
                           std::unique_ptr<ScannedRange>& range, Document& doc, const size_t& index,
                           size_t& part, bool& had_large_chunk) {
    if (!cursor) {
      RFS_RETURN_IF_ERROR(OpenCursor(cursor, begin, index, part, had_large_chunk));
    } else if (absl::Status s = cursor->SeekTo(begin); !s.ok()) {
      return s;
    }
    ReaderStats before = cursor->stats();
    const uint64_t end = range->end;
    while (true) {
      // At the range's end already: the next document (maybe a huge one) is not decoded here.
      if (cursor->position() >= end) break;
      auto more = cursor->Next(doc);
      if (!more.ok()) return more.status();
      if (!*more) break;
      if (doc.cursor >= end) {
        // One document into the next range: not ours (the stats drop it too).
        ReaderStats past;
        past.docs_emitted = 1;
        past.no_source_docs = doc.has_source && !doc.rebuilt ? 0 : 1;
        past.rebuilt_docs = doc.rebuilt ? 1 : 0;
        past.source_bytes = doc.source.size();
        range->stats = Minus(Minus(cursor->stats(), before), past);
        return absl::OkStatus();
      }
      if (absl::Status s = on_document(doc, *range); !s.ok()) return s;
      if (range->bytes >= options.max_range_bytes && doc.cursor + 1 < end) {
        range->stats = Minus(cursor->stats(), before);
        before = cursor->stats();
        const uint64_t next = doc.cursor + 1;
        range->end = next;
        if (on_range_done) on_range_done(*range);  // a part keeps the thread's cursor
        PublishPart(index, part++, std::move(range));
        range = new_range();
        range->end = end;
        if (stop_requested.load(std::memory_order_relaxed)) {
          return absl::CancelledError("the parallel scan stopped");
        }
        if (had_large_chunk) {
          // Its buffers are as large as the huge document: not kept for the rest of the range.
          cursor.reset();
          doc = Document();
          had_large_chunk = false;
          RFS_RETURN_IF_ERROR(OpenCursor(cursor, next, index, part, had_large_chunk));
          before = cursor->stats();
        }
      }
    }
    range->stats = Minus(cursor->stats(), before);
    return absl::OkStatus();
  }

  void Decode(size_t thread) {
    std::unique_ptr<DocumentCursor> cursor;
    Document doc;
    const size_t step = static_cast<size_t>(options.threads);
    size_t index = thread;  // the cursor's gate reads it
    size_t part = 0;        // so does it
    bool had_large_chunk = false;
    for (; index < range_count(); index += step) {
      {
        std::unique_lock lock(mu);
        // Stay within the window, except for the range the caller is waiting for.
        consumed.wait(lock, [&] {
          return stopping || index == next_range ||
                 (index < next_range + options.max_ranges_ahead &&
                  buffered_bytes < options.max_buffered_bytes);
        });
        if (stopping) return;
      }
      const uint64_t begin = start + index * options.range_docs;
      Slot slot;
      slot.range = new_range();
      slot.range->end = std::min(max_cursor, begin + options.range_docs);
      part = 0;
      slot.status = DecodeRange(cursor, begin, slot.range, doc, index, part, had_large_chunk);
      if (slot.status.ok() && on_range_done && on_range_done(*slot.range)) cursor.reset();
      if (had_large_chunk) {
        // Its buffers are as large as the huge document: not kept while the next range waits.
        cursor.reset();
        doc = Document();
        had_large_chunk = false;
      }
      const bool failed = !slot.status.ok();
      {
        std::lock_guard lock(mu);
        buffered_bytes += slot.range->bytes;
        ready.emplace(std::pair(index, part), std::move(slot));
      }
      produced.notify_all();
      if (failed) return;  // the caller stops at this range
    }
  }

  // The verdicts on the segments that end at or before `end`, every document before which has
  // been decoded: a damaged file fails the scan before the range holding its last documents is
  // handed out.
  absl::Status VerifySegmentsBefore(uint64_t end) {
    const size_t segments = reader.segments().size();
    while (next_to_verify < segments && reader.segment_base(next_to_verify + 1) <= end) {
      RFS_RETURN_IF_ERROR(checksums.Finish(next_to_verify));
      ++next_to_verify;
    }
    return absl::OkStatus();
  }

  void Stop() {
    {
      std::lock_guard lock(mu);
      stopping = true;
      stop_requested = true;
    }
    consumed.notify_all();
    for (auto& thread : threads) {
      if (thread.joinable()) thread.join();
    }
  }
};

ParallelShardScan::ParallelShardScan(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

ParallelShardScan::~ParallelShardScan() { impl_->Stop(); }

absl::StatusOr<std::unique_ptr<ParallelShardScan>> ParallelShardScan::Open(
    const ShardReader& reader, uint64_t start, ParallelReadOptions options, NewRange new_range,
    OnDocument on_document, OnRangeDone on_range_done) {
  if (options.threads < 1 || options.threads > 256) {
    return absl::InvalidArgumentError("reader threads must be 1 to 256");
  }
  if (options.range_docs == 0 || options.max_ranges_ahead == 0) {
    return absl::InvalidArgumentError("range_docs and max_ranges_ahead must be positive");
  }
  if (!new_range || !on_document) {
    return absl::InvalidArgumentError("a parallel scan needs new_range and on_document");
  }
  options.max_ranges_ahead = std::max<size_t>(options.max_ranges_ahead, options.threads);
  auto impl = std::make_unique<Impl>(
      reader, std::min({start, reader.max_cursor(), options.end_cursor}), options,
      std::move(new_range), std::move(on_document), std::move(on_range_done));
  Impl* raw = impl.get();
  for (int t = 0; t < options.threads; ++t) {
    raw->threads.emplace_back([raw, t] { raw->Decode(static_cast<size_t>(t)); });
  }
  return std::unique_ptr<ParallelShardScan>(new ParallelShardScan(std::move(impl)));
}

absl::StatusOr<std::unique_ptr<ScannedRange>> ParallelShardScan::Next() {
  Impl& s = *impl_;
  if (s.next_range >= s.range_count()) return std::unique_ptr<ScannedRange>();
  std::unique_lock lock(s.mu);
  const std::pair key(s.next_range, s.next_part);
  if (!s.ready.contains(key)) {
    s.caller_waiting = true;
    s.consumed.notify_all();  // a huge chunk of this part waits for it (AdmitLargeChunk)
    s.produced.wait(lock, [&] { return s.ready.contains(key); });
    s.caller_waiting = false;
  }
  auto node = s.ready.extract(key);
  s.buffered_bytes -= node.mapped().range->bytes;
  if (node.mapped().last) {
    ++s.next_range;
    s.next_part = 0;
  } else {
    ++s.next_part;
  }
  lock.unlock();
  s.consumed.notify_all();
  if (node.mapped().status.ok())
    node.mapped().status = s.VerifySegmentsBefore(node.mapped().range->end);
  if (!node.mapped().status.ok()) {
    std::lock_guard ended(s.mu);     // decoding threads read next_range under mu
    s.next_range = s.range_count();  // the scan ends at the error
    return node.mapped().status;
  }
  Add(s.stats, node.mapped().range->stats);
  return std::move(node.mapped().range);
}

const ReaderStats& ParallelShardScan::stats() const { return impl_->stats; }

namespace {

// One decoded document, owning its source.
struct OwnedDocument {
  Document meta;  // meta.source is unset; `source` holds the bytes
  std::string source;
};

struct OwnedRange final : ScannedRange {
  std::vector<OwnedDocument> docs;
};

}  // namespace

struct ParallelDocumentReader::Impl {
  std::unique_ptr<ParallelShardScan> scan;
  std::unique_ptr<ScannedRange> current;
  size_t current_index = 0;  // within current's docs
  uint64_t position = 0;
};

ParallelDocumentReader::ParallelDocumentReader(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

ParallelDocumentReader::~ParallelDocumentReader() = default;

absl::StatusOr<std::unique_ptr<ParallelDocumentReader>> ParallelDocumentReader::Open(
    const ShardReader& reader, uint64_t start, ParallelReadOptions options) {
  auto impl = std::make_unique<Impl>();
  impl->position = std::min(start, reader.max_cursor());
  auto scan = ParallelShardScan::Open(
      reader, start, options, [] { return std::make_unique<OwnedRange>(); },
      [](Document& doc, ScannedRange& range) {
        auto& owned_range = static_cast<OwnedRange&>(range);
        OwnedDocument& owned = owned_range.docs.emplace_back();
        // Copied here, on the thread that decoded the chunk, while it is still in cache (a huge
        // document's pages given back as they are copied).
        const std::string_view source(reinterpret_cast<const char*>(doc.source.data()),
                                      doc.source.size());
        if (doc.source_releasable) {
          owned.source.reserve(source.size());
          constexpr size_t kStep = size_t{8} << 20;
          for (size_t at = 0; at < source.size(); at += kStep) {
            owned.source.append(source.substr(at, kStep));
            core::ReleasePages(source.data() + at, std::min(kStep, source.size() - at));
          }
        } else {
          owned.source.assign(source);
        }
        owned.meta = std::move(doc);
        owned.meta.source = {};
        owned.meta.source_releasable = false;
        range.bytes += owned.source.size() + owned.meta.id.size() + 64;
        return absl::OkStatus();
      });
  if (!scan.ok()) return scan.status();
  impl->scan = *std::move(scan);
  return std::unique_ptr<ParallelDocumentReader>(new ParallelDocumentReader(std::move(impl)));
}

absl::StatusOr<bool> ParallelDocumentReader::Next(Document& doc) {
  Impl& s = *impl_;
  while (!s.current || s.current_index >= static_cast<OwnedRange&>(*s.current).docs.size()) {
    if (s.current) {
      // The range is used up: every cursor before its end was returned or is not live.
      s.position = std::max(s.position, s.current->end);
      s.current.reset();
    }
    auto next = s.scan->Next();
    if (!next.ok()) return next.status();
    if (*next == nullptr) return false;
    s.current = *std::move(next);
    s.current_index = 0;
  }
  OwnedDocument& next = static_cast<OwnedRange&>(*s.current).docs[s.current_index++];
  doc = std::move(next.meta);
  // The source stays in the range's slot, valid until the next call.
  doc.source = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(next.source.data()),
                                        next.source.size());
  s.position = doc.cursor + 1;
  return true;
}

uint64_t ParallelDocumentReader::position() const { return impl_->position; }

const ReaderStats& ParallelDocumentReader::stats() const { return impl_->scan->stats(); }

}  // namespace rfs::lucene
