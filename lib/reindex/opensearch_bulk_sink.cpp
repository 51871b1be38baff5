// OpenSearchBulkSink: one `_bulk` request per batch (see document_sink.hpp).
#include "rfs/core/str_cat.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/document_sink.hpp"

namespace rfs::reindex {

OpenSearchBulkSink::OpenSearchBulkSink(opensearch::OpenSearchClient& client) : client_(client) {}

BulkActionOptions OpenSearchBulkSink::action_options() const {
  auto version = client_.GetVersion();
  return {.include_type = version.ok() && version->RequiresDocumentType()};
}

std::string OpenSearchBulkSink::description() const {
  return core::StrCat("OpenSearch bulk to ", client_.transport().endpoint());
}

absl::StatusOr<std::vector<ItemFailure>> OpenSearchBulkSink::Write(
    std::span<const SourceDocument* const> docs) {
  auto version = client_.GetVersion();
  if (!version.ok()) return version.status();
  const BulkActionOptions options{.include_type = version->RequiresDocumentType()};
  size_t bytes = 0;
  for (const SourceDocument* doc : docs) bytes += EstimateBulkBytes(*doc);
  std::string body;
  body.reserve(bytes);
  for (const SourceDocument* doc : docs) {
    AppendBulkAction(*doc, options, body);
    AppendSourceLine(*doc, body);
  }
  auto response = client_.Bulk(std::move(body), docs.size());
  if (!response.ok()) return response.status();
  std::vector<ItemFailure> failures;
  for (size_t i = 0; i < response->items.size(); ++i) {
    opensearch::BulkItemResult& item = response->items[i];
    if (item.ok()) continue;
    failures.push_back({i, item.status, std::move(item.error_type), std::move(item.error_reason)});
  }
  return failures;
}

}  // namespace rfs::reindex
