// rfs::solr::RebuildPlanFromSchema and RebuildPlanForBackupIndex: how each Solr field is read back
// (from stored fields or doc values, printed as /select prints it), what cannot be, and a
// SnapshotCatalog that names an index it does not describe. Solr's documents themselves are read
// from the backups a real Solr writes (test/real/solr_real_test.cpp).
#include "rfs/solr/documents.hpp"

#include <algorithm>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace {

using rfs::lucene::RebuildKind;
using rfs::solr::ParseSchema;
using rfs::solr::RebuildPlanFromSchema;

constexpr std::string_view kSchema = R"(<schema name="docs" version="1.6">
  <uniqueKey>id</uniqueKey>
  <fieldType name="string" class="solr.StrField" docValues="true"/>
  <fieldType name="strings" class="solr.StrField" docValues="true" multiValued="true"/>
  <fieldType name="pfloat" class="solr.FloatPointField" docValues="true"/>
  <fieldType name="pdoubles" class="solr.DoublePointField" docValues="true" multiValued="true"/>
  <fieldType name="pdate" class="solr.DatePointField" docValues="true"/>
  <fieldType name="boolean" class="solr.BoolField"/>
  <fieldType name="tlongs" class="solr.TrieLongField" docValues="true" multiValued="true"/>
  <fieldType name="text" class="solr.TextField"><analyzer><tokenizer name="standard"/></analyzer></fieldType>
  <fieldType name="vec" class="solr.DenseVectorField" vectorDimension="3"/>
  <fieldType name="_nest_path_" class="solr.NestPathField"/>
  <field name="id" type="string" stored="true"/>
  <field name="_version_" type="string" indexed="false" stored="false"/>
  <field name="_nest_path_" type="_nest_path_"/>
  <field name="_text_" type="text" stored="false" multiValued="true"/>
  <field name="price" type="pfloat" stored="false"/>
  <field name="when" type="pdate" stored="true"/>
  <field name="codes" type="strings" stored="false"/>
  <field name="flag" type="boolean" stored="true"/>
  <field name="counts" type="tlongs" stored="false"/>
  <field name="hidden" type="pfloat" stored="false" useDocValuesAsStored="false"/>
  <field name="embedding" type="vec" stored="true"/>
  <dynamicField name="*_ds" type="pdoubles" stored="false"/>
  <dynamicField name="*_t" type="text" stored="true"/>
</schema>)";

const rfs::lucene::RebuildField* FieldOf(const rfs::lucene::SourceRebuildPlan& plan,
                                         std::string_view path) {
  for (const auto& field : plan.fields) {
    if (field.path == path) return &field;
  }
  return nullptr;
}

bool Lists(const std::vector<std::string>& lines, std::string_view start) {
  return std::any_of(lines.begin(), lines.end(),
                     [&](const std::string& line) { return line.starts_with(start); });
}

TEST_CASE("A Solr schema becomes a plan that reads each field as /select returns it", "[solr]") {
  auto schema = ParseSchema(kSchema, "managed-schema.xml");
  REQUIRE(schema.ok());
  auto plan = RebuildPlanFromSchema(*schema, {"id", "title_t", "ratio_ds", "other"});
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  CHECK(plan->id_field == "id");
  CHECK(plan->child_path_field == "_nest_path_");
  // Solr's own fields are never read; an index field no field of the schema matches neither.
  for (std::string_view internal : {"_version_", "_nest_path_", "_root_", "other"}) {
    CHECK(FieldOf(*plan, internal) == nullptr);
  }

  const auto* id = FieldOf(*plan, "id");
  REQUIRE(id != nullptr);
  CHECK((id->kind == RebuildKind::kKeyword && id->stored && !id->doc_values));
  // Not stored: from doc values, a single float from its raw bits.
  const auto* price = FieldOf(*plan, "price");
  REQUIRE(price != nullptr);
  CHECK((price->kind == RebuildKind::kFloat && !price->stored && price->doc_values));
  CHECK((price->raw_float_bits && !price->multi_valued));
  const auto* when = FieldOf(*plan, "when");
  REQUIRE(when != nullptr);
  CHECK((when->kind == RebuildKind::kDate && when->date_format == "iso_instant"));
  const auto* codes = FieldOf(*plan, "codes");
  REQUIRE(codes != nullptr);
  CHECK((codes->multi_valued && codes->doc_values));
  CHECK(FieldOf(*plan, "flag")->kind == RebuildKind::kBoolean);
  // A stored vector is one stored float per element, always an array.
  const auto* embedding = FieldOf(*plan, "embedding");
  REQUIRE(embedding != nullptr);
  CHECK((embedding->kind == RebuildKind::kFloat && embedding->multi_valued && embedding->stored));
  // Dynamic fields: the index's fields they match, by name.
  REQUIRE(FieldOf(*plan, "ratio_ds") != nullptr);
  CHECK(FieldOf(*plan, "ratio_ds")->multi_valued);
  REQUIRE(FieldOf(*plan, "title_t") != nullptr);
  CHECK(FieldOf(*plan, "title_t")->kind == RebuildKind::kText);

  // What Solr does not return, or keeps in a form not read, is listed with the reason.
  CHECK(FieldOf(*plan, "_text_") == nullptr);
  CHECK(Lists(plan->unrebuildable, "_text_: indexed only"));
  CHECK(FieldOf(*plan, "hidden") == nullptr);
  CHECK(Lists(plan->unrebuildable, "hidden: "));
  CHECK(FieldOf(*plan, "counts") == nullptr);
  CHECK(Lists(plan->unrebuildable, "counts: TrieLongField keeps several values only"));
}

TEST_CASE("A Solr schema without a uniqueKey gives documents no id", "[solr]") {
  auto schema = ParseSchema(R"(<schema name="nokey" version="1.6">
    <fieldType name="string" class="solr.StrField"/><field name="a" type="string"/></schema>)",
                            "schema.xml");
  REQUIRE(schema.ok());
  auto plan = RebuildPlanFromSchema(*schema, {});
  CHECK(absl::IsFailedPrecondition(plan.status()));
  CHECK(plan.status().message().find("uniqueKey") != std::string_view::npos);
}

TEST_CASE("Solr prints dates as ISO-8601 instants", "[solr]") {
  using rfs::lucene::FormatDate;
  CHECK(FormatDate(0, false, "iso_instant") == "1970-01-01T00:00:00Z");
  CHECK(FormatDate(1577847845000, false, "iso_instant") == "2020-01-01T03:04:05Z");
  CHECK(FormatDate(1577836800500, false, "iso_instant") == "2020-01-01T00:00:00.500Z");
  CHECK(FormatDate(946684799999, false, "iso_instant") == "1999-12-31T23:59:59.999Z");
  CHECK(FormatDate(-1, false, "iso_instant") == "1969-12-31T23:59:59.999Z");
}

TEST_CASE("Only indices of a Solr backup have a Solr plan, and theirs must be whole", "[solr]") {
  rfs::snapshot::IndexMetadata plain;
  plain.name = "logs";
  auto none = rfs::solr::RebuildPlanForBackupIndex(plain);
  REQUIRE(none.ok());
  CHECK(*none == nullptr);

  rfs::snapshot::IndexMetadata broken = plain;
  broken.raw["solr"] = boost::json::object{{"schema", "<schema/>"}};
  auto refused = rfs::solr::RebuildPlanForBackupIndex(broken);
  CHECK(absl::IsInvalidArgument(refused.status()));

  rfs::snapshot::IndexMetadata whole = plain;
  whole.raw["solr"] = boost::json::object{{"schema", kSchema},
                                          {"schema_path", "zk_backup_0/configs/c/schema.xml"},
                                          {"index_fields", boost::json::array{"id", "note_t"}}};
  auto plan = rfs::solr::RebuildPlanForBackupIndex(whole);
  INFO(plan.status().ToString());
  REQUIRE(plan.ok());
  REQUIRE(*plan != nullptr);
  CHECK(FieldOf(**plan, "note_t") != nullptr);
}

TEST_CASE("A snapshot catalog must describe every index it names", "[solr]") {
  rfs::snapshot::SnapshotCatalog catalog;
  catalog.info.name = "b";
  catalog.info.uuid = "b-uuid";
  catalog.info.indices = {"books"};
  auto repo = rfs::snapshot::FileSystemRepo::Open(".");
  REQUIRE(repo.ok());
  auto refused = rfs::snapshot::SnapshotRepository::FromCatalog(*repo, catalog);
  CHECK(absl::IsInvalidArgument(refused.status()));
  CHECK(refused.status().message().find("books") != std::string_view::npos);

  rfs::snapshot::IndexMetadata books;
  books.name = "books";
  books.number_of_shards = 1;
  catalog.indices.push_back(books);
  catalog.shards["books"].emplace_back();
  catalog.open_shard = [](std::string_view, int, const rfs::snapshot::ShardFilesOptions&)
      -> absl::StatusOr<std::shared_ptr<const rfs::core::IDirectory>> {
    return absl::UnavailableError("not opened in this test");
  };
  auto repository = rfs::snapshot::SnapshotRepository::FromCatalog(*repo, catalog);
  REQUIRE(repository.ok());
  auto snapshot = (*repository)->FindSnapshot("b");
  REQUIRE(snapshot.ok());
  CHECK((*repository)->IndicesIn(**snapshot) == std::vector<std::string>{"books"});
  auto metadata = (*repository)->ReadIndexMetadata(**snapshot, "books");
  REQUIRE(metadata.ok());
  CHECK(metadata->number_of_shards == 1);
  CHECK(absl::IsNotFound((*repository)->ReadShardSnapshot(**snapshot, "books", 1).status()));
  CHECK(absl::IsUnavailable((*repository)->OpenShardFiles(**snapshot, "books", 0).status()));
  auto global = (*repository)->ReadGlobalMetadata(**snapshot);
  REQUIRE(global.ok());
  CHECK(global->data_streams.empty());
}

}  // namespace
