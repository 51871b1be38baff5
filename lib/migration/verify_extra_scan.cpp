// ScanExtraDocuments (see verify_extra_scan_internal.hpp).
#include <algorithm>
#include <filesystem>
#include <mutex>

#include <boost/json.hpp>

#include "rfs/coordination/sqlite_work_coordinator.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"

#include "absl/hash/hash.h"
#include "migration/verify_extra_scan_internal.hpp"

namespace rfs::migration::internal {
namespace {

namespace json = boost::json;
using core::StrCat;

uint64_t KeyHash(std::string_view index, std::string_view id) {
  return absl::Hash<std::pair<std::string_view, std::string_view>>{}({index, id});
}

// Keeps the hash of each document it is given; writes nothing anywhere.
class HashingSink final : public reindex::IDocumentSink {
 public:
  absl::StatusOr<std::vector<reindex::ItemFailure>> Write(
      std::span<const reindex::SourceDocument* const> docs) override {
    std::lock_guard lock(mu_);
    for (const reindex::SourceDocument* doc : docs) {
      if (doc->op != reindex::BulkOp::kDelete) hashes_.push_back(KeyHash(doc->index, doc->id));
    }
    return std::vector<reindex::ItemFailure>{};
  }
  std::string description() const override { return "the source's ids (verify-scan-extra)"; }
  bool reports_target_load() const override { return false; }
  std::vector<uint64_t> TakeSorted() {
    std::lock_guard lock(mu_);
    std::sort(hashes_.begin(), hashes_.end());
    return std::move(hashes_);
  }

 private:
  std::mutex mu_;
  std::vector<uint64_t> hashes_;
};

absl::StatusOr<std::vector<uint64_t>> SourceHashes(const snapshot::SnapshotRepository& repository,
                                                   core::IClock& clock,
                                                   const ExtraScanOptions& options) {
  std::error_code ignored;
  std::filesystem::remove(options.scratch_store, ignored);
  coordination::SqliteWorkCoordinatorOptions store;
  store.worker_id = "verify-scan-extra";
  store.path = options.scratch_store;
  RFS_ASSIGN_OR_RETURN(auto items, coordination::SqliteWorkCoordinator::Open(store));
  auto sink = std::make_shared<HashingSink>();
  SinkFactory sinks = [sink](std::string_view, std::string_view)
      -> absl::StatusOr<std::shared_ptr<reindex::IDocumentSink>> { return sink; };
  DocumentMigrationOptions migration = options.migration;
  while (true) {
    DocumentMigrationWorker worker(repository, *items, sinks, nullptr, clock, migration);
    RFS_ASSIGN_OR_RETURN(WorkerSummary summary, worker.Run());
    if (summary.outcome == WorkerOutcome::kNoWorkLeft) break;
    if (summary.outcome == WorkerOutcome::kStopped) {
      return absl::CancelledError("stopped while reading the source's ids");
    }
  }
  items.reset();
  std::filesystem::remove(options.scratch_store, ignored);
  return sink->TakeSorted();
}

std::string Text(const json::object& object, std::string_view key) {
  const json::value* value = object.if_contains(key);
  return value != nullptr && value->is_string() ? std::string(value->as_string()) : "";
}

absl::StatusOr<json::object> SendJson(opensearch::OpenSearchClient& client, std::string method,
                                      std::string target, std::string body, std::string_view what) {
  net::HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = std::move(body);
  RFS_ASSIGN_OR_RETURN(net::HttpResponse response, client.Send(std::move(request)));
  if (response.status != 200) return opensearch::StatusFromResponse(response, what);
  auto parsed = net::ParseJson(response.body, 64);
  if (!parsed || !parsed->is_object()) {
    return absl::DataLossError(StrCat(what, ": the answer is not a JSON object"));
  }
  return parsed->as_object();
}

}  // namespace

absl::StatusOr<ExtraScanResult> ScanExtraDocuments(const snapshot::SnapshotRepository& repository,
                                                   opensearch::OpenSearchClient& client,
                                                   reindex::IFailedDocumentSink& records,
                                                   core::IClock& clock,
                                                   const ExtraScanOptions& options) {
  RFS_ASSIGN_OR_RETURN(std::vector<uint64_t> source, SourceHashes(repository, clock, options));
  ExtraScanResult result;
  result.source_documents = source.size();
  for (const std::string& index : options.indices) {
    const std::string what = StrCat("the scan of ", index, "'s ids");
    auto first = SendJson(
        client, "POST",
        StrCat("/", net::PercentEncode(index, false), "/_search?scroll=2m&ignore_unavailable=true"),
        R"({"size":1000,"_source":false,"sort":["_doc"]})", what);
    if (absl::IsNotFound(first.status())) continue;  // not on the target: nothing extra
    RFS_RETURN_IF_ERROR(first.status());
    json::object page = *std::move(first);
    uint64_t& extra = result.extra[index];
    while (true) {
      const std::string scroll_id = Text(page, "_scroll_id");
      const json::value* hits = page.if_contains("hits");
      const json::value* list =
          hits != nullptr && hits->is_object() ? hits->as_object().if_contains("hits") : nullptr;
      if (list == nullptr || !list->is_array()) {
        return absl::DataLossError(StrCat(what, ": a page without hits.hits"));
      }
      std::vector<reindex::FailedDocument> found;
      for (const json::value& hit : list->as_array()) {
        if (!hit.is_object()) continue;
        const json::object& doc = hit.as_object();
        const std::string id = Text(doc, "_id");
        ++result.target_documents;
        if (std::binary_search(source.begin(), source.end(), KeyHash(index, id))) continue;
        ++extra;
        auto& named = result.named[index];
        if (named.size() < options.named_per_index) named.push_back(id);
        // A delete of that document in its own (backing) index, as a redrive sends it.
        json::object meta{{"_index", Text(doc, "_index")}, {"_id", id}};
        if (const std::string routing = Text(doc, "_routing"); !routing.empty()) {
          meta["routing"] = routing;
        }
        reindex::FailedDocument record;
        record.index = Text(doc, "_index");
        record.id = id;
        record.status = 404;
        record.error_type = std::string(kVerifyExtra);
        record.reason = StrCat("verify round ", options.round, ": on the target in ", index,
                               ", not in the source");
        record.action = json::serialize(json::object{{"delete", std::move(meta)}});
        found.push_back(std::move(record));
      }
      if (!found.empty()) RFS_RETURN_IF_ERROR(records.Record(found));
      if (list->as_array().empty() || scroll_id.empty()) {
        if (!scroll_id.empty()) {
          (void)SendJson(client, "DELETE", "/_search/scroll",
                         json::serialize(json::object{{"scroll_id", scroll_id}}), what);
        }
        break;
      }
      RFS_ASSIGN_OR_RETURN(
          page, SendJson(client, "POST", "/_search/scroll",
                         json::serialize(json::object{{"scroll", "2m"}, {"scroll_id", scroll_id}}),
                         what));
    }
  }
  return result;
}

}  // namespace rfs::migration::internal
