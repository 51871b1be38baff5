// Helpers shared by the reindex tests: a temporary folder and document generators.
#pragma once

#include <atomic>
#include <filesystem>
#include <string>
#include <vector>

#include "rfs/reindex/source_document.hpp"

#include <unistd.h>

namespace rfs::reindex::testutil {

/// A fresh folder under the system temp dir, removed with its contents on destruction.
class TempDir {
 public:
  TempDir() {
    static std::atomic<int> counter{0};
    path_ =
        std::filesystem::temp_directory_path() / ("rfs-reindex-test-" + std::to_string(::getpid()) +
                                                  "-" + std::to_string(counter.fetch_add(1)));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }

 private:
  std::filesystem::path path_;
};

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
