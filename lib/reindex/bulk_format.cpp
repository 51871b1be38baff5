// Bulk NDJSON serialization. Runs once per document on the hot path, so it works on raw bytes:
// no JSON parse, one scan of the source for line breaks, and no allocation beyond growing `out`.
#include "rfs/reindex/bulk_format.hpp"

#include <string>

#include "rfs/core/json_string.hpp"

namespace rfs::reindex {
void AppendBulkAction(const SourceDocument& doc, const BulkActionOptions& options,
                      std::string& out) {
  switch (doc.op) {
    case BulkOp::kIndex:
      out.append(R"({"index":{"_index":)");
      break;
    case BulkOp::kCreate:
      out.append(R"({"create":{"_index":)");
      break;
    case BulkOp::kDelete:
      out.append(R"({"delete":{"_index":)");
      break;
  }
  AppendJsonString(doc.index, out);
  if (options.include_type) {
    out.append(R"(,"_type":)");
    AppendJsonString(doc.type ? *doc.type : std::string_view("_doc"), out);
  }
  out.append(R"(,"_id":)");
  AppendJsonString(doc.id, out);
  if (doc.routing) {
    out.append(R"(,"routing":)");
    AppendJsonString(*doc.routing, out);
  }
  if (doc.version) {
    out.append(R"(,"version":)");
    out.append(std::to_string(*doc.version));
    out.append(R"(,"version_type":"external")");
  }
  out.append("}}\n");
}

void AppendSourceLine(std::string_view source, std::string& out) {
  if (source.empty()) {
    out.append("{}\n");
    return;
  }
  core::AppendJsonOneLine(source, out);
  out.push_back('\n');
}

std::string_view SourceBytes(const SourceDocument& doc) {
  if (!doc.rendered) return doc.source;
  return std::string_view(doc.rendered->bytes)
      .substr(doc.rendered_source, doc.rendered_end - 1 - doc.rendered_source);
}

bool HasRenderedLines(const SourceDocument& doc, const BulkActionOptions& options) {
  return doc.rendered && doc.rendered->options.include_type == options.include_type;
}

void AppendSourceLine(const SourceDocument& doc, std::string& out) {
  if (doc.op == BulkOp::kDelete) return;  // a delete action has no source line
  const std::string_view source = SourceBytes(doc);
  if (!doc.one_line || source.empty()) return AppendSourceLine(source, out);
  out.append(source);
  out.push_back('\n');
}

size_t EstimateBulkBytes(const SourceDocument& doc) {
  // `{"index":{"_index":"","_id":""}}\n` is 33 bytes; routing and type add their own keys.
  size_t bytes = 33 + doc.index.size() + doc.id.size() + SourceSize(doc) + 1;
  if (doc.op == BulkOp::kCreate) bytes += 1;
  if (doc.routing) bytes += 13 + doc.routing->size();
  if (doc.type) bytes += 11 + doc.type->size();
  if (doc.version) bytes += 57;  // `,"version":<up to 20 characters>,"version_type":"external"`
  return bytes;
}

}  // namespace rfs::reindex
