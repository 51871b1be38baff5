// Progress rendering shared by the tools: on a terminal, one live line rewritten in place;
// otherwise one JSON object per event (stderr), so log pipelines parse every line.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <utility>

#include "rfs/migration/document_migration_worker.hpp"
#include "rfs/migration/tools.hpp"
#include "rfs/opensearch/snapshots.hpp"

namespace rfs::apps {

double Megabytes(uint64_t bytes);

// Renders worker events: a live line on a terminal, JSON lines otherwise.
class WorkerProgress {
 public:
  WorkerProgress(std::string worker_id, bool live)
      : worker_id_(std::move(worker_id)), live_(live) {}

  void OnEvent(const migration::WorkerEvent& event);

  /// JSON lines only: one `index_account` event per source index with what became of its
  /// documents (the summary's per-index table), then `run_account` with the run's outcome:
  /// COMPLETED_WITH_FINDINGS when any document was rejected, not convertible or failed by a
  /// transform (exit 6), else COMPLETED.
  void Account(const migration::WorkerSummary& summary, bool run_ok);

  void Finish();

 private:
  void RenderLive(const migration::WorkerEvent& event);

  const std::string worker_id_;
  const bool live_;
  std::mutex mu_;
  bool line_open_ = false;
};

/// The line that ends a DocumentsFromSnapshotMigration run (stdout), and where failed documents
/// went when there were any.
void PrintWorkerSummary(const char* program, const migration::DocumentsToolResult& result);

std::string HumanBytes(uint64_t bytes);

double Seconds(std::chrono::milliseconds elapsed);

// Renders snapshot progress: a live line on a terminal, JSON lines otherwise (stderr).
class SnapshotProgressReporter {
 public:
  SnapshotProgressReporter(std::string repository, std::string snapshot, bool live)
      : repository_(std::move(repository)), snapshot_(std::move(snapshot)), live_(live) {}

  void OnProgress(const opensearch::SnapshotProgress& p);

  void Finish();

 private:
  const std::string repository_;
  const std::string snapshot_;
  const bool live_;
  bool line_open_ = false;
};

}  // namespace rfs::apps
