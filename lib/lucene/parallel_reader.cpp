#include "rfs/lucene/parallel_reader.hpp"

#include <algorithm>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace rfs::lucene {
namespace {

// One decoded document, owning its source.
struct OwnedDocument {
  Document meta;  // meta.source is unset; `source` holds the bytes
  std::string source;
};

// The documents of cursors [begin, end), or the error that stopped their decoding.
struct Range {
  uint64_t end = 0;
  std::vector<OwnedDocument> docs;
  absl::Status status;
  ReaderStats stats;
  size_t bytes = 0;
};

void Add(ReaderStats& into, const ReaderStats& delta) {
  into.docs_emitted += delta.docs_emitted;
  into.deleted_skipped += delta.deleted_skipped;
  into.nested_skipped += delta.nested_skipped;
  into.no_source_docs += delta.no_source_docs;
  into.source_bytes += delta.source_bytes;
}

ReaderStats Minus(const ReaderStats& a, const ReaderStats& b) {
  return ReaderStats{a.docs_emitted - b.docs_emitted, a.deleted_skipped - b.deleted_skipped,
                     a.nested_skipped - b.nested_skipped, a.no_source_docs - b.no_source_docs,
                     a.source_bytes - b.source_bytes};
}

}  // namespace

struct ParallelDocumentReader::Impl {
  const ShardReader& reader;
  const uint64_t start;
  const uint64_t max_cursor;
  const ParallelReadOptions options;

  std::mutex mu;
  std::condition_variable produced;  // a range is ready
  std::condition_variable consumed;  // the caller moved on (or stop)
  std::map<size_t, Range> ready;
  size_t next_range = 0;  // the range the caller takes documents from
  size_t buffered_bytes = 0;
  bool stopping = false;
  std::vector<std::thread> threads;

  // The caller's side.
  std::optional<Range> current;
  size_t current_index = 0;  // within current->docs
  uint64_t position = 0;
  ReaderStats stats;

  Impl(const ShardReader& r, uint64_t s, ParallelReadOptions o)
      : reader(r), start(s), max_cursor(r.max_cursor()), options(o), position(s) {}

  size_t range_count() const {
    if (start >= max_cursor) return 0;
    return static_cast<size_t>((max_cursor - start + options.range_docs - 1) / options.range_docs);
  }

  void Decode(size_t thread) {
    std::unique_ptr<DocumentCursor> cursor;
    Document doc;
    const size_t step = static_cast<size_t>(options.threads);
    for (size_t index = thread; index < range_count(); index += step) {
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
      Range range;
      range.end = std::min(max_cursor, begin + options.range_docs);
      if (!cursor) {
        auto opened = reader.OpenAt(begin);
        if (opened.ok()) {
          cursor = *std::move(opened);
        } else {
          range.status = opened.status();
        }
      } else {
        range.status = cursor->SeekTo(begin);
      }
      if (range.status.ok()) {
        const ReaderStats before = cursor->stats();
        bool stats_set = false;
        while (true) {
          auto more = cursor->Next(doc);
          if (!more.ok()) {
            range.status = more.status();
            break;
          }
          if (!*more) break;
          if (doc.cursor >= range.end) {
            // One document into the next range: not ours (the stats drop it too).
            ReaderStats past{1, 0, 0, doc.has_source ? 0u : 1u, doc.source.size()};
            range.stats = Minus(Minus(cursor->stats(), before), past);
            stats_set = true;
            break;
          }
          OwnedDocument& owned = range.docs.emplace_back();
          owned.source.assign(reinterpret_cast<const char*>(doc.source.data()), doc.source.size());
          owned.meta = doc;
          owned.meta.source = {};
          range.bytes += owned.source.size() + owned.meta.id.size() + 64;
        }
        if (!stats_set) range.stats = Minus(cursor->stats(), before);
      }
      const bool failed = !range.status.ok();
      {
        std::lock_guard lock(mu);
        buffered_bytes += range.bytes;
        ready.emplace(index, std::move(range));
      }
      produced.notify_all();
      if (failed) return;  // the caller stops at this range
    }
  }

  void Stop() {
    {
      std::lock_guard lock(mu);
      stopping = true;
    }
    consumed.notify_all();
    for (auto& thread : threads) {
      if (thread.joinable()) thread.join();
    }
  }
};

ParallelDocumentReader::ParallelDocumentReader(std::unique_ptr<Impl> impl)
    : impl_(std::move(impl)) {}

ParallelDocumentReader::~ParallelDocumentReader() { impl_->Stop(); }

absl::StatusOr<std::unique_ptr<ParallelDocumentReader>> ParallelDocumentReader::Open(
    const ShardReader& reader, uint64_t start, ParallelReadOptions options) {
  if (options.threads < 1 || options.threads > 256) {
    return absl::InvalidArgumentError("reader threads must be 1 to 256");
  }
  if (options.range_docs == 0 || options.max_ranges_ahead == 0) {
    return absl::InvalidArgumentError("range_docs and max_ranges_ahead must be positive");
  }
  options.max_ranges_ahead = std::max<size_t>(options.max_ranges_ahead, options.threads);
  auto impl = std::make_unique<Impl>(reader, std::min(start, reader.max_cursor()), options);
  Impl* raw = impl.get();
  for (int t = 0; t < options.threads; ++t) {
    raw->threads.emplace_back([raw, t] { raw->Decode(static_cast<size_t>(t)); });
  }
  return std::unique_ptr<ParallelDocumentReader>(new ParallelDocumentReader(std::move(impl)));
}

absl::StatusOr<bool> ParallelDocumentReader::Next(Document& doc) {
  Impl& s = *impl_;
  while (!s.current || s.current_index >= s.current->docs.size()) {
    if (s.current) {
      // The range is used up: every cursor before its end was returned or is not live.
      s.position = std::max(s.position, s.current->end);
      s.current.reset();
      {
        std::lock_guard lock(s.mu);
        ++s.next_range;
      }
      s.consumed.notify_all();
    }
    if (s.next_range >= s.range_count()) return false;
    std::unique_lock lock(s.mu);
    s.produced.wait(lock, [&] { return s.ready.contains(s.next_range); });
    auto node = s.ready.extract(s.next_range);
    s.buffered_bytes -= node.mapped().bytes;
    lock.unlock();
    s.consumed.notify_all();
    if (!node.mapped().status.ok()) {
      absl::Status status = node.mapped().status;
      s.next_range = s.range_count();  // the stream ends at the error
      return status;
    }
    Add(s.stats, node.mapped().stats);
    s.current = std::move(node.mapped());
    s.current_index = 0;
  }
  OwnedDocument& next = s.current->docs[s.current_index++];
  std::string source = std::move(next.source);
  doc = std::move(next.meta);
  // The source stays valid until the next call: keep it in the document slot just taken.
  next.source = std::move(source);
  doc.source = std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(next.source.data()),
                                        next.source.size());
  s.position = doc.cursor + 1;
  return true;
}

uint64_t ParallelDocumentReader::position() const { return impl_->position; }

const ReaderStats& ParallelDocumentReader::stats() const { return impl_->stats; }

}  // namespace rfs::lucene
