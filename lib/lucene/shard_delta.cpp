#include "rfs/lucene/shard_delta.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <functional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

namespace rfs::lucene {

using core::StrCat;

std::optional<DeltaMode> ParseDeltaMode(std::string_view text) {
  std::string name;
  for (char c : text) name.push_back(c == '-' ? '_' : static_cast<char>(std::toupper(c)));
  if (name == "UPDATES_ONLY") return DeltaMode::kUpdatesOnly;
  if (name == "UPDATES_AND_DELETES") return DeltaMode::kUpdatesAndDeletes;
  if (name == "DELETES_ONLY") return DeltaMode::kDeletesOnly;
  return std::nullopt;
}

std::string_view DeltaModeName(DeltaMode mode) {
  switch (mode) {
    case DeltaMode::kUpdatesOnly:
      return "UPDATES_ONLY";
    case DeltaMode::kUpdatesAndDeletes:
      return "UPDATES_AND_DELETES";
    case DeltaMode::kDeletesOnly:
      return "DELETES_ONLY";
  }
  return "UPDATES_AND_DELETES";
}

namespace {

// A document of the older snapshot that may be gone or changed: where a delete goes, and what
// its source was.
struct PreviousDoc {
  std::optional<std::string> type;
  std::string id;
  std::optional<std::string> routing;
  size_t source_hash = 0;
};

// Ids are unique per mapping type (Elasticsearch 5 multi-type indices).
std::string Key(const Document& doc) {
  return doc.type ? StrCat(*doc.type, std::string_view("\0", 1), doc.id) : doc.id;
}

size_t SourceHash(const Document& doc) {
  const std::string_view bytes(reinterpret_cast<const char*>(doc.source.data()), doc.source.size());
  return std::hash<std::string_view>{}(bytes) ^ (doc.has_source ? 0x9e3779b97f4a7c15ULL : 0);
}

// The same segment in both commits: Lucene never rewrites one, so name, id and size say it.
bool SameSegment(const SegmentCommitInfo& a, const SegmentCommitInfo& b) {
  return a.name == b.name && a.id == b.id && a.max_doc() == b.max_doc();
}

}  // namespace

struct ShardDeltaReader::Impl {
  std::unique_ptr<ShardReader> previous, current;
  // A reshaped index (DeltaPrevious::reshaped): every older shard, read whole.
  std::vector<std::unique_ptr<ShardReader>> reshaped;
  bool delete_gone = true;
  std::vector<std::unique_ptr<ShardReader>> other_current;
  DeltaMode mode = DeltaMode::kUpdatesAndDeletes;
  std::vector<int> shared_in_previous;  // by current segment: previous segment index or -1
  std::vector<int> shared_in_current;   // by previous segment
  // By previous segment shared with the current commit: docs live before and deleted since.
  std::vector<std::vector<bool>> newly_deleted;
  // By current segment shared with the previous commit: docs deleted before and live now (only
  // when the "previous" snapshot is the newer one: a delta back in time).
  std::vector<std::vector<bool>> revived;
  std::unordered_map<std::string, PreviousDoc> previous_docs;
  std::unordered_set<std::string> current_ids;
  std::unique_ptr<DocumentCursor> cursor;
  bool index_phase_done = false;
  std::vector<const PreviousDoc*> deletes;  // sorted by key, once the index phase is done
  // A document whose routing changed: returned after the delete of its old copy (its source
  // stays valid: the cursor is not moved meanwhile).
  std::optional<Document> held;
  size_t next_delete = 0;
  ShardDeltaStats stats;

  absl::Status MatchSegments() {
    const auto& now = current->segments();
    shared_in_previous.assign(now.size(), -1);
    revived.assign(now.size(), {});
    if (previous == nullptr) {
      stats.segments_current = now.size();
      return absl::OkStatus();
    }
    const auto& before = previous->segments();
    shared_in_current.assign(before.size(), -1);
    newly_deleted.assign(before.size(), {});
    for (size_t i = 0; i < now.size(); ++i) {
      for (size_t j = 0; j < before.size(); ++j) {
        if (!SameSegment(now[i], before[j])) continue;
        shared_in_previous[i] = static_cast<int>(j);
        shared_in_current[j] = static_cast<int>(i);
        RFS_ASSIGN_OR_RETURN(auto live_before, previous->LiveDocsOf(j));
        RFS_ASSIGN_OR_RETURN(auto live_now, current->LiveDocsOf(i));
        auto& gone = newly_deleted[j];
        gone.assign(live_before.size(), false);
        for (size_t d = 0; d < live_before.size(); ++d) gone[d] = live_before[d] && !live_now[d];
        auto& back = revived[i];
        back.assign(live_now.size(), false);
        bool any = false;
        for (size_t d = 0; d < live_now.size(); ++d) {
          back[d] = live_now[d] && !live_before[d];
          any = any || back[d];
        }
        if (!any) back.clear();
        break;
      }
    }
    for (size_t i = 0; i < now.size(); ++i) {
      if (shared_in_previous[i] >= 0) {
        ++stats.segments_shared;
      } else {
        ++stats.segments_current;
      }
    }
    for (size_t j = 0; j < before.size(); ++j) {
      if (shared_in_current[j] < 0) ++stats.segments_previous;
    }
    return absl::OkStatus();
  }

  void RecordPrevious(const Document& doc) {
    ++stats.previous_docs_read;
    PreviousDoc& entry = previous_docs[Key(doc)];
    entry.type = doc.type;
    entry.id = doc.id;
    entry.routing = doc.routing;
    entry.source_hash = SourceHash(doc);
  }

  // Reads every live document of `reader`, passing each to `use`.
  static absl::Status ReadWhole(ShardReader& reader,
                                const std::function<void(const Document&)>& use) {
    RFS_ASSIGN_OR_RETURN(auto reading, reader.OpenAt(0));
    Document doc;
    for (;;) {
      RFS_ASSIGN_OR_RETURN(bool more, reading->Next(doc));
      if (!more) return absl::OkStatus();
      use(doc);
    }
  }

  // A reshaped index: every older shard whole, and, for the reader that deletes the ids gone
  // from the index, the ids of the newer snapshot's other shards.
  absl::Status ReadReshaped() {
    stats.previous_shards = reshaped.size();
    for (auto& shard : reshaped) {
      RFS_RETURN_IF_ERROR(ReadWhole(*shard, [this](const Document& doc) { RecordPrevious(doc); }));
    }
    for (auto& shard : other_current) {
      RFS_RETURN_IF_ERROR(ReadWhole(*shard, [this](const Document& doc) {
        ++stats.other_current_docs_read;
        current_ids.insert(Key(doc));
      }));
    }
    return absl::OkStatus();
  }

  // Reads the older side: documents of segments merged away, and those deleted since in shared
  // segments.
  absl::Status ReadPrevious() {
    if (!reshaped.empty()) return ReadReshaped();
    if (previous == nullptr) return absl::OkStatus();
    stats.previous_shards = 1;
    RFS_ASSIGN_OR_RETURN(auto reading, previous->OpenAt(0));
    reading->set_segment_filter([this](size_t j) {
      if (shared_in_current[j] < 0) return true;
      return std::find(newly_deleted[j].begin(), newly_deleted[j].end(), true) !=
             newly_deleted[j].end();
    });
    reading->set_doc_filter([this](size_t j, int32_t d) {
      return shared_in_current[j] < 0 || newly_deleted[j][static_cast<size_t>(d)];
    });
    Document doc;
    for (;;) {
      RFS_ASSIGN_OR_RETURN(bool more, reading->Next(doc));
      if (!more) break;
      RecordPrevious(doc);
    }
    return absl::OkStatus();
  }

  // The current side: segments the previous commit lacks, and in shared ones the documents
  // live now and not before; with `limit`, only cursors below it.
  std::unique_ptr<DocumentCursor> FilteredCurrent(std::unique_ptr<DocumentCursor> reading,
                                                  uint64_t limit = UINT64_MAX) {
    reading->set_segment_filter(
        [this](size_t i) { return shared_in_previous[i] < 0 || !revived[i].empty(); });
    reading->set_doc_filter([this, limit](size_t i, int32_t d) {
      if (current->segment_base(i) + static_cast<uint64_t>(d) >= limit) return false;
      return shared_in_previous[i] < 0 || revived[i][static_cast<size_t>(d)];
    });
    return reading;
  }

  // The older copy of `doc` when it had another routing (its delete must go first: on a target
  // with another shard count the two copies may live in different shards).
  const PreviousDoc* OtherRouting(const Document& doc) const {
    auto it = previous_docs.find(Key(doc));
    if (it == previous_docs.end() || it->second.routing == doc.routing) return nullptr;
    return &it->second;
  }

  // Whether `doc` (of a current segment) must be sent; records its id as live now.
  bool Changed(const Document& doc) {
    std::string key = Key(doc);
    auto it = previous_docs.find(key);
    const bool same = it != previous_docs.end() && it->second.routing == doc.routing &&
                      it->second.source_hash == SourceHash(doc);
    current_ids.insert(std::move(key));
    if (same) ++stats.docs_unchanged;
    return !same;
  }

  void FinishIndexPhase() {
    index_phase_done = true;
    deletes.clear();
    if (mode != DeltaMode::kUpdatesOnly && delete_gone) {
      std::vector<std::pair<const std::string*, const PreviousDoc*>> gone;
      for (const auto& [key, entry] : previous_docs) {
        if (!current_ids.contains(key)) gone.emplace_back(&key, &entry);
      }
      std::sort(gone.begin(), gone.end(),
                [](const auto& a, const auto& b) { return *a.first < *b.first; });
      for (const auto& [key, entry] : gone) deletes.push_back(entry);
    }
    stats.docs_to_delete += deletes.size();
  }
};

ShardDeltaReader::ShardDeltaReader(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ShardDeltaReader::~ShardDeltaReader() = default;

absl::StatusOr<std::unique_ptr<ShardDeltaReader>> ShardDeltaReader::Open(
    std::unique_ptr<ShardReader> previous, std::unique_ptr<ShardReader> current, DeltaMode mode,
    uint64_t start) {
  DeltaPrevious sides;
  sides.same_shard = std::move(previous);
  return Open(std::move(sides), std::move(current), mode, start);
}

absl::StatusOr<std::unique_ptr<ShardDeltaReader>> ShardDeltaReader::Open(
    DeltaPrevious previous, std::unique_ptr<ShardReader> current, DeltaMode mode, uint64_t start) {
  if (current == nullptr) return absl::InvalidArgumentError("a delta needs the newer shard");
  if (previous.same_shard != nullptr && !previous.reshaped.empty()) {
    return absl::InvalidArgumentError(
        "a delta reads the same older shard or all of them, not both");
  }
  auto impl = std::make_unique<Impl>();
  impl->previous = std::move(previous.same_shard);
  impl->reshaped = std::move(previous.reshaped);
  impl->delete_gone = impl->reshaped.empty() || previous.delete_gone;
  impl->other_current = std::move(previous.other_current);
  impl->current = std::move(current);
  impl->mode = mode;
  RFS_RETURN_IF_ERROR(impl->MatchSegments());
  RFS_RETURN_IF_ERROR(impl->ReadPrevious());
  const uint64_t max_cursor = impl->current->max_cursor();
  if (start > 0) {
    // Ids live before `start` decide the deletes too: read them again, without returning them.
    RFS_ASSIGN_OR_RETURN(auto before, impl->current->OpenAt(0));
    before = impl->FilteredCurrent(std::move(before), start);
    Document doc;
    for (;;) {
      RFS_ASSIGN_OR_RETURN(bool more, before->Next(doc));
      if (!more) break;
      ++impl->stats.current_docs_read;
      impl->Changed(doc);
    }
  }
  RFS_ASSIGN_OR_RETURN(auto cursor, impl->current->OpenAt(std::min(start, max_cursor)));
  impl->cursor = impl->FilteredCurrent(std::move(cursor));
  if (start >= max_cursor) {
    impl->FinishIndexPhase();
    impl->next_delete =
        static_cast<size_t>(std::min<uint64_t>(start - max_cursor, impl->deletes.size()));
  }
  return std::unique_ptr<ShardDeltaReader>(new ShardDeltaReader(std::move(impl)));
}

namespace {

void MakeDelete(const PreviousDoc& gone, uint64_t cursor, Document& doc) {
  doc.id = gone.id;
  doc.type = gone.type;
  doc.routing = gone.routing;
  doc.source = {};
  doc.has_source = false;
  doc.from_recovery_source = false;
  doc.rebuilt = false;
  doc.deleted = true;
  doc.source_format = content::SourceFormat::kNone;
  doc.cursor = cursor;
}

}  // namespace

absl::StatusOr<bool> ShardDeltaReader::Next(Document& doc) {
  Impl& d = *impl_;
  if (d.held) {
    doc = *std::move(d.held);
    d.held.reset();
    return true;
  }
  while (!d.index_phase_done) {
    RFS_ASSIGN_OR_RETURN(bool more, d.cursor->Next(doc));
    if (!more) {
      d.FinishIndexPhase();
      break;
    }
    ++d.stats.current_docs_read;
    if (!d.Changed(doc) || d.mode == DeltaMode::kDeletesOnly) continue;
    ++d.stats.docs_to_index;
    if (const PreviousDoc* moved = d.OtherRouting(doc)) {
      // Its old copy goes first, at the same cursor: a reader resumed there sends both again.
      ++d.stats.docs_to_delete;
      d.held = doc;
      MakeDelete(*moved, doc.cursor, doc);
    }
    return true;
  }
  if (d.next_delete >= d.deletes.size()) return false;
  MakeDelete(*d.deletes[d.next_delete], d.current->max_cursor() + d.next_delete, doc);
  ++d.next_delete;
  return true;
}

uint64_t ShardDeltaReader::position() const {
  if (impl_->held) return impl_->held->cursor;
  if (!impl_->index_phase_done) return impl_->cursor->position();
  return impl_->current->max_cursor() + impl_->next_delete;
}

uint64_t ShardDeltaReader::end() const {
  if (!impl_->index_phase_done) {
    // Not known before the newer side is read: at least its cursors.
    return impl_->current->max_cursor();
  }
  return impl_->current->max_cursor() + impl_->deletes.size();
}

const ShardDeltaStats& ShardDeltaReader::stats() const { return impl_->stats; }

}  // namespace rfs::lucene
