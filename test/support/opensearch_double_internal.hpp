// Internals of OpenSearchDouble shared by its HTTP server (opensearch_double.cpp) and its cluster
// model (opensearch_double_cluster.cpp). Not for tests to use directly.
//
// DoubleCluster is the state of the emulated cluster (indices, documents, templates, settings)
// and turns one decoded request into one response. Thread-safe: one mutex guards the state.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <boost/json.hpp>

#include "absl/status/statusor.h"
#include "opensearch_double.hpp"

namespace rfs::testing::internal {

/// Flattens {"index":{"number_of_shards":1}} into {"index.number_of_shards":"1"} (every value a
/// string, null removing the key), the form OpenSearch stores and prints with flat_settings.
void FlattenSettings(const boost::json::object& in, const std::string& prefix,
                     boost::json::object& out);
/// The reverse: flat keys back into nested objects.
boost::json::object NestSettings(const boost::json::object& flat);

/// The query parameters the double accepts for an API (path segments, method), beyond those every
/// API takes; empty for APIs that check their own. The test suite compares them with the spec.
std::vector<std::string_view> AllowedParams(const std::vector<std::string>& segments,
                                            const std::string& method);

struct DoubleRequest {
  std::string method;
  /// Decoded path segments: "/idx/_doc/1" -> {"idx", "_doc", "1"}.
  std::vector<std::string> segments;
  std::map<std::string, std::string> params;
  std::string body;  // decompressed
  /// Set when the server counted a `_bulk` body's actions while discarding it (discard mode).
  std::optional<size_t> discarded_actions;
};

struct DoubleResponse {
  int status = 200;
  std::string body;
  net::HttpHeaders headers;
};

struct SnapshotStore;  // opensearch_double_snapshots.cpp
class SnapshotApi;

class DoubleCluster {
 public:
  explicit DoubleCluster(const OpenSearchDoubleOptions& options);

  /// Serves one request. `item_failure_probability` makes bulk items fail with 429.
  DoubleResponse Handle(const DoubleRequest& request, double item_failure_probability);

  /// A whole-request error body in OpenSearch's shape ({"error":{...},"status":N}).
  DoubleResponse Error(int status, const std::string& type, const std::string& reason,
                       boost::json::object extra = {}) const;

  /// 404 index_not_found_exception for `name`; `resource_type` is "index_or_alias" or
  /// "index_expression", as OpenSearch reports for the API at hand.
  DoubleResponse IndexNotFound(const std::string& name, const std::string& resource_type) const;

  std::optional<StoredDocument> GetDocument(const std::string& index, const std::string& id) const;
  size_t DocumentCount(const std::string& index) const;
  std::vector<std::string> IndexNames() const;
  uint64_t write_operations() const;
  uint64_t bulk_items() const;
  /// Name of the rejected-execution error: OpenSearch dropped Elasticsearch's "es_" prefix.
  std::string rejected_execution_type() const;

 private:
  struct Index {
    std::string uuid;
    boost::json::object settings;  // flat, e.g. "index.number_of_shards"
    boost::json::object mappings;
    boost::json::object aliases;
    // Documents live in shards: keys are DocKey(shard, _id), so one _id under two routings that
    // land in different shards is two documents, as in OpenSearch.
    int shards = 1;
    int routing_num_shards = 1;
    std::map<std::string, StoredDocument> docs;
    std::map<std::string, int64_t> deleted_versions;  // tombstones keep versions growing
    std::vector<int64_t> next_seq_no;                 // per shard
    // What search and count see: the documents as of the last refresh (near-real-time search).
    std::map<std::string, StoredDocument> searchable;
    core::IClock::TimePoint last_refresh{};
    // index.refresh_interval; zero or negative: only explicit refreshes.
    core::IClock::Duration refresh_interval = std::chrono::seconds(1);
  };
  struct WriteResult {
    int status = 200;
    boost::json::object body;  // the per-item or single-document response object
  };

  DoubleResponse Info(bool head);
  DoubleResponse ClusterSettings(const DoubleRequest& request);
  DoubleResponse Templates(const DoubleRequest& request, const std::string& kind);
  DoubleResponse IndexApi(const DoubleRequest& request);
  DoubleResponse Bulk(const DoubleRequest& request, const std::string& path_index,
                      const std::string& path_type, double item_failure_probability);
  DoubleResponse DocumentApi(const DoubleRequest& request);
  DoubleResponse Refresh(const DoubleRequest& request);
  /// GET /<index>/_settings[/<names>] and PUT /<index>/_settings.
  DoubleResponse IndexSettings(const DoubleRequest& request);
  DoubleResponse SearchOrCount(const DoubleRequest& request, bool count);
  // `/_snapshot/...`: repositories and snapshots (opensearch_double_snapshots.cpp).
  DoubleResponse Snapshots(const DoubleRequest& request);
  friend class SnapshotApi;

  // REQUIRES: mu_ held.
  Index* FindIndex(const std::string& name);
  /// The shard of a document routed by `routing` (its _id without one).
  static int ShardFor(const Index& index, std::string_view routing);
  /// Publishes every write of `index` to search.
  void RefreshLocked(Index& index);
  absl::StatusOr<Index*> GetOrAutoCreate(const std::string& name, DoubleResponse* error);
  std::optional<DoubleResponse> CreateIndexLocked(const std::string& name,
                                                  const boost::json::object& body);
  std::optional<std::string> InvalidIndexNameReason(const std::string& name) const;
  std::vector<std::string> ResolveIndices(const std::string& expression) const;
  // A write's `version` with `version_type` external or external_gte (VersionType.EXTERNAL,
  // EXTERNAL_GTE): applied only over a document (or delete tombstone) with a lower version (or
  // not higher, for external_gte), which then takes this version.
  struct ExternalVersion {
    int64_t version = 0;
    bool gte = false;
  };
  // Applies one write. `op` is "index", "create", "update" or "delete".
  WriteResult ApplyWrite(const std::string& op, const std::string& index_name,
                         std::optional<std::string> id, const std::optional<std::string>& routing,
                         std::string_view source, std::optional<int64_t> if_seq_no,
                         std::optional<int64_t> if_primary_term,
                         std::optional<ExternalVersion> external = std::nullopt);
  std::optional<std::pair<std::string, std::string>> CheckMapping(const Index& index,
                                                                  const boost::json::object& doc,
                                                                  const std::string& id) const;
  boost::json::object ItemError(const std::string& index, const Index* idx, const std::string& type,
                                const std::string& reason) const;

  int major_version() const { return major_; }
  core::IClock& Clock() const {
    return options_.clock != nullptr ? *options_.clock : core::SystemClock::Instance();
  }
  bool is_elasticsearch() const { return options_.distribution == "elasticsearch"; }

  OpenSearchDoubleOptions options_;
  int major_ = 2;
  mutable std::mutex mu_;
  std::map<std::string, Index> indices_;
  std::map<std::string, boost::json::value> legacy_templates_, component_templates_,
      index_templates_;
  boost::json::object persistent_settings_, transient_settings_;
  uint64_t write_operations_ = 0;
  uint64_t bulk_items_ = 0;
  uint64_t next_uuid_ = 1;
  uint64_t next_auto_id_ = 1;
  std::mt19937_64 rng_;
  // Created on first use by Snapshots(); guarded by mu_.
  std::shared_ptr<SnapshotStore> snapshot_store_;
};

}  // namespace rfs::testing::internal
