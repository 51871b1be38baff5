// Helpers shared by the reindex tests: document generators (and the shared TempDir).
#pragma once

#include <atomic>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rfs/core/json_string.hpp"
#include "rfs/reindex/bulk_format.hpp"
#include "rfs/reindex/source_document.hpp"

#include "support/temp_dir.hpp"
#include <unistd.h>

namespace rfs::reindex::testutil {

using TempDir = rfs::test::TempDir;

/// `count` documents in index `index` with ids "d<n>", cursors 1..count, and sources of about
/// `source_bytes` bytes; every fifth source is pretty-printed over several lines.
inline std::vector<SourceDocument> MakeDocs(size_t count, const std::string& index = "target",
                                            size_t source_bytes = 100) {
  std::vector<SourceDocument> docs;
  docs.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    SourceDocument doc;
    doc.index = index;
    doc.id = "d" + std::to_string(i);
    doc.cursor = i + 1;
    const std::string filler(source_bytes > 40 ? source_bytes - 40 : 1, 'x');
    if (i % 5 == 0) {
      doc.source = "{\n  \"n\": " + std::to_string(i) + ",\n  \"text\": \"" + filler + "\"\n}";
    } else {
      doc.source = "{\"n\":" + std::to_string(i) + ",\"text\":\"" + filler + "\"}";
    }
    docs.push_back(std::move(doc));
  }
  return docs;
}

/// Lays `docs` out as a reader lays them out (SourceDocument::rendered): `per_lines` documents to
/// each RenderedLines, action lines made with `options`. False when one cannot be laid out.
inline bool LayOut(std::span<SourceDocument> docs, size_t per_lines,
                   BulkActionOptions options = {}) {
  std::shared_ptr<RenderedLines> lines;
  for (size_t i = 0; i < docs.size(); ++i) {
    if (i % per_lines == 0) {
      lines = std::make_shared<RenderedLines>();
      lines->options = options;
    }
    const std::string source = std::move(docs[i].source);
    if (!AppendRenderedLines(docs[i], lines, [&](std::string& out) {
           core::AppendJsonOneLine(source, out);
           return absl::OkStatus();
         }).ok()) {
      return false;
    }
  }
  return true;
}

}  // namespace rfs::reindex::testutil
