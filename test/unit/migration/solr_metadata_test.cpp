// rfs::migration's Solr source: --source-version "SOLR N" and the failures MetadataMigration
// reports before reading a backup (the backups themselves: test/real/solr_real_test.cpp).
#include <catch2/catch.hpp>

#include "rfs/core/exit_codes.hpp"
#include "rfs/migration/solr_migration.hpp"

#include "support/temp_dir.hpp"

namespace {

using rfs::migration::ParseSolrSourceVersion;

TEST_CASE("the source version names Solr 6 to 9 (--source-version)", "[solr]") {
  for (const auto& [text, major] : std::initializer_list<std::pair<const char*, int>>{
           {"SOLR 9", 9}, {"solr8", 8}, {"Solr 7.7", 7}, {"SOLR_6", 6}, {"solr-9.10.1", 9}}) {
    auto parsed = ParseSolrSourceVersion(text);
    INFO(text << ": " << parsed.status().ToString());
    REQUIRE(parsed.ok());
    REQUIRE(parsed->has_value());
    CHECK(**parsed == major);
  }
  for (const char* other : {"ES 7.10", "OS 2.19", "opensearch 3"}) {
    auto parsed = ParseSolrSourceVersion(other);
    REQUIRE(parsed.ok());
    CHECK_FALSE(parsed->has_value());
  }
  for (const char* bad : {"SOLR 5", "solr 10", "solr", "SOLR nine", "solr9x"}) {
    INFO(bad);
    CHECK(absl::IsInvalidArgument(ParseSolrSourceVersion(bad).status()));
  }
}

TEST_CASE("MetadataMigration over Solr: usage errors and an unreadable location", "[solr]") {
  rfs::test::TempDir dir;
  rfs::migration::MetadataToolOptions options;
  options.repository.uri = dir.str();
  const rfs::migration::SolrSourceOptions solr{.major = 9};

  auto unnamed = rfs::migration::RunSolrMetadataMigration(options, solr);
  CHECK(unnamed.exit_code == rfs::core::kExitUsage);
  CHECK(unnamed.status.message().find("--snapshot-name") != std::string::npos);

  options.snapshot_name = "nightly";
  options.migration.mode = rfs::migration::MetadataMode::kMigrate;
  auto no_target = rfs::migration::RunSolrMetadataMigration(options, solr);
  CHECK(no_target.exit_code == rfs::core::kExitUsage);
  CHECK(no_target.status.message().find("--target-host") != std::string::npos);

  options.migration.mode = rfs::migration::MetadataMode::kEvaluate;
  auto missing = rfs::migration::RunSolrMetadataMigration(options, solr);
  CHECK(missing.exit_code == rfs::core::kExitSnapshotUnreadable);
  CHECK(missing.status.message().find("no Solr backup named 'nightly'") != std::string::npos);

  options.repository.uri = dir.File("absent");
  auto no_folder = rfs::migration::RunSolrMetadataMigration(options, solr);
  CHECK(no_folder.exit_code == rfs::core::kExitSnapshotUnreadable);
}

}  // namespace
