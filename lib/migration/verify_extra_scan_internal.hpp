// The scan behind RfsWorker's `--verify-scan-extra`: which documents a target index holds that
// the source does not, each named.
//
// The source's side is read as a verification round reads it: the round's own document pipeline
// (rebuild, transforms, data streams) into a sink that keeps a 64-bit hash of each
// (target index, _id), 8 bytes per document, sorted. The target's side is every `_id` of each
// index, scrolled in pages of 1,000 without `_source` (`sort: _doc`, the cheapest order). A
// document of the target whose hash the source has not is extra; each is recorded where the
// round's other records go, as a `delete` of that document (error type `verify_extra`), so a
// redrive of the round's records removes it. (Two ids whose hashes collide, about one in 2^64
// per pair, would hide one extra document; nothing else is approximate.)
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "rfs/core/clock.hpp"
#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/opensearch/client.hpp"
#include "rfs/reindex/failed_document_sink.hpp"
#include "rfs/snapshot/repository.hpp"

namespace rfs::migration::internal {

inline constexpr std::string_view kVerifyExtra = "verify_extra";

struct ExtraScanOptions {
  int round = 1;
  /// The round's options (VerifyMigrationOptions): the same documents as its items read.
  DocumentMigrationOptions migration;
  /// The target indices to scan (the report's rows; a data stream by its name).
  std::vector<std::string> indices;
  /// A scratch SQLite file for the read's own work items (removed afterwards).
  std::string scratch_store;
  /// Extra ids named per index in the progress line (all are recorded).
  size_t named_per_index = 5;
};

struct ExtraScanResult {
  /// Per scanned index: documents on the target the source does not hold.
  std::map<std::string, uint64_t> extra;
  /// Per scanned index: up to `named_per_index` of their ids.
  std::map<std::string, std::vector<std::string>> named;
  uint64_t source_documents = 0;
  uint64_t target_documents = 0;
};

absl::StatusOr<ExtraScanResult> ScanExtraDocuments(const snapshot::SnapshotRepository& repository,
                                                   opensearch::OpenSearchClient& client,
                                                   reindex::IFailedDocumentSink& records,
                                                   core::IClock& clock,
                                                   const ExtraScanOptions& options);

}  // namespace rfs::migration::internal
