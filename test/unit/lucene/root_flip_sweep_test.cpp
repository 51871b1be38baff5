// No silent wrong results from the repository root: one changed byte anywhere in a root file
// (index-N, index.latest, snap-*.dat, meta-*.dat, the ES 1.x/2.x `index`) must give an error or
// exactly what the intact repository gives: the same newest snapshot, the same indices with the
// same metadata, every live document the same, the same templates. index-N is unchecksummed JSON,
// so this holds only because every fact of it that decides what is read is checked against the
// checksummed blobs. Also: a missing index-N that index.latest names, a missing global-metadata
// blob of a snapshot taken with the global state, and an index renamed in index-N.
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/core/str_cat.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/corpus.hpp"
#include "support/flipping_repo.hpp"
#include "support/generated_repo.hpp"
#include "support/temp_dir.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;
using rfs::core::StrCat;
using rfs::snapshot::ISourceRepo;
using rfs::snapshot::SnapshotRepository;

// The templates of `snapshot`, or "no global state".
absl::StatusOr<std::string> Templates(const SnapshotRepository& repository,
                                      const rfs::snapshot::SnapshotEntry& snapshot) {
  auto global = repository.ReadGlobalMetadata(snapshot);
  if (absl::IsNotFound(global.status())) return std::string("no global state\n");
  if (!global.ok()) return global.status();
  return StrCat(json::serialize(global->legacy_templates), "\n",
                json::serialize(global->component_templates), "\n",
                json::serialize(global->index_templates), "\n");
}

enum class Read { kEverything, kTemplatesOnly, kWithoutTemplates };

// Global-metadata blob name -> its templates as Templates() prints them, read from the intact
// repository. A change of another root file cannot change what an intact global-metadata blob
// decodes to, only which blob is read (the name is looked up again each time), so the sweep
// decodes the 80-137 KB blobs once instead of once per change.
using TemplatesByBlob = std::map<std::string, std::string>;

// The global-metadata blob a snapshot names (SnapshotRepository's rule: ES 1.x
// `metadata-<name>`, ES 2.x `meta-<name>.dat`, later `meta-<uuid>.dat`).
std::string GlobalMetadataBlob(const SnapshotRepository& repository,
                               const rfs::snapshot::SnapshotEntry& snapshot) {
  switch (repository.layout()) {
    case rfs::snapshot::RepositoryLayout::kEs1:
      return StrCat("metadata-", snapshot.name);
    case rfs::snapshot::RepositoryLayout::kEs2:
      return StrCat("meta-", snapshot.name, ".dat");
    case rfs::snapshot::RepositoryLayout::kModern:
      break;
  }
  return StrCat("meta-", snapshot.uuid, ".dat");
}

// Everything a migration reads from the repository, as text: the newest snapshot's name, then per
// snapshot its indices (metadata and every live document of each index a migration selects by
// default: not the system ones) and templates. kTemplatesOnly reads only the templates (what a
// global-metadata blob decides). The first error ends it.
absl::StatusOr<std::string> ReadEverything(std::shared_ptr<const ISourceRepo> repo,
                                           const std::vector<std::string>& snapshot_names,
                                           Read what, const TemplatesByBlob* intact = nullptr) {
  const bool templates_only = what == Read::kTemplatesOnly;
  auto repository = SnapshotRepository::Open(std::move(repo));
  if (!repository.ok()) return repository.status();
  std::string out;
  if (!templates_only) {
    auto latest = (*repository)->LatestSnapshot();
    if (!latest.ok()) return latest.status();
    out += StrCat("newest ", (*latest)->name, "\n");
  }
  for (const auto& name : snapshot_names) {
    auto snapshot = (*repository)->FindSnapshot(name);
    if (!snapshot.ok()) return snapshot.status();
    out += StrCat("snapshot ", name, "\n");
    const auto cached = intact == nullptr
                            ? TemplatesByBlob::const_iterator{}
                            : intact->find(GlobalMetadataBlob(**repository, **snapshot));
    if (intact != nullptr && cached != intact->end()) {
      out += cached->second;
    } else if (what != Read::kWithoutTemplates) {
      auto templates = Templates(**repository, **snapshot);
      if (!templates.ok()) return templates.status();
      out += *templates;
    }
    if (templates_only) continue;
    for (const auto& index : (*repository)->IndicesIn(**snapshot)) {
      if (index.starts_with(".")) continue;
      auto meta = (*repository)->ReadIndexMetadata(**snapshot, index);
      if (!meta.ok()) return meta.status();
      out += StrCat("index ", meta->name, " ", meta->number_of_shards, " ",
                    json::serialize(meta->settings), " ", json::serialize(meta->mappings), " ",
                    json::serialize(meta->aliases), "\n");
      for (int shard = 0; shard < meta->number_of_shards; ++shard) {
        auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, shard);
        if (!reader.ok()) return reader.status();
        auto cursor = (*reader)->OpenAt(0);
        if (!cursor.ok()) return cursor.status();
        std::map<std::string, std::string> docs;
        rfs::lucene::Document doc;
        while (true) {
          auto more = (*cursor)->Next(doc);
          if (!more.ok()) return more.status();
          if (!*more) break;
          docs[doc.id] = StrCat(doc.routing.value_or("-"), " ", doc.type.value_or("-"), " ",
                                std::string_view(reinterpret_cast<const char*>(doc.source.data()),
                                                 doc.source.size()));
        }
        for (const auto& [id, rest] : docs) out += StrCat(shard, " ", id, " ", rest, "\n");
      }
    }
  }
  return out;
}

struct SweepResult {
  size_t changes = 0;
  size_t errors = 0;
  size_t identical = 0;
};

// Changes every byte of every root file of the repository at `root`, one at a time (XOR 0x01, and
// for the unchecksummed index-N and `index` also XOR 0x20, which keeps a uuid's letters valid).
SweepResult SweepRoot(const fs::path& root) {
  auto base = rfs::snapshot::FileSystemRepo::Open(root.string());
  REQUIRE(base.ok());
  auto intact_repository = SnapshotRepository::Open(*base);
  REQUIRE(intact_repository.ok());
  std::vector<std::string> names;
  for (const auto& s : (*intact_repository)->snapshots()) names.push_back(s.name);
  REQUIRE(!names.empty());
  auto intact = ReadEverything(*base, names, Read::kEverything);
  INFO(intact.status().ToString());
  REQUIRE(intact.ok());
  REQUIRE(intact->find("\n0 ") != std::string::npos);  // some document was read
  auto intact_templates = ReadEverything(*base, names, Read::kTemplatesOnly);
  REQUIRE(intact_templates.ok());
  auto intact_documents = ReadEverything(*base, names, Read::kWithoutTemplates);
  REQUIRE(intact_documents.ok());
  // Elasticsearch 1.x wrote its global metadata as plain JSON without a checksum: a changed byte
  // of a template there cannot be told from an intact one. What it must never change is what is
  // read of the documents.
  const bool unchecked_global =
      (*intact_repository)->layout() == rfs::snapshot::RepositoryLayout::kEs1;

  auto blobs = (*base)->ListBlobs("");
  REQUIRE(blobs.ok());
  TemplatesByBlob intact_by_blob;
  for (const auto& snapshot : (*intact_repository)->snapshots()) {
    const std::string blob = GlobalMetadataBlob(**intact_repository, snapshot);
    if (std::find(blobs->begin(), blobs->end(), blob) == blobs->end()) continue;
    auto templates = Templates(**intact_repository, snapshot);
    REQUIRE(templates.ok());
    intact_by_blob[blob] = *templates;
  }
  auto flipping = std::make_shared<rfs::test::FlippingRepo>(*base);
  SweepResult result;
  for (const auto& blob : *blobs) {
    auto size = (*base)->BlobSize(blob);
    REQUIRE(size.ok());
    // A global-metadata blob decides only the templates.
    const bool global = (blob.starts_with("meta-") || blob.starts_with("metadata-"));
    const Read what = !global            ? Read::kEverything
                      : unchecked_global ? Read::kWithoutTemplates
                                         : Read::kTemplatesOnly;
    const std::string& expected = what == Read::kEverything      ? *intact
                                  : what == Read::kTemplatesOnly ? *intact_templates
                                                                 : *intact_documents;
    const bool unchecksummed = blob == "index" || blob.starts_with("index-");
    std::vector<uint8_t> masks = {0x01};
    if (unchecksummed) masks.push_back(0x20);
    // Every byte of a root file up to 4 KiB (index-N, index.latest, snap-*.dat, small meta-*.dat);
    // of a larger one (a global-metadata blob full of templates, checksummed as a whole) the
    // first and last 512 bytes and every 509th byte between (the checksum covers them all alike),
    // which keeps the suite's time bounded (each change of a 137 KB blob costs a decode).
    std::vector<uint64_t> offsets;
    for (uint64_t offset = 0; offset < *size; ++offset) {
      if (*size <= 4096 || offset < 512 || offset >= *size - 512 || offset % 509 == 0) {
        offsets.push_back(offset);
      }
    }
    for (uint8_t mask : masks) {
      for (uint64_t offset : offsets) {
        flipping->Flip(blob, offset, mask);
        auto read = ReadEverything(flipping, names, what, global ? nullptr : &intact_by_blob);
        ++result.changes;
        if (!read.ok()) {
          ++result.errors;
          continue;
        }
        if (*read == expected) {
          ++result.identical;
          continue;
        }
        FAIL(root.filename().string()
             << ": " << blob << " byte " << offset << " XOR 0x" << std::hex << int{mask} << std::dec
             << " read without an error but differently:\n"
             << read->substr(0, 2000) << "\nintact:\n"
             << expected.substr(0, 2000));
      }
    }
  }
  return result;
}

void Report(const std::string& name, const SweepResult& result) {
  std::cout << name << ": " << result.changes << " one-byte changes of root files, "
            << result.errors << " errors, " << result.identical << " read identically\n";
}

}  // namespace

namespace {

void SweepCorpus(const std::vector<const char*>& repositories) {
  for (const char* name : repositories) {
    SECTION(name) {
      auto root = rfs::test::CorpusPath(name);
      if (!root) return;
      const auto started = std::chrono::steady_clock::now();
      const SweepResult result = SweepRoot(*root);
      // Some changes must be caught (a repository may read none identically: ES 2.x root files
      // are all checksummed or minified JSON).
      CHECK(result.errors > 0);
      Report(name, result);
      std::cout << "  ("
                << std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count()
                << " ms)\n";
    }
  }
}

}  // namespace

// In three test cases, which ctest runs side by side (the 8.x/9.x repositories' global-metadata
// blobs of 80-137 KB cost the most).
TEST_CASE("one changed byte of any root file of ES 1-7 corpus repositories: an error or the same",
          "[snapshot][corpus][corrupt]") {
  SweepCorpus(
      {"snapshot-matrix-es1-es9-os1-os3/es1_nocomp", "snapshot-matrix-es1-es9-os1-os3/es2_nocomp",
       "snapshot-matrix-es1-es9-os1-os3/es5_nocomp", "snapshot-matrix-es1-es9-os1-os3/es6_nocomp",
       "snapshot-matrix-es1-es9-os1-os3/es7_nocomp", "es-snapshots/ES_6_8_Single",
       "es-snapshots/ES_7_10_Double", "es-snapshots/ES_7_10_Updates_Deletes_w_Soft"});
}

TEST_CASE("one changed byte of any root file of ES 8-9 corpus repositories: an error or the same",
          "[snapshot][corpus][corrupt]") {
  SweepCorpus(
      {"snapshot-matrix-es1-es9-os1-os3/es8_nocomp", "snapshot-matrix-es1-es9-os1-os3/es9_nocomp"});
}

TEST_CASE("one changed byte of any root file of OpenSearch corpus repositories: an error or same",
          "[snapshot][corpus][corrupt]") {
  SweepCorpus({"snapshot-matrix-es1-es9-os1-os3/os1_nocomp",
               "snapshot-matrix-es1-es9-os1-os3/os2_nocomp",
               "snapshot-matrix-es1-es9-os1-os3/os3_nocomp",
               "opensearch-2.11-soft-deletes-multiseg/OS_2_11_Deletes_w_Soft_Multi_Seg"});
}

TEST_CASE("one changed byte of any root file of a generated repository: an error or the same reads",
          "[snapshot][generated][corrupt]") {
  auto generated = rfs::test::Generate(
      "--docs 40 --updates 5 --deletes 5 --segments 2 --routing-fraction 0.3 --indices 2 "
      "--seed 331");
  REQUIRE(generated.has_value());
  const SweepResult result = SweepRoot(generated->repo());
  CHECK(result.errors > 0);
  CHECK(result.identical > 0);
  Report("generated", result);
}

namespace {

// A copy of a corpus repository in a temporary folder, to damage.
fs::path CopyRepository(const fs::path& from, const rfs::test::TempDir& dir) {
  const fs::path to = fs::path(dir.path()) / "repo";
  fs::copy(from, to, fs::copy_options::recursive);
  return to;
}

absl::Status OpenAndReadAll(const fs::path& root) {
  auto base = rfs::snapshot::FileSystemRepo::Open(root.string());
  if (!base.ok()) return base.status();
  auto repository = SnapshotRepository::Open(*base);
  if (!repository.ok()) return repository.status();
  std::vector<std::string> names;
  for (const auto& s : (*repository)->snapshots()) names.push_back(s.name);
  return ReadEverything(*base, names, Read::kEverything).status();
}

}  // namespace

TEST_CASE("index.latest naming a missing index-N is an error, not the older index-N",
          "[snapshot][corpus][corrupt]") {
  auto source = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3/es5_nocomp");
  if (!source) return;
  rfs::test::TempDir dir("rfs-root");
  const fs::path repo = CopyRepository(*source, dir);
  REQUIRE(OpenAndReadAll(repo).ok());
  fs::remove(repo / "index-1");  // index-0 (one snapshot fewer) stays
  const absl::Status status = OpenAndReadAll(repo);
  INFO(status.ToString());
  CHECK(absl::IsDataLoss(status));
  CHECK(status.message().find("index.latest") != std::string_view::npos);
  CHECK(status.message().find("index-1") != std::string_view::npos);
}

TEST_CASE("a snapshot taken with the global state whose metadata blob is missing is an error",
          "[snapshot][corpus][corrupt]") {
  auto source = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3/es7_nocomp");
  if (!source) return;
  rfs::test::TempDir dir("rfs-root");
  const fs::path repo = CopyRepository(*source, dir);
  size_t removed = 0;
  for (const auto& entry : fs::directory_iterator(repo)) {
    if (entry.path().filename().string().starts_with("meta-")) {
      fs::remove(entry.path());
      ++removed;
    }
  }
  REQUIRE(removed == 2);
  auto base = rfs::snapshot::FileSystemRepo::Open(repo.string());
  REQUIRE(base.ok());
  auto repository = SnapshotRepository::Open(*base);
  REQUIRE(repository.ok());
  auto latest = (*repository)->LatestSnapshot();
  REQUIRE(latest.ok());
  auto info = (*repository)->ReadSnapshotInfo(**latest);
  REQUIRE(info.ok());
  REQUIRE(info->include_global_state);
  auto global = (*repository)->ReadGlobalMetadata(**latest);
  INFO(global.status().ToString());
  CHECK(absl::IsDataLoss(global.status()));
  CHECK(global.status().message().find("global state") != std::string_view::npos);
}

TEST_CASE("an index renamed or dropped from a snapshot in index-N is an error",
          "[snapshot][corpus][corrupt]") {
  auto source = rfs::test::CorpusPath("snapshot-matrix-es1-es9-os1-os3/os2_nocomp");
  if (!source) return;
  rfs::test::TempDir dir("rfs-root");
  const fs::path repo = CopyRepository(*source, dir);
  const fs::path index_n = repo / "index-1";
  std::string text;
  {
    std::ifstream in(index_n, std::ios::binary);
    text.assign(std::istreambuf_iterator<char>(in), {});
  }
  const std::string original = text;
  SECTION("renamed") {
    const auto at = text.find("\"simple_index\"");
    REQUIRE(at != std::string::npos);
    text.replace(at, 14, "\"simple_indey\"");
  }
  SECTION("dropped from the snapshots") {
    // The index's list of snapshot uuids loses its last entry.
    const auto list = text.find("\"snapshots\":[", text.find("\"indices\""));
    REQUIRE(list != std::string::npos);
    const auto end = text.find(']', list);
    const auto comma = text.rfind(',', end);
    REQUIRE(comma != std::string::npos);
    REQUIRE(comma > list);
    text.erase(comma, end - comma);
  }
  REQUIRE(text != original);
  {
    std::ofstream out(index_n, std::ios::binary | std::ios::trunc);
    out << text;
  }
  const absl::Status status = OpenAndReadAll(repo);
  INFO(status.ToString());
  CHECK(absl::IsDataLoss(status));
  CHECK(status.message().find("index-1") != std::string_view::npos);
}
