// Rebuilt sources against the stored ones, on every real repository of the shared corpus: for each
// document and each field the mapping keeps in doc values (keyword, the integer types, boolean),
// the value rfs rebuilds from the doc values (Lucene 7, 8, 9 and 10 formats, as Elasticsearch 6-9
// and OpenSearch 1-3 wrote them) equals the value in the document's stored _source, in doc-values
// order (sorted; keyword without duplicates). Indices whose doc values use a format rfs does not
// read (Lucene 6 and older, ES 1/2/5) must fail with Unimplemented, never give other values.
#include <algorithm>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/snapshot/repository.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "support/corpus.hpp"

namespace {

namespace fs = std::filesystem;
namespace json = boost::json;

// The value at a dotted path of a source; nullptr when absent (or under an array of objects).
const json::value* At(const json::value& source, const std::string& path) {
  const json::value* at = &source;
  size_t start = 0;
  while (true) {
    if (!at->is_object()) return nullptr;
    const size_t dot = path.find('.', start);
    const std::string part = path.substr(start, dot == std::string::npos ? dot : dot - start);
    at = at->get_object().if_contains(part);
    if (at == nullptr || dot == std::string::npos) return at;
    start = dot + 1;
  }
}

// The scalars of a value as the field's doc values keep them, or nullopt when the source holds
// something the comparison does not model (e.g. a number in a keyword field, a numeric string).
std::optional<std::vector<json::value>> Canonical(const json::value* value,
                                                  rfs::lucene::RebuildKind kind) {
  std::vector<json::value> out;
  if (value == nullptr || value->is_null()) return out;
  std::vector<const json::value*> items;
  if (value->is_array()) {
    for (const auto& v : value->get_array()) items.push_back(&v);
  } else {
    items.push_back(value);
  }
  for (const json::value* v : items) {
    if (v->is_null()) continue;
    switch (kind) {
      case rfs::lucene::RebuildKind::kKeyword:
        if (!v->is_string()) return std::nullopt;
        break;
      case rfs::lucene::RebuildKind::kText:
        // Through a keyword sub-field: dynamic mappings keep values up to ignore_above 256.
        if (!v->is_string() || v->get_string().size() > 256) return std::nullopt;
        break;
      case rfs::lucene::RebuildKind::kLong:
        if (!v->is_int64() && !v->is_uint64()) return std::nullopt;
        break;
      case rfs::lucene::RebuildKind::kBoolean:
        if (!v->is_bool()) return std::nullopt;
        break;
      default:
        return std::nullopt;
    }
    out.push_back(*v);
  }
  auto less = [](const json::value& a, const json::value& b) {
    if (a.is_string()) return a.get_string() < b.get_string();
    if (a.is_bool()) return !a.get_bool() && b.get_bool();
    return a.to_number<int64_t>() < b.to_number<int64_t>();
  };
  std::sort(out.begin(), out.end(), less);
  if (kind == rfs::lucene::RebuildKind::kKeyword || kind == rfs::lucene::RebuildKind::kText) {
    out.erase(std::unique(out.begin(), out.end()), out.end());
  }
  return out;
}

struct Tally {
  uint64_t values = 0;
  uint64_t unread_indices = 0;
  std::map<std::string, uint64_t> values_by_repository;
};

void CheckRepository(const fs::path& root, Tally& tally) {
  auto base = rfs::snapshot::FileSystemRepo::Open(root.string());
  REQUIRE(base.ok());
  auto repository = rfs::snapshot::SnapshotRepository::Open(*base);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->LatestSnapshot();
  REQUIRE(snapshot.ok());
  for (const auto& index : (*repository)->IndicesIn(**snapshot)) {
    if (index.starts_with(".")) continue;  // system indices are not migrated
    auto metadata = (*repository)->ReadIndexMetadata(**snapshot, index);
    REQUIRE(metadata.ok());
    const rfs::lucene::IndexSource source = rfs::lucene::DescribeIndexSource(*metadata);
    auto plan = rfs::lucene::SourceRebuildPlan::FromMapping(
        source.mapping, rfs::lucene::RebuildPlanOptionsForIndex(*metadata, source.storage));
    REQUIRE(plan.ok());
    std::vector<const rfs::lucene::RebuildField*> compared;
    for (const auto& field : plan->fields) {
      if (field.doc_values && !field.stored &&
          (field.kind == rfs::lucene::RebuildKind::kKeyword ||
           field.kind == rfs::lucene::RebuildKind::kText ||
           field.kind == rfs::lucene::RebuildKind::kLong ||
           field.kind == rfs::lucene::RebuildKind::kBoolean)) {
        compared.push_back(&field);
      }
    }
    if (compared.empty()) continue;
    rfs::lucene::ShardReaderOptions options;
    options.pass_through_non_json_source = true;
    options.rebuild_plan = std::make_shared<const rfs::lucene::SourceRebuildPlan>(*plan);
    options.rebuild_stored_sources = true;
    rfs::lucene::ShardReaderOptions plain;
    plain.pass_through_non_json_source = true;
    for (int shard = 0; shard < metadata->number_of_shards; ++shard) {
      INFO(root.string() << " " << index << "/" << shard);
      auto rebuilt_reader =
          rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, shard, options);
      auto stored_reader =
          rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, shard, plain);
      if (absl::IsNotFound(stored_reader.status())) continue;
      REQUIRE(stored_reader.ok());
      REQUIRE(rebuilt_reader.ok());
      auto rebuilt_cursor = (*rebuilt_reader)->OpenAt(0);
      auto stored_cursor = (*stored_reader)->OpenAt(0);
      REQUIRE(rebuilt_cursor.ok());
      REQUIRE(stored_cursor.ok());
      rfs::lucene::Document rebuilt, stored;
      while (true) {
        auto more_stored = (*stored_cursor)->Next(stored);
        REQUIRE(more_stored.ok());
        auto more_rebuilt = (*rebuilt_cursor)->Next(rebuilt);
        if (absl::IsUnimplemented(more_rebuilt.status())) {
          // A doc-values format rfs does not read (Lucene 6 and older): named, never guessed.
          INFO(more_rebuilt.status().ToString());
          CHECK(more_rebuilt.status().message().find("Lucene") != std::string_view::npos);
          ++tally.unread_indices;
          break;
        }
        INFO(more_rebuilt.status().ToString());
        REQUIRE(more_rebuilt.ok());
        REQUIRE(*more_stored == *more_rebuilt);
        if (!*more_stored) break;
        REQUIRE(rebuilt.id == stored.id);
        REQUIRE(rebuilt.rebuilt);
        if (stored.source_format != rfs::content::SourceFormat::kJson) continue;
        const json::value original = json::parse(std::string_view(
            reinterpret_cast<const char*>(stored.source.data()), stored.source.size()));
        const json::value made = json::parse(std::string_view(
            reinterpret_cast<const char*>(rebuilt.source.data()), rebuilt.source.size()));
        for (const auto* field : compared) {
          auto want = Canonical(At(original, field->path), field->kind);
          if (!want) continue;
          auto got = Canonical(At(made, field->path), field->kind);
          INFO("_id " << stored.id << " field " << field->path << ": stored "
                      << json::serialize(original) << " rebuilt " << json::serialize(made));
          REQUIRE(got.has_value());
          CHECK(*got == *want);
          tally.values += want->size();
          tally.values_by_repository[root.filename().string()] += want->size();
        }
      }
    }
  }
}

}  // namespace

TEST_CASE("every corpus repository: values rebuilt from doc values equal the stored sources",
          "[lucene][rebuild][corpus]") {
  auto root = rfs::test::CorpusRoot("rebuild corpus test");
  if (!root) return;
  Tally tally;
  for (const char* name :
       {"es-snapshots/ES_6_8_Single", "es-snapshots/ES_6_8_Updates_Deletes_Native",
        "es-snapshots/ES_7_10_Double", "es-snapshots/ES_7_10_Single",
        "es-snapshots/ES_7_10_Updates_Deletes_w_Soft",
        "opensearch-2.11-soft-deletes-multiseg/OS_2_11_Deletes_w_Soft_Multi_Seg"}) {
    CheckRepository(*root / name, tally);
  }
  for (const auto& entry : fs::directory_iterator(*root / "snapshot-matrix-es1-es9-os1-os3")) {
    if (entry.is_directory()) CheckRepository(entry.path(), tally);
  }
  INFO(tally.values << " values compared, " << tally.unread_indices << " shards unread");
  // Every repository whose doc values rfs reads (Lucene 7-10) had values compared.
  for (const char* name : {"ES_6_8_Single", "ES_7_10_Single", "ES_7_10_Updates_Deletes_w_Soft",
                           "OS_2_11_Deletes_w_Soft_Multi_Seg", "es6_nocomp", "es7_nocomp",
                           "es8_nocomp", "es9_nocomp", "os1_nocomp", "os2_nocomp", "os3_nocomp"}) {
    INFO(name);
    CHECK(tally.values_by_repository[name] > 0);
  }
}
