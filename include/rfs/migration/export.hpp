// Every live document of a snapshot as NDJSON, in elasticdump's format (SnapshotInspector docs):
//   {"_index":...,"_type":... (typed indices only),"_id":...,"_routing":... (when
//   set),"_source":...}
// one per line. Sources stored as SMILE, CBOR or YAML are converted to JSON; pretty-printed JSON
// sources are made one line without a parse.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <optional>
#include <string>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/s3/s3_repo.hpp"

#include "absl/status/status.h"

namespace rfs::migration {

struct ExportOptions {
  /// A folder, file:///path, s3://, gs:// or az:// (see RepositoryLocation in tools.hpp).
  std::string repository;
  s3::S3Options s3;
  cloud::GcsOptions gcs;
  cloud::AzureOptions azure;
  std::string snapshot_name;
  /// A Solr backup of the location instead of a snapshot (RepositoryLocation::solr).
  std::optional<RepositoryLocation::SolrBackup> solr;
  /// Default: every index of the snapshot.
  std::optional<std::string> index;
  /// Default: every shard.
  std::optional<int> shard;
  /// Start at this shard-global document number (needs `index` and `shard`).
  uint64_t from_cursor = 0;
  /// Threads decoding each shard and laying out its lines (the document pipeline's parallel
  /// source), the calling thread writing them in order; 0 does everything on the calling thread.
  int reader_threads = 0;
  /// Rebuild documents of indices without a stored `_source` (--enable-sourceless-migrations).
  bool enable_sourceless_migrations = false;
  /// A document that is not written (no `_source`, or a source that has no JSON form).
  std::function<void(const std::string&)> on_skipped;
};

struct ExportTotals {
  uint64_t docs = 0;
  uint64_t source_bytes = 0;
  uint64_t without_source = 0;
  uint64_t unconvertible = 0;
};

struct ExportResult {
  absl::Status status;
  /// 0, core::kExitUsage (bad options: a shard out of range, a cursor without index and shard, an
  /// index without a complete `_source` while enable_sourceless_migrations is off),
  /// core::kExitSnapshotUnreadable (the repository or a shard cannot be read) or core::kExitFailure
  /// (writing the output failed: a full disk, a closed pipe; the status names it).
  int exit_code = 0;
  /// What was written before the end (also on error).
  ExportTotals totals;
};

/// Writes the documents to `out` (buffered; flushed before returning).
ExportResult ExportDocumentsAsNdjson(const ExportOptions& options, std::FILE* out);

}  // namespace rfs::migration
