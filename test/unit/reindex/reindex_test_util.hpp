// Helpers shared by the reindex tests: document generators (and the shared TempDir).
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

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

}  // namespace rfs::reindex::testutil
