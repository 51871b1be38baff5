// Helpers shared by the rfs::lucene tests: corpus location, Java
// .properties parsing, field formatting in the fixture manifests' notation.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/file_util.hpp"
#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "lucene/codecs/dispatch_internal.hpp"
#include "lucene/codecs/doc_values_internal.hpp"
#include "lucene/codecs/points_internal.hpp"
#include "lucene/codecs/stored_fields_reader_internal.hpp"
#include "lucene/codecs/terms_internal.hpp"
#include "lucene/codecs/vectors_internal.hpp"
#include "support/java_fixture.hpp"
#include "support/skip.hpp"
#include <unistd.h>

namespace rfs::lucene::testing {

inline std::filesystem::path CorpusDir() {
  return std::filesystem::path(RFS_SOURCE_DIR) / ".." / "shared" / "corpus";
}

/// True when the shared corpus is present; otherwise skips the test.
inline bool HaveCorpus() {
  if (std::filesystem::exists(CorpusDir() / "lucene-10.5-fixture-indexes")) {
    return true;
  }
  rfs::test::SkipTest("shared corpus not found at " + CorpusDir().string());
}

/// key=value lines; no escapes are used by the fixture manifests.
inline std::map<std::string, std::string> ReadProperties(const std::filesystem::path& path) {
  std::map<std::string, std::string> out;
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    out[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return out;
}

/// Java's Double.toString for the simple values the manifests use.
inline std::string JavaDouble(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e7) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "%.1f", v);
    return buf;
  }
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  // Shortest round-trip representation.
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof(buf), "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  return buf;
}

/// "name:type:value" as in the fixture manifests.
inline std::string FormatField(const std::string& name, const StoredField& f) {
  static const char* kHex = "0123456789abcdef";
  switch (f.type) {
    case StoredFieldType::kString:
      return name + ":string:" + std::string(f.string_value());
    case StoredFieldType::kBytes: {
      std::string hex;
      for (uint8_t b : f.bytes) {
        hex.push_back(kHex[b >> 4]);
        hex.push_back(kHex[b & 15]);
      }
      return name + ":binary:" + hex;
    }
    case StoredFieldType::kInt:
      return name + ":int:" + std::to_string(f.long_value);
    case StoredFieldType::kLong:
      return name + ":long:" + std::to_string(f.long_value);
    case StoredFieldType::kFloat:
      return name + ":float:" + JavaDouble(f.double_value);
    case StoredFieldType::kDouble:
      return name + ":double:" + JavaDouble(f.double_value);
  }
  return "";
}

/// An in-memory IDirectory whose files tests can corrupt.
class MemoryDirectory final : public core::IDirectory {
 public:
  static std::shared_ptr<MemoryDirectory> CopyOf(const std::filesystem::path& path) {
    auto dir = std::make_shared<MemoryDirectory>();
    for (const auto& entry : std::filesystem::directory_iterator(path)) {
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      dir->files[entry.path().filename().string()] =
          std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
    }
    return dir;
  }
  const std::string& description() const override { return description_; }
  std::vector<std::string> ListFiles() const override {
    std::vector<std::string> names;
    for (const auto& [name, bytes] : files) names.push_back(name);
    return names;
  }
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenFile(
      std::string_view name) const override {
    auto it = files.find(std::string(name));
    if (it == files.end()) return absl::NotFoundError(std::string(name));
    return std::shared_ptr<const core::IRandomAccessFile>(
        std::make_shared<core::MemoryFile>(it->first, it->second));
  }
  std::map<std::string, std::vector<uint8_t>> files;

 private:
  std::string description_ = "memory";
};

/// The directory of Lucene 8.7 test indices written by WriteLuceneIndex.java
/// (generated once per machine: CachedFixtureDir). Skips the test without Java or the jars; throws
/// when the writer fails.
inline std::optional<std::filesystem::path> Lucene8Indexes() {
#if defined(RFS_JAVA) && defined(RFS_LUCENE_WRITER_JAR) && defined(RFS_LUCENE8_INDEX_DIR)
  const std::filesystem::path dir = rfs::test::CachedFixtureDir(
      RFS_LUCENE8_INDEX_DIR,
      {std::string(RFS_SOURCE_DIR) + "/test/unit/lucene/java/rfs/lucenetest/WriteLuceneIndex.java",
       std::string(RFS_SOURCE_DIR) +
           "/test/unit/lucene/java/META-INF/services/org.apache.lucene.codecs.Codec"},
      {RFS_JAVA, RFS_LUCENE8_CORE_JAR});
  if (std::filesystem::exists(dir / "DONE")) return dir;
  // Write into a private folder, then rename: test processes may race.
  const std::filesystem::path tmp = dir.string() + ".tmp." + std::to_string(::getpid());
  std::filesystem::remove_all(tmp);
  const std::string command = std::string("'") + RFS_JAVA + "' -cp '" + RFS_LUCENE_WRITER_JAR +
                              ":" + RFS_LUCENE8_CORE_JAR + "' rfs.lucenetest.WriteLuceneIndex '" +
                              tmp.string() + "'";
  if (std::system(command.c_str()) != 0 || !std::filesystem::exists(tmp / "DONE")) {
    // A writer that fails where Java and the jars exist is a broken fixture, not a skip.
    throw std::runtime_error("the Lucene 8 index writer failed: " + command);
  }
  std::error_code ec;
  std::filesystem::rename(tmp, dir, ec);
  if (ec) std::filesystem::remove_all(tmp);  // another process won the race
  return dir;
#else
  rfs::test::SkipTest("Java or Debian's Lucene 8 jars were not found at configure time");
#endif
}

/// A one-segment index folder opened as the shard reader opens a segment: its segment and field
/// infos, and the readers of its doc values, vectors and points.
struct OneSegment {
  explicit OneSegment(const std::filesystem::path& path) {
    auto opened = rfs::core::LocalDirectory::Open(path.string());
    REQUIRE(opened.ok());
    dir = std::shared_ptr<const rfs::core::IDirectory>(*std::move(opened));
    auto read = rfs::lucene::ReadSegmentInfos(*dir);
    REQUIRE(read.ok());
    infos = *std::move(read);
    REQUIRE(infos.segments.size() == 1);
    auto read_fields = rfs::lucene::ReadFieldInfos(*dir, *dir, infos.segments[0]);
    REQUIRE(read_fields.ok());
    fields = *std::move(read_fields);
    doc_values = std::make_unique<internal::SegmentDocValues>(dir, dir, infos.segments[0], fields);
    vectors = std::make_unique<internal::SegmentVectors>(dir, infos.segments[0], fields);
    points = std::make_unique<internal::SegmentPoints>(dir, infos.segments[0], fields);
    terms = std::make_unique<internal::SegmentTerms>(dir, infos.segments[0], fields);
  }
  int32_t max_doc() const { return infos.segments[0].max_doc(); }

  std::shared_ptr<const rfs::core::IDirectory> dir;
  rfs::lucene::SegmentInfos infos;
  rfs::lucene::FieldInfos fields;
  std::unique_ptr<internal::SegmentDocValues> doc_values;
  std::unique_ptr<internal::SegmentVectors> vectors;
  std::unique_ptr<internal::SegmentPoints> points;
  std::unique_ptr<internal::SegmentTerms> terms;
};

/// Damages `file`: the byte in its middle is flipped (xor 0x5a).
inline void FlipMiddleByte(const std::filesystem::path& file) {
  const auto middle = static_cast<std::streamoff>(std::filesystem::file_size(file) / 2);
  std::fstream stream(file, std::ios::in | std::ios::out | std::ios::binary);
  stream.seekg(middle);
  char byte = 0;
  stream.read(&byte, 1);
  stream.seekp(middle);
  byte = static_cast<char>(byte ^ 0x5a);
  stream.write(&byte, 1);
  REQUIRE(stream.good());
}

/// The folder (`index/` and `expected.tsv`) that the single-file Java program `source` fills when
/// run by `java` with `jar` on its class path, generated once per machine (CachedFixtureDir). Java
/// and the jars are installed by scripts/install-deps: their absence fails the test.
inline std::filesystem::path JavaWrittenIndex(const std::filesystem::path& build_dir,
                                              const std::string& java, const std::string& jar,
                                              const std::string& source) {
  return rfs::test::JavaWrittenFixture(build_dir, java, jar, source, {}, "expected.tsv");
}

/// The folder WriteVectorIndex.java fills through Lucene `version`: by default the Lucene 9.12
/// that the real nodes run; else one of the Lucene 9.0-9.8 jars in the Maven repository
/// scripts/install-deps fills.
inline std::filesystem::path Lucene9VectorIndex(const std::string& version = "") {
  const std::string jar = version.empty() ? std::string(RFS_LUCENE9_CORE_JAR)
                                          : std::string(RFS_LUCENE9_OLD_JARS) +
                                                "/org/apache/lucene/lucene-core/" + version +
                                                "/lucene-core-" + version + ".jar";
  return JavaWrittenIndex(
      std::string(RFS_LUCENE9_VECTOR_DIR) + (version.empty() ? "" : "-" + version),
      RFS_JAVA_FOR_LUCENE9, jar, RFS_VECTOR_WRITER_SOURCE);
}

/// The folder WritePointsIndex.java fills through Lucene `major` (7: the 7.7.3 jar in
/// the Maven repository scripts/install-deps fills, 8: Debian's 8.7, 9 and 10: the real nodes' 9.12
/// and 10.5).
inline std::filesystem::path LucenePointsIndex(int major) {
  const std::string jar = major == 7
                              ? std::string(RFS_LUCENE9_OLD_JARS) +
                                    "/org/apache/lucene/lucene-core/7.7.3/lucene-core-7.7.3.jar"
                          : major == 8 ? std::string(RFS_LUCENE8_JAR_FOR_POINTS)
                          : major == 9 ? std::string(RFS_LUCENE9_CORE_JAR)
                                       : std::string(RFS_LUCENE10_CORE_JAR);
  return JavaWrittenIndex(std::string(RFS_LUCENE_POINTS_DIR) + "-" + std::to_string(major),
                          major <= 8 ? RFS_JAVA_DEFAULT : RFS_JAVA_FOR_LUCENE9, jar,
                          RFS_POINTS_WRITER_SOURCE);
}

/// The folder WriteTermsIndex.java fills through Lucene `version`: "8" (Debian's 8.7), "9" and
/// "10" (the real nodes' 9.12 and 10.5), or a release whose jar scripts/install-deps fetched into
/// the Maven repository scripts/install-deps fills (7.7.3, 9.0.0, 9.11.1, 10.2.2, 10.3.2).
inline std::filesystem::path LuceneTermsIndex(const std::string& version) {
  const std::string jar = version == "8"    ? std::string(RFS_LUCENE8_JAR_FOR_POINTS)
                          : version == "9"  ? std::string(RFS_LUCENE9_CORE_JAR)
                          : version == "10" ? std::string(RFS_LUCENE10_CORE_JAR)
                                            : std::string(RFS_LUCENE9_OLD_JARS) +
                                                  "/org/apache/lucene/lucene-core/" + version +
                                                  "/lucene-core-" + version + ".jar";
  const bool needs_new_java = version == "9" || version == "10" || version.starts_with("10.");
  return JavaWrittenIndex(std::string(RFS_LUCENE_TERMS_DIR) + "-" + version,
                          needs_new_java ? RFS_JAVA_FOR_LUCENE9 : RFS_JAVA_DEFAULT, jar,
                          RFS_TERMS_WRITER_SOURCE);
}

}  // namespace rfs::lucene::testing
