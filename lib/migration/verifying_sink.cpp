// VerifyingSink: see verifying_sink_internal.hpp.
#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>

#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"

#include "migration/verifying_sink_internal.hpp"

namespace rfs::migration::internal {
namespace {

namespace json = boost::json;
using core::StrCat;
using reindex::ItemFailure;
using reindex::SourceDocument;

// As deep as the _mget answer is parsed (opensearch::OpenSearchClient::MultiGet): a source the
// target holds is compared at any depth it can hold.
constexpr size_t kMaxSourceDepth = 510;

}  // namespace

VerifyTally::Counts& VerifyTally::For(const std::string& index) {
  std::lock_guard lock(mu);
  auto& slot = by_index[index];
  if (!slot) slot = std::make_unique<Counts>();
  return *slot;
}

std::string VerifyingSink::description() const {
  return StrCat("verification round ", options_.round, " against ", client_.endpoint());
}

absl::StatusOr<VerifyingSink::Target> VerifyingSink::LookAt(const std::string& index) {
  {
    std::lock_guard lock(mu_);
    if (auto it = targets_.find(index); it != targets_.end()) return it->second;
  }
  Target target;
  auto mapping = client_.GetSourceMapping(index);
  if (absl::IsNotFound(mapping.status())) {
    // Not cached: an index created on the target later (a redrive) is looked at again.
    return target;
  }
  if (!mapping.ok()) return mapping.status();
  target.exists = true;
  if (mapping->disabled || mapping->filtered) {
    target.not_comparable = StrCat("index ", index, " on the target keeps ",
                                   mapping->disabled ? "no _source" : "only part of each _source",
                                   " (", mapping->described, "): its documents cannot be compared");
  }
  auto stream = client_.DataStreamExists(index);
  if (!stream.ok()) return stream.status();
  target.data_stream = *stream;
  std::lock_guard lock(mu_);
  targets_.emplace(index, target);
  return target;
}

absl::StatusOr<std::vector<ItemFailure>> VerifyingSink::Write(
    std::span<const SourceDocument* const> docs) {
  std::vector<ItemFailure> failures;
  // The batch's positions by target index, in order.
  std::map<std::string, std::vector<size_t>> by_index;
  for (size_t i = 0; i < docs.size(); ++i) by_index[docs[i]->index].push_back(i);
  // Counted here and added to the tally only once the whole batch is judged: a batch that fails
  // part way (a target not answering) is written again, and must not count twice.
  std::map<std::string, VerifyTally::Counts> counted;
  for (const auto& [index, positions] : by_index) {
    RFS_RETURN_IF_ERROR(Compare(index, docs, positions, counted[index], failures));
  }
  for (const auto& [index, counts] : counted) {
    VerifyTally::Counts& tally = tally_.For(index);
    tally.equal.fetch_add(counts.equal.load());
    tally.missing.fetch_add(counts.missing.load());
    tally.different.fetch_add(counts.different.load());
    tally.not_comparable.fetch_add(counts.not_comparable.load());
    tally.already_newer.fetch_add(counts.already_newer.load());
  }
  std::sort(failures.begin(), failures.end(),
            [](const ItemFailure& a, const ItemFailure& b) { return a.position < b.position; });
  return failures;
}

absl::Status VerifyingSink::Compare(const std::string& index, Docs docs,
                                    std::span<const size_t> positions, VerifyTally::Counts& tally,
                                    std::vector<ItemFailure>& failures) {
  const std::string round = StrCat("verify round ", options_.round, ": ");
  auto fail_all = [&](std::span<const size_t> positions, int status, std::string_view type,
                      const std::string& reason) {
    for (size_t position : positions) {
      if (docs[position]->op == reindex::BulkOp::kDelete && status == kVerifyMissingStatus) {
        tally.equal.fetch_add(1);  // gone from the source, and not on the target: as it should be
        continue;
      }
      failures.push_back(ItemFailure{position, status, std::string(type), round + reason});
      (status == kVerifyMissingStatus ? tally.missing : tally.not_comparable).fetch_add(1);
    }
  };
  auto target = LookAt(index);
  if (!target.ok()) return target.status();
  if (!target->exists) {
    fail_all(positions, kVerifyMissingStatus, kVerifyMissing,
             StrCat("not on the target (index ", index, " is not there)"));
    return absl::OkStatus();
  }
  if (!target->not_comparable.empty()) {
    fail_all(positions, kVerifyNotComparableStatus, kVerifyNotComparable, target->not_comparable);
    return absl::OkStatus();
  }
  for (size_t begin = 0; begin < positions.size();) {
    size_t end = begin;
    size_t bytes = 0;
    do {
      // The `_id` and the answer's fields count too: deletes carry no source.
      bytes += reindex::SourceSize(*docs[positions[end]]) + docs[positions[end]]->id.size() + 64;
      ++end;
    } while (end < positions.size() && bytes < options_.compare_bytes);
    const std::span<const size_t> part = positions.subspan(begin, end - begin);
    std::vector<Stored> stored(part.size());
    if (target->data_stream) {
      RFS_ASSIGN_OR_RETURN(bool there, SearchDataStream(index, docs, part, stored));
      if (!there) {
        fail_all(positions.subspan(begin), kVerifyMissingStatus, kVerifyMissing,
                 StrCat("not on the target (data stream ", index, " is gone)"));
        return absl::OkStatus();
      }
    } else {
      RFS_RETURN_IF_ERROR(MultiGet(index, docs, part, stored));
    }
    Judge(docs, part, stored, tally, round, failures);
    begin = end;
  }
  return absl::OkStatus();
}

absl::StatusOr<bool> VerifyingSink::SearchDataStream(const std::string& index, Docs docs,
                                                     std::span<const size_t> positions,
                                                     std::vector<Stored>& stored) {
  json::array ids;
  std::map<std::string, std::vector<size_t>> wanted;  // id -> slots in `stored`
  for (size_t k = 0; k < positions.size(); ++k) {
    const std::string& id = docs[positions[k]]->id;
    if (wanted[id].empty()) ids.emplace_back(id);
    wanted[id].push_back(k);
  }
  const size_t size = ids.size();
  auto found = client_.Search(
      index,
      json::object{{"size", size},
                   {"version", true},
                   {"query", json::object{{"ids", json::object{{"values", std::move(ids)}}}}}});
  if (absl::IsNotFound(found.status())) {
    std::lock_guard lock(mu_);
    targets_.erase(index);
    return false;
  }
  if (!found.ok()) return found.status();
  for (const auto& hit : found->hits) {
    auto it = wanted.find(hit.id);
    if (it == wanted.end()) continue;
    auto parsed = net::ParseJson(hit.source, kMaxSourceDepth);
    for (size_t k : it->second) {
      stored[k].found = true;
      if (parsed) stored[k].source = *parsed;
      stored[k].version = hit.version.version;
    }
  }
  return true;
}

absl::Status VerifyingSink::MultiGet(const std::string& index, Docs docs,
                                     std::span<const size_t> positions,
                                     std::vector<Stored>& stored) {
  std::vector<opensearch::MultiGetRequest> requests;
  requests.reserve(positions.size());
  for (size_t position : positions) {
    const SourceDocument& doc = *docs[position];
    requests.push_back({doc.index, doc.id, doc.routing});
  }
  auto got = client_.MultiGet(requests);
  if (!got.ok()) return got.status();
  for (size_t k = 0; k < positions.size(); ++k) {
    opensearch::MultiGetResult& result = (*got)[k];
    if (result.error_type == "index_not_found_exception") {
      // Deleted while the round runs: its documents are missing, and the index is looked at
      // again for the next batch.
      std::lock_guard lock(mu_);
      targets_.erase(index);
      continue;
    }
    if (!result.error_type.empty()) {
      // A shard not answering, say: the batch is asked again (the reindexer's retries).
      return absl::UnavailableError(StrCat("_mget of ", docs[positions[k]]->id, " in ", index, ": ",
                                           result.error_type, ": ", result.error_reason));
    }
    stored[k].found = result.found;
    stored[k].source = std::move(result.source);
    stored[k].version = result.version;
  }
  return absl::OkStatus();
}

void VerifyingSink::Judge(Docs docs, std::span<const size_t> positions,
                          const std::vector<Stored>& stored, VerifyTally::Counts& tally,
                          const std::string& round, std::vector<ItemFailure>& failures) {
  auto fail = [&](size_t position, int status, std::string_view type, std::string reason,
                  std::atomic<uint64_t>& counter) {
    failures.push_back(ItemFailure{position, status, std::string(type), round + reason});
    counter.fetch_add(1);
  };
  for (size_t k = 0; k < positions.size(); ++k) {
    const size_t position = positions[k];
    const SourceDocument& doc = *docs[position];
    if (doc.op == reindex::BulkOp::kDelete) {
      if (stored[k].found) {
        fail(position, kVerifyDifferentStatus, kVerifyDifferent,
             "deleted on the source, still on the target", tally.different);
      } else {
        tally.equal.fetch_add(1);
      }
      continue;
    }
    if (!stored[k].found) {
      fail(position, kVerifyMissingStatus, kVerifyMissing, "not on the target", tally.missing);
      continue;
    }
    auto sent = net::ParseJson(reindex::SourceBytes(doc), kMaxSourceDepth);
    if (sent && *sent == stored[k].source) {
      tally.equal.fetch_add(1);
    } else if (options_.preserve_version && doc.version && stored[k].version > *doc.version) {
      // Written on the target since, in a higher version: the migration leaves it there.
      fail(position, 409, "version_conflict_engine_exception",
           StrCat("the target holds version ", stored[k].version, ", the source ", *doc.version),
           tally.already_newer);
    } else {
      fail(position, kVerifyDifferentStatus, kVerifyDifferent,
           sent ? "_source differs on the target" : "the source sent is no JSON", tally.different);
    }
  }
}

}  // namespace rfs::migration::internal
