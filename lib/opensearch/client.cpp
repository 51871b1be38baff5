// OpenSearchClient (see opensearch_client.hpp). Request and response shapes follow OpenSearch's
// REST API specification (opensearch-project/opensearch-api-specification, spec/: namespaces/
// _core.yaml, indices.yaml, cluster.yaml; schemas/_core.bulk.yaml, _common.yaml
// ErrorResponseBase).
#include "rfs/opensearch/client.hpp"

#include <algorithm>
#include <charconv>

#include <boost/json.hpp>

#include "rfs/core/errors.hpp"
#include "rfs/core/json_text.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"
#include "rfs/net/encoding.hpp"
#include "rfs/net/gzip.hpp"
#include "rfs/net/http_status.hpp"

namespace rfs::opensearch {
namespace {

namespace json = boost::json;
using core::StrCat;
using net::ParseJson;

std::string Str(const json::string& s) { return std::string(s.data(), s.size()); }

int64_t IntOr(const json::object& o, std::string_view key, int64_t fallback) {
  const json::value* v = o.if_contains(json::string_view(key.data(), key.size()));
  if (v == nullptr) return fallback;
  if (v->is_int64()) return v->as_int64();
  if (v->is_uint64()) return static_cast<int64_t>(v->as_uint64());
  return fallback;
}

DocumentVersion VersionOf(const json::object& o) {
  return {IntOr(o, "_seq_no", -2), IntOr(o, "_primary_term", 0), IntOr(o, "_version", 0)};
}

std::string_view TemplatePath(TemplateKind kind) {
  switch (kind) {
    case TemplateKind::kLegacy:
      return "/_template/";
    case TemplateKind::kComponent:
      return "/_component_template/";
    case TemplateKind::kIndex:
      return "/_index_template/";
  }
  return "/_template/";
}

}  // namespace

absl::StatusOr<core::ClusterVersion> ParseClusterVersion(std::string_view body) {
  auto parsed = ParseJson(body);
  const json::value* version = nullptr;
  if (parsed && parsed->is_object()) version = parsed->as_object().if_contains("version");
  if (version == nullptr || !version->is_object()) {
    return absl::InvalidArgumentError("GET / did not return a cluster version");
  }
  const json::object& v = version->as_object();
  const json::value* number = v.if_contains("number");
  if (number == nullptr || !number->is_string()) {
    return absl::InvalidArgumentError("GET / did not return version.number");
  }
  core::ClusterVersion out;
  const std::string text = Str(number->as_string());
  int* parts[] = {&out.major, &out.minor, &out.patch};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int* part : parts) {
    auto [next, ec] = std::from_chars(p, end, *part);
    if (ec != std::errc()) break;
    p = next;
    if (p == end || *p != '.') break;
    ++p;
  }
  if (out.major == 0) {
    return absl::InvalidArgumentError(StrCat("unrecognised version number ", text));
  }
  const json::value* distribution = v.if_contains("distribution");
  out.product = distribution != nullptr && distribution->is_string() &&
                        distribution->as_string() == "opensearch"
                    ? core::ClusterVersion::Product::kOpenSearch
                    : core::ClusterVersion::Product::kElasticsearch;
  return out;
}

absl::StatusOr<BulkResponse> ParseBulkResponse(std::string_view body, size_t expected_items) {
  BulkResponse out;
  // OpenSearch writes "took" then "errors" first; when nothing failed, the items carry nothing
  // rfs needs, so skip parsing them (a 10k-item response is ~1 MB of JSON per batch).
  const std::string_view head = body.substr(0, 64);
  if (head.find("\"errors\":false") != std::string_view::npos && body.ends_with("}")) {
    return out;
  }
  auto parsed = ParseJson(body);
  if (!parsed || !parsed->is_object()) {
    return absl::DataLossError("bulk response is not a JSON object");
  }
  const json::object& root = parsed->as_object();
  const json::value* errors = root.if_contains("errors");
  const json::value* items = root.if_contains("items");
  if (errors == nullptr || !errors->is_bool() || items == nullptr || !items->is_array()) {
    return absl::DataLossError("bulk response lacks errors/items");
  }
  out.errors = errors->as_bool();
  if (!out.errors) return out;
  if (items->as_array().size() != expected_items) {
    return absl::DataLossError(StrCat("bulk response has ", items->as_array().size(), " items for ",
                                      expected_items, " actions"));
  }
  out.items.reserve(expected_items);
  for (const json::value& item : items->as_array()) {
    if (!item.is_object() || item.as_object().size() != 1 ||
        !item.as_object().begin()->value().is_object()) {
      return absl::DataLossError("malformed bulk response item");
    }
    const json::object& result = item.as_object().begin()->value().as_object();
    BulkItemResult r;
    r.status = static_cast<int>(IntOr(result, "status", 0));
    if (const json::value* error = result.if_contains("error")) {
      if (error->is_object()) {
        if (const auto* t = error->as_object().if_contains("type"); t && t->is_string()) {
          r.error_type = Str(t->as_string());
        }
        if (const auto* reason = error->as_object().if_contains("reason");
            reason && reason->is_string()) {
          r.error_reason = Str(reason->as_string());
        }
      } else {
        r.error_type = "error";
        r.error_reason = core::JsonText(*error);
      }
    }
    out.items.push_back(std::move(r));
  }
  return out;
}

namespace {

std::string StringField(const json::object& o, std::string_view key) {
  const json::value* v = o.if_contains(json::string_view(key.data(), key.size()));
  return v != nullptr && v->is_string() ? Str(v->as_string()) : std::string();
}

// "type: reason (caused by: ...)" of one error object, causes nested at most `depth` deep.
std::string ErrorDetail(const json::object& error, int depth) {
  std::string out = StringField(error, "type");
  const std::string reason = StringField(error, "reason");
  if (!reason.empty()) out += StrCat(out.empty() ? "" : ": ", reason);
  const json::value* cause = error.if_contains("caused_by");
  if (depth > 0 && cause != nullptr && cause->is_object()) {
    const std::string inner = ErrorDetail(cause->as_object(), depth - 1);
    if (!inner.empty()) out += StrCat(" (caused by: ", inner, ")");
  }
  return out;
}

}  // namespace

ErrorInfo ParseErrorBody(std::string_view body) {
  ErrorInfo info;
  auto parsed = ParseJson(body);
  if (!parsed || !parsed->is_object()) return info;
  const json::value* error = parsed->as_object().if_contains("error");
  if (error == nullptr) return info;
  if (error->is_string()) {
    info.detail = Str(error->as_string());
  } else if (error->is_object()) {
    info.type = StringField(error->as_object(), "type");
    info.reason = StringField(error->as_object(), "reason");
    info.detail = ErrorDetail(error->as_object(), /*depth=*/4);
  }
  return info;
}

net::HttpRequest JsonRequest(std::string method, std::string target, std::string body) {
  net::HttpRequest request;
  request.method = std::move(method);
  request.target = std::move(target);
  if (!body.empty()) request.headers.emplace_back("Content-Type", "application/json");
  request.body = std::move(body);
  return request;
}

absl::Status StatusFromResponse(const net::HttpResponse& response, std::string_view what) {
  const int status = response.status;
  if (status >= 200 && status < 300) return absl::OkStatus();
  const ErrorInfo error = ParseErrorBody(response.body);
  const std::string message =
      StrCat(what, ": HTTP ", status, error.detail.empty() ? "" : " ", error.detail);
  // A block on the cluster or an index (ClusterBlockException: cluster.blocks.read_only,
  // index.blocks.write, ...) refuses writes with 403 until it is lifted: transient, retried with
  // backoff like a 503, not a permission the caller lacks.
  if (status == 403 && error.type == "cluster_block_exception") {
    return absl::UnavailableError(message);
  }
  return net::StatusFromHttp(status, message);
}

std::string EncodePathSegment(std::string_view segment) {
  return net::PercentEncode(segment, /*keep_slash=*/false);
}

OpenSearchClient::OpenSearchClient(net::IHttpTransport& transport, OpenSearchClientOptions options)
    : transport_(transport), options_(options) {}

absl::StatusOr<net::HttpResponse> OpenSearchClient::Send(net::HttpRequest request) {
  return SendKeeping(request);
}

absl::StatusOr<net::HttpResponse> OpenSearchClient::SendKeeping(net::HttpRequest& request) {
  if (request.timeout.count() == 0) request.timeout = options_.request_timeout;
  auto response = transport_.Send(request);
  if (!response.ok()) {
    // The transport's payloads (a failure no retry can fix) stay with the status.
    return core::WithContext(response.status(), StrCat(request.method, " ", request.target, " on ",
                                                       transport_.endpoint()));
  }
  return response;
}

absl::StatusOr<int64_t> OpenSearchClient::GetClusterEpochSeconds() {
  const std::string target = "/_cat/health?format=json";
  auto response = Send(JsonRequest("GET", target));
  if (!response.ok()) return response.status();
  absl::Status status = StatusFromResponse(*response, StrCat("GET ", target));
  if (!status.ok()) return status;
  auto parsed = ParseJson(response->body);
  const json::value* epoch = nullptr;
  if (parsed && parsed->is_array() && !parsed->as_array().empty() &&
      parsed->as_array()[0].is_object()) {
    epoch = parsed->as_array()[0].as_object().if_contains("epoch");
  }
  int64_t seconds = -1;
  if (epoch != nullptr && epoch->is_string()) {
    const json::string& text = epoch->as_string();
    auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), seconds);
    if (ec != std::errc() || end != text.data() + text.size()) seconds = -1;
  } else if (epoch != nullptr && epoch->is_int64()) {
    seconds = epoch->as_int64();
  } else if (epoch != nullptr && epoch->is_uint64()) {
    seconds = static_cast<int64_t>(epoch->as_uint64());
  }
  if (seconds <= 0) {
    return absl::DataLossError(StrCat("GET ", target, " on ", transport_.endpoint(),
                                      ": no epoch in ", response->body.substr(0, 200)));
  }
  return seconds;
}

absl::StatusOr<core::ClusterVersion> OpenSearchClient::GetVersion() {
  {
    std::lock_guard lock(mu_);
    if (version_) return *version_;
  }
  absl::Status detected = Detect();
  if (!detected.ok()) return detected;
  std::lock_guard lock(mu_);
  return *version_;
}

absl::StatusOr<bool> OpenSearchClient::CompressionActive() {
  auto version = GetVersion();
  if (!version.ok()) return version.status();
  std::lock_guard lock(mu_);
  return compression_active_;
}

absl::Status OpenSearchClient::Detect() {
  auto response = Send(JsonRequest("GET", "/"));
  if (!response.ok()) return response.status();
  absl::Status status = StatusFromResponse(*response, StrCat("GET / on ", transport_.endpoint()));
  if (!status.ok()) return status;
  auto version = ParseClusterVersion(response->body);
  if (!version.ok()) {
    return core::WithContext(version.status(), transport_.endpoint());
  }
  // Gzip request bodies: OpenSearch and Elasticsearch >= 6 decompress them (AWS documents the
  // same floor). Honour an explicit http.compression=false when the settings are readable.
  bool compression = options_.compression && (version->opensearch() || version->major >= 6);
  if (compression) {
    auto settings = GetClusterSettings(/*include_defaults=*/true);
    if (settings.ok()) {
      for (const char* scope : {"transient", "persistent", "defaults"}) {
        const json::value* s = settings->if_contains(scope);
        if (s == nullptr || !s->is_object()) continue;
        if (const json::value* v = s->as_object().if_contains("http.compression")) {
          if (v->is_string()) compression = v->as_string() != "false";
          if (v->is_bool()) compression = v->as_bool();
          break;
        }
      }
    }
  }
  std::lock_guard lock(mu_);
  version_ = *version;
  compression_active_ = compression;
  return absl::OkStatus();
}

absl::StatusOr<json::object> OpenSearchClient::GetClusterSettings(bool include_defaults) {
  const std::string target = StrCat("/_cluster/settings?flat_settings=true",
                                    include_defaults ? "&include_defaults=true" : "");
  auto response = Send(JsonRequest("GET", target));
  if (!response.ok()) return response.status();
  absl::Status status = StatusFromResponse(*response, StrCat("GET ", target));
  if (!status.ok()) return status;
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object()) {
    return absl::DataLossError("GET /_cluster/settings returned no JSON object");
  }
  return parsed->as_object();
}

absl::Status OpenSearchClient::PutClusterSettings(const json::object& body) {
  auto response = Send(JsonRequest("PUT", "/_cluster/settings", core::JsonText(body)));
  if (!response.ok()) return response.status();
  return StatusFromResponse(*response, "PUT /_cluster/settings");
}

absl::StatusOr<bool> OpenSearchClient::Exists(const std::string& target, const char* method) {
  auto response = Send(JsonRequest(method, target));
  if (!response.ok()) return response.status();
  if (response->status == 404) return false;
  absl::Status status = StatusFromResponse(*response, StrCat(method, " ", target));
  if (!status.ok()) return status;
  return true;
}

absl::StatusOr<bool> OpenSearchClient::Create(const std::string& target, std::string body) {
  auto response = Send(JsonRequest("PUT", target, std::move(body)));
  if (!response.ok()) return response.status();
  if (response->status == 400 &&
      ParseErrorBody(response->body).type == "resource_already_exists_exception") {
    return false;
  }
  absl::Status status = StatusFromResponse(*response, StrCat("PUT ", target));
  if (!status.ok()) return status;
  return true;
}

absl::StatusOr<bool> OpenSearchClient::IndexExists(std::string_view index) {
  return Exists(StrCat("/", EncodePathSegment(index)));
}

absl::StatusOr<bool> OpenSearchClient::CreateIndex(std::string_view index,
                                                   const json::object& body) {
  return Create(StrCat("/", EncodePathSegment(index)), core::JsonText(body));
}

absl::StatusOr<bool> OpenSearchClient::TemplateExists(TemplateKind kind, std::string_view name) {
  return Exists(StrCat(TemplatePath(kind), EncodePathSegment(name)));
}

absl::Status OpenSearchClient::PutTemplate(TemplateKind kind, std::string_view name,
                                           const json::object& body) {
  const std::string target = StrCat(TemplatePath(kind), EncodePathSegment(name));
  auto response = Send(JsonRequest("PUT", target, core::JsonText(body)));
  if (!response.ok()) return response.status();
  return StatusFromResponse(*response, StrCat("PUT ", target));
}

absl::StatusOr<bool> OpenSearchClient::DataStreamExists(std::string_view name) {
  // HEAD /<name> would also answer for an index or alias of that name; so would the status of
  // GET /_data_stream/<name>, which OpenSearch answers 200 with no stream for an index's name.
  auto uuids = DataStreamIndexUuids(name);
  if (!uuids.ok()) return uuids.status();
  return uuids->has_value();
}

absl::StatusOr<bool> OpenSearchClient::CreateDataStream(std::string_view name) {
  return Create(StrCat("/_data_stream/", EncodePathSegment(name)), "");
}

absl::StatusOr<std::vector<std::string>> OpenSearchClient::IndexUuids(std::string_view name) {
  // Only the uuids: a large mapping is not fetched twice per work item.
  const std::string target =
      StrCat("/", EncodePathSegment(name), "?filter_path=*.settings.index.uuid");
  auto response = Send(JsonRequest("GET", target));
  if (!response.ok()) return response.status();
  if (response->status == 404) return std::vector<std::string>();
  RFS_RETURN_IF_ERROR(StatusFromResponse(*response, StrCat("GET ", target)));
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object()) {
    return absl::DataLossError(StrCat("GET ", target, " returned no JSON object"));
  }
  // {"<index>": {"settings": {"index": {"uuid": "..."}}}, ...}
  std::vector<std::string> uuids;
  for (const auto& [index, entry] : parsed->as_object()) {
    const json::value* uuid = nullptr;
    if (const json::object* e = entry.if_object()) {
      if (const json::value* settings = e->if_contains("settings");
          settings && settings->is_object()) {
        if (const json::value* idx = settings->as_object().if_contains("index");
            idx && idx->is_object()) {
          uuid = idx->as_object().if_contains("uuid");
        }
      }
    }
    if (uuid == nullptr || !uuid->is_string()) {
      return absl::DataLossError(StrCat("GET ", target, ": index ", std::string_view(index),
                                        " without settings.index.uuid"));
    }
    uuids.push_back(Str(uuid->as_string()));
  }
  std::sort(uuids.begin(), uuids.end());
  return uuids;
}

absl::StatusOr<std::optional<std::vector<std::string>>> OpenSearchClient::DataStreamIndexUuids(
    std::string_view name) {
  auto version = GetVersion();
  if (!version.ok()) return version.status();
  if (!version->SupportsDataStreams()) return std::nullopt;
  const std::string target = StrCat("/_data_stream/", EncodePathSegment(name));
  auto response = Send(JsonRequest("GET", target));
  if (!response.ok()) return response.status();
  if (response->status == 404) return std::nullopt;
  RFS_RETURN_IF_ERROR(StatusFromResponse(*response, StrCat("GET ", target)));
  auto parsed = ParseJson(response->body);
  // {"data_streams": [{"name", "indices": [{"index_name", "index_uuid"}], ...}]} (OpenSearch
  // GetDataStreamAction.Response; Elasticsearch's has the same fields).
  const json::value* streams =
      parsed && parsed->is_object() ? parsed->as_object().if_contains("data_streams") : nullptr;
  if (streams == nullptr || !streams->is_array()) {
    return absl::DataLossError(StrCat("GET ", target, " returned no data_streams"));
  }
  for (const json::value& stream : streams->as_array()) {
    const json::object* s = stream.if_object();
    const json::value* stream_name = s ? s->if_contains("name") : nullptr;
    if (stream_name == nullptr || !stream_name->is_string() || stream_name->as_string() != name) {
      continue;
    }
    std::vector<std::string> uuids;
    if (const json::value* indices = s->if_contains("indices"); indices && indices->is_array()) {
      for (const json::value& index : indices->as_array()) {
        const json::value* uuid =
            index.is_object() ? index.as_object().if_contains("index_uuid") : nullptr;
        if (uuid != nullptr && uuid->is_string()) uuids.push_back(Str(uuid->as_string()));
      }
    }
    std::sort(uuids.begin(), uuids.end());
    return uuids;
  }
  return std::nullopt;
}

absl::StatusOr<BulkResponse> OpenSearchClient::Bulk(std::string body, size_t action_count) {
  auto compress = CompressionActive();
  if (!compress.ok()) return compress.status();
  if (!*compress) return BulkKeepingBody(body, false, action_count);
  auto gzipped = net::GzipCompress(body);
  if (!gzipped.ok()) return gzipped.status();
  std::string().swap(body);  // not held beside the compressed body while it is sent
  return BulkKeepingBody(*gzipped, true, action_count);
}

absl::StatusOr<BulkResponse> OpenSearchClient::BulkGzipped(std::string gzipped_body,
                                                           size_t action_count) {
  return BulkKeepingBody(gzipped_body, true, action_count);
}

namespace {

// Only what ParseBulkResponse reads. A real node's item carries its index, `_id`, `_version`,
// result, shard counts, `_seq_no` and `_primary_term` besides its status: about 170 bytes, 26
// with the filter, so that the answer to a bulk of small documents is no longer about as large
// as the bulk itself (and larger than its gzipped body), held whole on every connection.
constexpr std::string_view kFilteredBulkTarget =
    "/_bulk?filter_path=errors,items.*.status,items.*.error";

// A target that takes no `filter_path` (OpenSearch: "request [/_bulk] contains unrecognized
// parameter: [filter_path]"; a gateway in front of one may word it otherwise). A bulk refused
// whole with 400 names no query parameter for any other reason.
bool RefusesFilterPath(const net::HttpResponse& response) {
  return response.status == 400 && response.body.find("filter_path") != std::string::npos;
}

}  // namespace

absl::StatusOr<net::HttpResponse> OpenSearchClient::SendBulk(net::HttpRequest& request) {
  const bool filtered = !bulk_filter_refused_.load(std::memory_order_relaxed);
  request.target = filtered ? std::string(kFilteredBulkTarget) : std::string("/_bulk");
  auto response = SendKeeping(request);
  if (filtered && response.ok() && RefusesFilterPath(*response)) {
    bulk_filter_refused_.store(true, std::memory_order_relaxed);
    request.target = "/_bulk";
    response = SendKeeping(request);
  }
  return response;
}

absl::StatusOr<BulkResponse> OpenSearchClient::BulkKeepingBody(std::string& body, bool gzipped,
                                                               size_t action_count) {
  net::HttpRequest request;
  request.method = "POST";
  request.headers.emplace_back("Content-Type", "application/x-ndjson");
  if (gzipped) request.headers.emplace_back("Content-Encoding", "gzip");
  request.body = std::move(body);
  auto response = SendBulk(request);
  body = std::move(request.body);
  if (!response.ok()) return response.status();
  absl::Status status =
      StatusFromResponse(*response, StrCat("POST /_bulk on ", transport_.endpoint()));
  if (!status.ok()) return status;
  return ParseBulkResponse(response->body, action_count);
}

absl::StatusOr<BulkResponse> OpenSearchClient::BulkPieces(std::span<const std::string_view> pieces,
                                                          size_t action_count) {
  net::HttpRequest request;
  request.method = "POST";
  request.headers.emplace_back("Content-Type", "application/x-ndjson");
  request.body_pieces.assign(pieces.begin(), pieces.end());
  auto response = SendBulk(request);
  if (!response.ok()) return response.status();
  absl::Status status =
      StatusFromResponse(*response, StrCat("POST /_bulk on ", transport_.endpoint()));
  if (!status.ok()) return status;
  return ParseBulkResponse(response->body, action_count);
}

absl::Status OpenSearchClient::Refresh(std::string_view index) {
  const std::string target =
      index.empty() ? "/_refresh" : StrCat("/", EncodePathSegment(index), "/_refresh");
  auto response = Send(JsonRequest("POST", target));
  if (!response.ok()) return response.status();
  return StatusFromResponse(*response, StrCat("POST ", target));
}

absl::StatusOr<json::object> OpenSearchClient::GetIndexSettings(std::string_view index,
                                                                std::string_view names) {
  std::string target =
      StrCat("/", index.empty() ? std::string("_all") : EncodePathSegment(index), "/_settings");
  if (!names.empty()) target += StrCat("/", net::PercentEncode(names, /*keep_slash=*/false));
  target += "?flat_settings=true";
  auto response = Send(JsonRequest("GET", target));
  if (!response.ok()) return response.status();
  RFS_RETURN_IF_ERROR(StatusFromResponse(*response, StrCat("GET ", target)));
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object()) {
    return absl::DataLossError(StrCat("GET ", target, " returned no JSON object"));
  }
  return std::move(parsed->as_object());
}

absl::Status OpenSearchClient::UpdateIndexSettings(std::string_view index,
                                                   const json::object& settings) {
  const std::string target = StrCat("/", EncodePathSegment(index), "/_settings");
  auto response = Send(JsonRequest("PUT", target, core::JsonText(settings)));
  if (!response.ok()) return response.status();
  return StatusFromResponse(*response, StrCat("PUT ", target));
}

absl::StatusOr<uint64_t> OpenSearchClient::Count(std::string_view index,
                                                 const json::object& query) {
  const std::string target = StrCat("/", EncodePathSegment(index), "/_count");
  std::string body;
  if (!query.empty()) body = core::JsonText(json::object{{"query", query}});
  auto response = Send(JsonRequest(body.empty() ? "GET" : "POST", target, body));
  if (!response.ok()) return response.status();
  absl::Status status = StatusFromResponse(*response, StrCat("count ", target));
  if (!status.ok()) return status;
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object()) return absl::DataLossError("malformed _count response");
  const int64_t count = IntOr(parsed->as_object(), "count", -1);
  if (count < 0) return absl::DataLossError("_count response without count");
  return static_cast<uint64_t>(count);
}

absl::StatusOr<std::optional<StoredDocument>> OpenSearchClient::GetDocument(
    std::string_view index, std::string_view id, const std::optional<std::string>& routing) {
  std::string target = StrCat("/", EncodePathSegment(index), "/_doc/", EncodePathSegment(id));
  // A document with custom routing lives on the shard its routing picks: fetched without it,
  // it may be "not found".
  if (routing) target += StrCat("?routing=", EncodePathSegment(*routing));
  auto response = Send(JsonRequest("GET", target));
  if (!response.ok()) return response.status();
  auto parsed = ParseJson(response->body);
  if (response->status == 404 && parsed && parsed->is_object() &&
      parsed->as_object().contains("found")) {
    return std::optional<StoredDocument>();
  }
  absl::Status status = StatusFromResponse(*response, StrCat("GET ", target));
  if (!status.ok()) return status;
  if (!parsed || !parsed->is_object()) return absl::DataLossError("malformed GET response");
  const json::object& o = parsed->as_object();
  StoredDocument doc;
  doc.id = std::string(id);
  doc.version = VersionOf(o);
  if (const json::value* source = o.if_contains("_source")) doc.source = core::JsonText(*source);
  return std::optional<StoredDocument>(std::move(doc));
}

absl::StatusOr<PutDocumentResult> OpenSearchClient::PutDocument(std::string_view index,
                                                                std::string_view id,
                                                                std::string_view source_json,
                                                                const PutDocumentOptions& options) {
  std::string target = StrCat("/", EncodePathSegment(index), "/_doc/", EncodePathSegment(id));
  char separator = '?';
  auto add_param = [&](std::string_view name, std::string_view value) {
    target += StrCat(std::string_view(&separator, 1), name, "=", value);
    separator = '&';
  };
  if (options.if_seq_no) add_param("if_seq_no", std::to_string(*options.if_seq_no));
  if (options.if_primary_term) {
    add_param("if_primary_term", std::to_string(*options.if_primary_term));
  }
  if (options.create_only) add_param("op_type", "create");
  if (!options.refresh.empty()) add_param("refresh", options.refresh);
  auto response = Send(JsonRequest("PUT", target, std::string(source_json)));
  if (!response.ok()) return response.status();
  PutDocumentResult result;
  if (response->status == 409) {
    result.outcome = PutDocumentResult::Outcome::kVersionConflict;
    return result;
  }
  absl::Status status = StatusFromResponse(*response, StrCat("PUT ", target));
  if (!status.ok()) return status;
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object()) return absl::DataLossError("malformed PUT response");
  result.version = VersionOf(parsed->as_object());
  const json::value* r = parsed->as_object().if_contains("result");
  result.outcome = r != nullptr && r->is_string() && r->as_string() == "updated"
                       ? PutDocumentResult::Outcome::kUpdated
                       : PutDocumentResult::Outcome::kCreated;
  return result;
}

absl::StatusOr<std::vector<MultiGetResult>> OpenSearchClient::MultiGet(
    std::span<const MultiGetRequest> docs) {
  json::array wanted;
  wanted.reserve(docs.size());
  for (const MultiGetRequest& doc : docs) {
    json::object entry{{"_index", doc.index}, {"_id", doc.id}};
    // A document with custom routing lives on the shard its routing picks.
    if (doc.routing) entry["routing"] = *doc.routing;
    wanted.emplace_back(std::move(entry));
  }
  auto response = Send(
      JsonRequest("POST", "/_mget", core::JsonText(json::object{{"docs", std::move(wanted)}})));
  if (!response.ok()) return response.status();
  RFS_RETURN_IF_ERROR(StatusFromResponse(*response, "POST /_mget"));
  // Sources may nest deeper than API answers do (objects of a field not mapped, say).
  auto parsed = ParseJson(response->body, /*max_depth=*/512);
  json::value* list = nullptr;
  if (parsed && parsed->is_object()) list = parsed->as_object().if_contains("docs");
  if (list == nullptr || !list->is_array() || list->as_array().size() != docs.size()) {
    return absl::DataLossError(StrCat("POST /_mget on ", transport_.endpoint(),
                                      ": the answer holds ",
                                      list && list->is_array() ? list->as_array().size() : 0,
                                      " documents for the ", docs.size(), " asked for"));
  }
  std::vector<MultiGetResult> out(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) {
    json::value& item = list->as_array()[i];
    if (!item.is_object()) return absl::DataLossError("POST /_mget: a document is no object");
    json::object& o = item.as_object();
    MultiGetResult& result = out[i];
    if (const json::value* error = o.if_contains("error")) {
      if (error->is_object()) {
        if (const auto* type = error->as_object().if_contains("type"); type && type->is_string())
          result.error_type = Str(type->as_string());
        if (const auto* reason = error->as_object().if_contains("reason");
            reason && reason->is_string())
          result.error_reason = Str(reason->as_string());
      } else {
        result.error_type = "error";
        result.error_reason = core::JsonText(*error);
      }
      continue;
    }
    const json::value* found = o.if_contains("found");
    result.found = found != nullptr && found->is_bool() && found->as_bool();
    result.version = IntOr(o, "_version", 0);
    if (json::value* source = o.if_contains("_source")) result.source = std::move(*source);
  }
  return out;
}

absl::StatusOr<SourceMapping> OpenSearchClient::GetSourceMapping(std::string_view index) {
  const std::string target = StrCat("/", EncodePathSegment(index), "/_mapping");
  auto response = Send(JsonRequest("GET", target));
  if (!response.ok()) return response.status();
  RFS_RETURN_IF_ERROR(StatusFromResponse(*response, StrCat("GET ", target)));
  auto parsed = ParseJson(response->body);
  if (!parsed || !parsed->is_object()) return absl::DataLossError("malformed _mapping response");
  SourceMapping out;
  auto note = [&](std::string words) {
    if (out.described.find(words) == std::string::npos) {
      out.described += StrCat(out.described.empty() ? "" : ", ", words);
    }
  };
  // {"<index>":{"mappings":{"_source":{...}}}}; Elasticsearch 6 nests it under the type.
  auto look = [&](const json::object& mappings) {
    const json::value* source = mappings.if_contains("_source");
    if (source == nullptr || !source->is_object()) return;
    const json::object& s = source->as_object();
    if (const auto* enabled = s.if_contains("enabled");
        enabled && enabled->is_bool() && !enabled->as_bool()) {
      out.disabled = true;
      note("_source.enabled false");
    }
    for (const char* key : {"includes", "excludes", "include", "exclude"}) {
      const json::value* list = s.if_contains(key);
      if (list == nullptr || (list->is_array() && list->as_array().empty())) continue;
      out.filtered = true;
      note(StrCat("_source.", key, " ", core::JsonText(*list)));
    }
  };
  for (const auto& [name, body] : parsed->as_object()) {
    if (!body.is_object()) continue;
    const json::value* mappings = body.as_object().if_contains("mappings");
    if (mappings == nullptr || !mappings->is_object()) continue;
    look(mappings->as_object());
    for (const auto& [type, typed] : mappings->as_object()) {
      if (typed.is_object() && typed.as_object().contains("_source") &&
          !mappings->as_object().contains("properties")) {
        look(typed.as_object());
      }
    }
  }
  return out;
}

absl::StatusOr<SearchResult> OpenSearchClient::Search(std::string_view index, json::object body) {
  const std::string target = StrCat("/", EncodePathSegment(index), "/_search");
  body["seq_no_primary_term"] = true;
  auto response = Send(JsonRequest("POST", target, core::JsonText(body)));
  if (!response.ok()) return response.status();
  absl::Status status = StatusFromResponse(*response, StrCat("POST ", target));
  if (!status.ok()) return status;
  auto parsed = ParseJson(response->body);
  const json::value* hits = nullptr;
  if (parsed && parsed->is_object()) hits = parsed->as_object().if_contains("hits");
  if (hits == nullptr || !hits->is_object())
    return absl::DataLossError("malformed _search response");
  SearchResult result;
  if (const json::value* total = hits->as_object().if_contains("total")) {
    if (total->is_object()) {
      result.total = static_cast<uint64_t>(IntOr(total->as_object(), "value", 0));
    } else if (total->is_int64()) {
      result.total = static_cast<uint64_t>(total->as_int64());  // Elasticsearch 6 and older
    }
  }
  if (const json::value* list = hits->as_object().if_contains("hits"); list && list->is_array()) {
    for (const json::value& hit : list->as_array()) {
      if (!hit.is_object()) continue;
      const json::object& h = hit.as_object();
      StoredDocument doc;
      if (const auto* id = h.if_contains("_id"); id && id->is_string())
        doc.id = Str(id->as_string());
      doc.version = VersionOf(h);
      if (const json::value* source = h.if_contains("_source")) {
        doc.source = core::JsonText(*source);
      }
      std::string hit_index;
      if (const auto* i = h.if_contains("_index"); i && i->is_string())
        hit_index = Str(i->as_string());
      result.hits.push_back(std::move(doc));
      result.hit_indices.push_back(std::move(hit_index));
    }
  }
  return result;
}

}  // namespace rfs::opensearch
