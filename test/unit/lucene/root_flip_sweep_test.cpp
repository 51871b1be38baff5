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

#include "rfs/core/status_macros.hpp"
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

// What a migration reads of one snapshot, appended to `out`: its templates and, unless
// kTemplatesOnly, its indices (metadata and every live document of each index a migration selects
// by default: not the system ones).
absl::Status ReadSnapshot(const SnapshotRepository& repository,
                          const rfs::snapshot::SnapshotEntry& snapshot, Read what,
                          const TemplatesByBlob* intact, std::string& out) {
  out += StrCat("snapshot ", snapshot.name, "\n");
  const auto cached = intact == nullptr ? TemplatesByBlob::const_iterator{}
                                        : intact->find(GlobalMetadataBlob(repository, snapshot));
  if (intact != nullptr && cached != intact->end()) {
    out += cached->second;
  } else if (what != Read::kWithoutTemplates) {
    auto templates = Templates(repository, snapshot);
    if (!templates.ok()) return templates.status();
    out += *templates;
  }
  if (what == Read::kTemplatesOnly) return absl::OkStatus();
  for (const auto& index : repository.IndicesIn(snapshot)) {
    if (index.starts_with(".")) continue;
    auto meta = repository.ReadIndexMetadata(snapshot, index);
    if (!meta.ok()) return meta.status();
    out += StrCat("index ", meta->name, " ", meta->number_of_shards, " ",
                  json::serialize(meta->settings), " ", json::serialize(meta->mappings), " ",
                  json::serialize(meta->aliases), "\n");
    for (int shard = 0; shard < meta->number_of_shards; ++shard) {
      auto reader = rfs::lucene::OpenSnapshotShard(repository, snapshot, index, shard);
      if (!reader.ok()) return reader.status();
      auto cursor = (*reader)->OpenAt(0);
      if (!cursor.ok()) return cursor.status();
      std::map<std::string, std::string> docs;
      rfs::lucene::Document doc;
      while (true) {
        auto more = (*cursor)->Next(doc);
        if (!more.ok()) return more.status();
        if (!*more) break;
        docs[doc.id] = StrCat(
            doc.routing.value_or("-"), " ", doc.type.value_or("-"), " ",
            std::string_view(reinterpret_cast<const char*>(doc.source.data()), doc.source.size()));
      }
      for (const auto& [id, rest] : docs) out += StrCat(shard, " ", id, " ", rest, "\n");
    }
  }
  return absl::OkStatus();
}

// Everything a migration reads from the repository, as text. First as the tools read it without
// --snapshot-name: the newest snapshot, and what it holds, through what LatestSnapshot() returns
// alone (a sweep that named every snapshot went only through FindSnapshot(), and so missed a
// damaged index-N that LatestSnapshot() let through). Then every other snapshot by its name, as
// with --snapshot-name. kTemplatesOnly reads only the templates (what a global-metadata blob
// decides). The first error ends it.
absl::StatusOr<std::string> ReadEverything(std::shared_ptr<const ISourceRepo> repo,
                                           const std::vector<std::string>& snapshot_names,
                                           Read what, const TemplatesByBlob* intact = nullptr) {
  auto repository = SnapshotRepository::Open(std::move(repo));
  if (!repository.ok()) return repository.status();
  std::string out;
  std::string newest;
  if (what != Read::kTemplatesOnly) {
    auto latest = (*repository)->LatestSnapshot();
    if (!latest.ok()) return latest.status();
    newest = (*latest)->name;
    out += StrCat("newest ", newest, "\n");
    RFS_RETURN_IF_ERROR(ReadSnapshot(**repository, **latest, what, intact, out));
  }
  for (const auto& name : snapshot_names) {
    if (name == newest) continue;
    auto snapshot = (*repository)->FindSnapshot(name);
    if (!snapshot.ok()) return snapshot.status();
    RFS_RETURN_IF_ERROR(ReadSnapshot(**repository, **snapshot, what, intact, out));
  }
  return out;
}

struct SweepResult {
  size_t changes = 0;  // swept
  size_t errors = 0;
  size_t identical = 0;
  size_t planned = 0;             // every change the sweep would make without its time cap
  size_t unchecksummed_left = 0;  // changes of the repository index the time cap cut
};

// The order root files are swept in, so that a time cap cuts the least telling changes: first
// the unchecksummed repository index (index-N, the ES 1.x/2.x `index`, index.latest), whose every
// fact must be cross-checked; then the checksummed snapshot records; then global metadata.
int SweepPriority(const std::string& blob) {
  if (blob == "index" || blob.starts_with("index-") || blob == "index.latest") return 0;
  if (blob.starts_with("meta-") || blob.starts_with("metadata-")) return 2;
  return 1;
}

// Changes every byte of every root file of the repository at `root`, one at a time (XOR 0x01, and
// for the unchecksummed index-N and `index` also XOR 0x20, which keeps a uuid's letters valid),
// until `budget` has passed (the changes left are counted in `planned`, not made).
SweepResult SweepRoot(const fs::path& root,
                      std::chrono::steady_clock::duration budget = std::chrono::hours(1)) {
  const auto deadline = std::chrono::steady_clock::now() + budget;
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
  std::stable_sort(blobs->begin(), blobs->end(), [](const auto& a, const auto& b) {
    return SweepPriority(a) < SweepPriority(b);
  });
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
        ++result.planned;
        if (std::chrono::steady_clock::now() > deadline) {
          if (unchecksummed) ++result.unchecksummed_left;
          continue;
        }
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
            << result.errors << " errors, " << result.identical << " read identically";
  if (result.changes < result.planned) {
    std::cout << " (" << result.planned - result.changes
              << " more changes of checksummed blobs not made within the time cap)";
  }
  std::cout << "\n";
}

// Every snapshot repository of the corpus (a folder two levels down holding a repository index),
// as "group/name", sorted.
std::vector<std::string> CorpusRepositories(const fs::path& corpus) {
  std::vector<std::string> out;
  for (const auto& group : fs::directory_iterator(corpus)) {
    if (!group.is_directory()) continue;
    for (const auto& repo : fs::directory_iterator(group.path())) {
      if (!repo.is_directory()) continue;
      bool has_index = false;
      for (const auto& file : fs::directory_iterator(repo.path())) {
        const std::string name = file.path().filename().string();
        has_index = has_index || name == "index" || name == "index.latest" ||
                    (name.starts_with("index-") && file.is_regular_file());
      }
      if (has_index) {
        out.push_back(
            StrCat(group.path().filename().string(), "/", repo.path().filename().string()));
      }
    }
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Which of the test cases below sweeps a corpus repository (they run side by side under ctest;
// the 8.x/9.x repositories' global-metadata blobs of 80-137 KB cost the most).
enum class SweepGroup { kElasticsearch1To7, kElasticsearch8To9, kOpenSearch };

SweepGroup GroupOf(const std::string& repository) {
  if (repository.find("/os") != std::string::npos ||
      repository.find("opensearch") != std::string::npos ||
      repository.find("/OS_") != std::string::npos) {
    return SweepGroup::kOpenSearch;
  }
  if (repository.find("/es8") != std::string::npos ||
      repository.find("/es9") != std::string::npos ||
      repository.find("/ES_8") != std::string::npos ||
      repository.find("/ES_9") != std::string::npos) {
    return SweepGroup::kElasticsearch8To9;
  }
  return SweepGroup::kElasticsearch1To7;
}

// Each repository's sweep stops making changes of checksummed blobs after this long; the
// unchecksummed repository index is always swept whole.
constexpr auto kSweepBudgetPerRepository = std::chrono::seconds(25);

void SweepCorpus(SweepGroup group) {
  auto corpus = rfs::test::CorpusRoot("root-file sweep");
  if (!corpus) return;
  size_t swept = 0;
  for (const std::string& name : CorpusRepositories(*corpus)) {
    if (GroupOf(name) != group) continue;
    ++swept;
    SECTION(name) {
      const auto started = std::chrono::steady_clock::now();
      const SweepResult result = SweepRoot(*corpus / name, kSweepBudgetPerRepository);
      // Some changes must be caught (a repository may read none identically: ES 2.x root files
      // are all checksummed or minified JSON), and the repository index is never cut short.
      CHECK(result.errors > 0);
      CHECK(result.unchecksummed_left == 0);
      Report(name, result);
      std::cout << "  ("
                << std::chrono::duration_cast<std::chrono::milliseconds>(
                       std::chrono::steady_clock::now() - started)
                       .count()
                << " ms)\n";
    }
  }
  CHECK(swept > 0);
}

}  // namespace

TEST_CASE("one changed byte of any root file of ES 1-7 corpus repositories: an error or the same",
          "[snapshot][corpus][corrupt]") {
  SweepCorpus(SweepGroup::kElasticsearch1To7);
}

TEST_CASE("one changed byte of any root file of ES 8-9 corpus repositories: an error or the same",
          "[snapshot][corpus][corrupt]") {
  SweepCorpus(SweepGroup::kElasticsearch8To9);
}

TEST_CASE("one changed byte of any root file of OpenSearch corpus repositories: an error or same",
          "[snapshot][corpus][corrupt]") {
  SweepCorpus(SweepGroup::kOpenSearch);
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
