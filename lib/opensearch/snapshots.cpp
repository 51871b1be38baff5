#include "rfs/opensearch/snapshots.hpp"

#include <algorithm>
#include <utility>

#include <boost/json.hpp>

#include "rfs/core/errors.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/opensearch/client.hpp"

namespace rfs::opensearch {
namespace {

namespace json = boost::json;
using core::StrCat;
using net::ParseJson;

std::string Str(json::string_view s) { return std::string(s.data(), s.size()); }

const json::object* ObjectField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(json::string_view(key.data(), key.size()));
  return v != nullptr && v->is_object() ? &v->as_object() : nullptr;
}

std::string StringField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(json::string_view(key.data(), key.size()));
  return v != nullptr && v->is_string() ? Str(v->as_string()) : std::string();
}

// Integers as OpenSearch prints them (numbers; strings tolerated).
int64_t IntField(const json::object* o, std::string_view key) {
  if (o == nullptr) return 0;
  const json::value* v = o->if_contains(json::string_view(key.data(), key.size()));
  if (v == nullptr) return 0;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  if (v->is_double()) return static_cast<int64_t>(v->as_double());
  if (v->is_string()) return std::atoll(v->as_string().c_str());
  return 0;
}

uint64_t Unsigned(int64_t v) { return v < 0 ? 0 : static_cast<uint64_t>(v); }

// The Status of a non-2xx snapshot API response. Repository construction errors come back as
// 500 repository_exception although retrying cannot help, so they are InvalidArgument; a name
// already in use is AlreadyExists; the rest maps as StatusFromResponse does.
absl::Status SnapshotApiError(const net::HttpResponse& response, std::string_view what) {
  const ErrorInfo error = ParseErrorBody(response.body);
  const std::string& type = error.type;
  const std::string& detail = error.detail;
  const std::string message =
      StrCat(what, ": HTTP ", response.status, detail.empty() ? "" : " ", detail);
  if (type == "repository_exception" || type == "repository_verification_exception") {
    return absl::InvalidArgumentError(message);
  }
  if (type == "invalid_snapshot_name_exception" &&
      (detail.find("already exists") != std::string::npos ||
       detail.find("already in-progress") != std::string::npos)) {
    return absl::AlreadyExistsError(message);
  }
  return absl::Status(StatusFromResponse(response, what).code(), message);
}

// S3 bucket naming rules: 3-63 characters of lower-case letters, digits, '.' and '-', starting
// and ending with a letter or digit.
bool ValidBucketName(std::string_view bucket) {
  if (bucket.size() < 3 || bucket.size() > 63) return false;
  auto alnum = [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); };
  if (!alnum(bucket.front()) || !alnum(bucket.back())) return false;
  return std::all_of(bucket.begin(), bucket.end(),
                     [&](char c) { return alnum(c) || c == '.' || c == '-'; });
}

SnapshotState StateFromInfo(std::string_view state) {
  if (state == "SUCCESS") return SnapshotState::kSuccess;
  if (state == "PARTIAL") return SnapshotState::kPartial;
  if (state == "FAILED" || state == "INCOMPATIBLE" || state == "ABORTED") {
    return SnapshotState::kFailed;
  }
  return SnapshotState::kInProgress;
}

// "[idx][0] reason; [idx2][0] reason" (at most `limit` failures, then "and N more").
std::string DescribeFailures(const std::vector<SnapshotShardFailure>& failures, size_t limit) {
  std::string out;
  for (size_t i = 0; i < failures.size() && i < limit; ++i) {
    const auto& f = failures[i];
    out += StrCat(i == 0 ? "" : "; ", "[", f.index, "][", f.shard_id, "] ",
                  f.reason.empty() ? std::string("(no reason given)") : f.reason);
  }
  if (failures.size() > limit) out += StrCat("; and ", failures.size() - limit, " more");
  return out;
}

}  // namespace

std::string_view SnapshotStateName(SnapshotState state) {
  switch (state) {
    case SnapshotState::kInProgress:
      return "IN_PROGRESS";
    case SnapshotState::kSuccess:
      return "SUCCESS";
    case SnapshotState::kPartial:
      return "PARTIAL";
    case SnapshotState::kFailed:
      return "FAILED";
  }
  return "IN_PROGRESS";
}

double SnapshotProgress::fraction() const {
  if (bytes_total > 0) {
    return std::min(1.0, static_cast<double>(bytes_processed) / static_cast<double>(bytes_total));
  }
  if (shards_total > 0) {
    return std::min(
        1.0, static_cast<double>(shards_done + shards_failed) / static_cast<double>(shards_total));
  }
  return state == SnapshotState::kInProgress ? 0.0 : 1.0;
}

absl::StatusOr<S3Location> ParseS3Uri(std::string_view uri) {
  constexpr std::string_view kScheme = "s3://";
  if (!uri.starts_with(kScheme)) {
    return absl::InvalidArgumentError(
        StrCat("S3 repository URI [", uri, "] must start with s3:// (e.g. s3://bucket/path)"));
  }
  std::string_view rest = uri.substr(kScheme.size());
  const size_t slash = rest.find('/');
  S3Location location;
  location.bucket = std::string(rest.substr(0, slash));
  if (location.bucket.empty()) {
    return absl::InvalidArgumentError(StrCat("S3 repository URI [", uri, "] names no bucket"));
  }
  if (!ValidBucketName(location.bucket)) {
    return absl::InvalidArgumentError(
        StrCat("S3 repository URI [", uri, "]: [", location.bucket,
               "] is not a valid bucket name (3-63 lower-case letters, digits, '.' and '-')"));
  }
  if (slash != std::string_view::npos) {
    std::string_view path = rest.substr(slash);
    while (path.starts_with('/')) path.remove_prefix(1);
    while (path.ends_with('/')) path.remove_suffix(1);
    location.base_path = std::string(path);
  }
  return location;
}

absl::StatusOr<json::object> RepositoryBody(const RepositoryConfig& config) {
  json::object settings;
  std::string type;
  if (const auto* fs = std::get_if<FileSystemRepositoryConfig>(&config.storage)) {
    if (fs->location.empty()) {
      return absl::InvalidArgumentError("file-system repository path is empty");
    }
    type = "fs";
    settings["location"] = fs->location;
  } else if (const auto* gcs = std::get_if<GcsRepositoryConfig>(&config.storage)) {
    if (gcs->bucket.empty()) return absl::InvalidArgumentError("GCS repository names no bucket");
    type = "gcs";
    settings["bucket"] = gcs->bucket;
    if (!gcs->base_path.empty()) settings["base_path"] = gcs->base_path;
  } else {
    const auto& s3 = std::get<S3RepositoryConfig>(config.storage);
    auto location = ParseS3Uri(s3.uri);
    if (!location.ok()) return location.status();
    if (s3.region.empty()) {
      return absl::InvalidArgumentError(
          StrCat("S3 repository ", s3.uri, " needs a region (the bucket's AWS region)"));
    }
    type = "s3";
    settings["bucket"] = location->bucket;
    if (!location->base_path.empty()) settings["base_path"] = location->base_path;
    settings["region"] = s3.region;
    if (!s3.endpoint.empty()) settings["endpoint"] = s3.endpoint;
    if (!s3.role_arn.empty()) settings["role_arn"] = s3.role_arn;
    if (s3.disable_chunked_encoding) settings["disable_chunked_encoding"] = true;
  }
  if (config.max_snapshot_rate_mb_per_node) {
    if (*config.max_snapshot_rate_mb_per_node <= 0) {
      return absl::InvalidArgumentError(StrCat("max snapshot rate must be positive, got ",
                                               *config.max_snapshot_rate_mb_per_node, " MB/s"));
    }
    settings["max_snapshot_bytes_per_sec"] = StrCat(*config.max_snapshot_rate_mb_per_node, "mb");
  }
  settings["compress"] = config.compress;
  return json::object{{"type", type}, {"settings", std::move(settings)}};
}

SnapshotCreator::SnapshotCreator(OpenSearchClient& client, std::string repository_name)
    : client_(client), repository_name_(std::move(repository_name)) {}

absl::StatusOr<net::HttpResponse> SnapshotCreator::Send(std::string method, std::string target,
                                                        std::string body) {
  return client_.Send(JsonRequest(std::move(method), std::move(target), std::move(body)));
}

std::string SnapshotCreator::SnapshotPath(std::string_view snapshot) const {
  return StrCat("/_snapshot/", EncodePathSegment(repository_name_), "/",
                EncodePathSegment(snapshot));
}

absl::Status SnapshotCreator::RegisterRepository(const RepositoryConfig& config) {
  if (repository_name_.empty()) return absl::InvalidArgumentError("repository name is empty");
  auto body = RepositoryBody(config);
  if (!body.ok()) return body.status();
  const std::string target = StrCat("/_snapshot/", EncodePathSegment(repository_name_));
  auto response = Send("PUT", target, core::JsonText(*body));
  if (!response.ok()) return response.status();
  if (response->status >= 200 && response->status < 300) return absl::OkStatus();
  absl::Status error = SnapshotApiError(*response, StrCat("register repository: PUT ", target));
  // RepositoriesService: "[<repo>] repository type [<type>] does not exist" when no plugin of a
  // node provides the type.
  const std::string type(body->at("type").as_string().c_str());
  if (const std::string_view message(error.message().data(), error.message().size());
      type != "fs" && message.find(StrCat("repository type [", type, "] does not exist")) !=
                          std::string_view::npos) {
    return absl::Status(error.code(),
                        StrCat(message, " (every node of the source needs the repository-", type,
                               " plugin: bin/opensearch-plugin or bin/elasticsearch-plugin install "
                               "repository-",
                               type, ", then a restart)"));
  }
  return error;
}

absl::Status SnapshotCreator::StartSnapshot(const SnapshotRequest& request) {
  if (request.name.empty()) return absl::InvalidArgumentError("snapshot name is empty");
  json::object body{{"include_global_state", request.include_global_state},
                    {"ignore_unavailable", request.ignore_unavailable}};
  std::string indices;
  for (const auto& entry : request.indices) {
    if (entry.empty()) continue;
    indices += StrCat(indices.empty() ? "" : ",", entry);
  }
  if (!indices.empty()) body["indices"] = indices;
  const std::string target = StrCat(SnapshotPath(request.name), "?wait_for_completion=false");
  auto response = Send("PUT", target, core::JsonText(body));
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status >= 300) {
    return SnapshotApiError(*response, StrCat("start snapshot: PUT ", target));
  }
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object() ||
      !(parsed->as_object().contains("accepted") || parsed->as_object().contains("snapshot"))) {
    return absl::DataLossError(
        StrCat("start snapshot: PUT ", target,
               ": the response is not a snapshot acceptance: ", response->body.substr(0, 200)));
  }
  return absl::OkStatus();
}

absl::StatusOr<SnapshotProgress> SnapshotCreator::GetProgress(std::string_view snapshot) {
  const std::string target = StrCat(SnapshotPath(snapshot), "/_status");
  auto response = Send("GET", target);
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status >= 300) {
    return SnapshotApiError(*response, StrCat("snapshot status: GET ", target));
  }
  auto parsed = ParseJson(response->body);
  const json::value* list =
      parsed && parsed->is_object() ? parsed->as_object().if_contains("snapshots") : nullptr;
  if (list == nullptr || !list->is_array() || list->as_array().size() != 1 ||
      !list->as_array()[0].is_object()) {
    return absl::DataLossError(
        StrCat("snapshot status: GET ", target, ": expected {\"snapshots\":[one status]}"));
  }
  const json::object& status = list->as_array()[0].as_object();
  SnapshotProgress progress;
  progress.raw_state = StringField(status, "state");
  if (progress.raw_state.empty()) {
    return absl::DataLossError(StrCat("snapshot status: GET ", target, ": no state"));
  }
  // The status API's states (SnapshotsInProgress.State): INIT, STARTED, WAITING while running.
  if (progress.raw_state == "SUCCESS") {
    progress.state = SnapshotState::kSuccess;
  } else if (progress.raw_state == "PARTIAL") {
    progress.state = SnapshotState::kPartial;
  } else if (progress.raw_state == "FAILED" || progress.raw_state == "ABORTED") {
    progress.state = SnapshotState::kFailed;
  }
  const json::object* shards = ObjectField(status, "shards_stats");
  progress.shards_total = IntField(shards, "total");
  progress.shards_done = IntField(shards, "done");
  progress.shards_failed = IntField(shards, "failed");
  if (const json::object* stats = ObjectField(status, "stats")) {
    if (const json::object* total = ObjectField(*stats, "total")) {
      // Elasticsearch 7.4+ and OpenSearch: {"incremental","processed","total"} objects.
      const json::object* processed = ObjectField(*stats, "processed");
      progress.bytes_total = Unsigned(IntField(total, "size_in_bytes"));
      progress.files_total = Unsigned(IntField(total, "file_count"));
      progress.bytes_processed = Unsigned(IntField(processed, "size_in_bytes"));
      progress.files_processed = Unsigned(IntField(processed, "file_count"));
    } else {
      // Elasticsearch before 7.4: flat counters of the files this snapshot copies.
      progress.bytes_total = Unsigned(IntField(stats, "total_size_in_bytes"));
      progress.files_total = Unsigned(IntField(stats, "number_of_files"));
      progress.bytes_processed = Unsigned(IntField(stats, "processed_size_in_bytes"));
      progress.files_processed = Unsigned(IntField(stats, "processed_files"));
    }
    progress.elapsed = std::chrono::milliseconds(IntField(stats, "time_in_millis"));
  }
  return progress;
}

absl::StatusOr<SnapshotInfo> SnapshotCreator::GetSnapshot(std::string_view snapshot) {
  const std::string target = SnapshotPath(snapshot);
  auto response = Send("GET", target);
  if (!response.ok()) return response.status();
  if (response->status < 200 || response->status >= 300) {
    return SnapshotApiError(*response, StrCat("get snapshot: GET ", target));
  }
  auto parsed = ParseJson(response->body);
  const json::value* list =
      parsed && parsed->is_object() ? parsed->as_object().if_contains("snapshots") : nullptr;
  if (list == nullptr && parsed && parsed->is_object()) {
    // Elasticsearch 7.x answers {"responses":[{"repository":..., "snapshots":[...]}]}.
    if (const json::value* responses = parsed->as_object().if_contains("responses");
        responses != nullptr && responses->is_array() && responses->as_array().size() == 1 &&
        responses->as_array()[0].is_object()) {
      list = responses->as_array()[0].as_object().if_contains("snapshots");
    }
  }
  if (list == nullptr || !list->is_array()) {
    return absl::DataLossError(
        StrCat("get snapshot: GET ", target, ": expected {\"snapshots\":[...]}"));
  }
  for (const auto& entry : list->as_array()) {
    if (!entry.is_object() || StringField(entry.as_object(), "snapshot") != snapshot) continue;
    const json::object& o = entry.as_object();
    SnapshotInfo info;
    info.name = std::string(snapshot);
    info.uuid = StringField(o, "uuid");
    const std::string state = StringField(o, "state");
    if (state.empty())
      return absl::DataLossError(StrCat("get snapshot: GET ", target, ": no state"));
    info.state = StateFromInfo(state);
    if (const json::value* indices = o.if_contains("indices"); indices && indices->is_array()) {
      for (const auto& index : indices->as_array()) {
        if (index.is_string()) info.indices.push_back(Str(index.as_string()));
      }
    }
    if (const json::value* global = o.if_contains("include_global_state");
        global && global->is_bool()) {
      info.include_global_state = global->as_bool();
    }
    const json::object* shards = ObjectField(o, "shards");
    info.shards_total = IntField(shards, "total");
    info.shards_successful = IntField(shards, "successful");
    info.shards_failed = IntField(shards, "failed");
    if (const json::value* failures = o.if_contains("failures"); failures && failures->is_array()) {
      for (const auto& f : failures->as_array()) {
        if (!f.is_object()) continue;
        SnapshotShardFailure failure;
        failure.index = StringField(f.as_object(), "index");
        failure.shard_id =
            f.as_object().contains("shard_id") ? IntField(&f.as_object(), "shard_id") : -1;
        failure.reason = StringField(f.as_object(), "reason");
        info.failures.push_back(std::move(failure));
      }
    }
    info.reason = StringField(o, "reason");
    info.start_time_ms = IntField(&o, "start_time_in_millis");
    info.end_time_ms = IntField(&o, "end_time_in_millis");
    return info;
  }
  return absl::NotFoundError(
      StrCat("get snapshot: GET ", target, ": the response does not list [", snapshot, "]"));
}

absl::StatusOr<SnapshotInfo> SnapshotCreator::WaitForSnapshot(std::string_view snapshot,
                                                              core::IClock& clock,
                                                              const WaitOptions& options) {
  const auto start = clock.Now();
  int consecutive_errors = 0;
  for (int poll = 1;; ++poll) {
    auto progress = GetProgress(snapshot);
    std::optional<SnapshotInfo> info;
    if (progress.ok() && progress->state != SnapshotState::kInProgress) {
      // The status API reports PARTIAL as SUCCESS and carries no failures: take the final
      // state from the snapshot itself.
      auto fetched = GetSnapshot(snapshot);
      if (fetched.ok()) {
        info = *std::move(fetched);
        progress->state = info->state;
      } else {
        progress = fetched.status();
      }
    }
    if (!progress.ok()) {
      if (!core::IsRetryable(progress.status()) ||
          ++consecutive_errors >= std::max(1, options.max_consecutive_poll_errors)) {
        return progress.status();
      }
    } else {
      consecutive_errors = 0;
      progress->poll = poll;
      progress->elapsed =
          std::chrono::duration_cast<std::chrono::milliseconds>(clock.Now() - start);
      if (options.on_progress) options.on_progress(*progress);
      if (info && info->state != SnapshotState::kInProgress) {
        if (info->state == SnapshotState::kSuccess) return *std::move(info);
        std::string message = StrCat("snapshot [", repository_name_, ":", snapshot, "] ended ",
                                     SnapshotStateName(info->state), ": ", info->shards_failed,
                                     " of ", info->shards_total, " shards failed");
        if (!info->reason.empty()) message += StrCat("; reason: ", info->reason);
        if (!info->failures.empty()) message += StrCat("; ", DescribeFailures(info->failures, 10));
        return absl::FailedPreconditionError(message);
      }
    }
    const auto waited = clock.Now() - start;
    core::IClock::Duration sleep = options.poll_interval;
    if (options.timeout.count() > 0) {
      // One last poll at the deadline, then give up.
      sleep = std::min<core::IClock::Duration>(sleep, options.timeout - waited);
    }
    if (options.timeout.count() > 0 && waited >= options.timeout) {
      return absl::DeadlineExceededError(
          StrCat("snapshot [", repository_name_, ":", snapshot, "] did not finish within ",
                 options.timeout.count(), " ms (",
                 progress.ok() ? StrCat("last state ", progress->raw_state)
                               : std::string(progress.status().message()),
                 ")"));
    }
    clock.SleepFor(sleep);
  }
}

}  // namespace rfs::opensearch
