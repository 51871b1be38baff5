// The command line of RfsWorker: its usage text, its options (DocumentsFromSnapshotMigration's
// plus the source cluster, template allowlists and the verify phase) and their conversion into
// the library's RfsWorkerOptions; and how a run's events and result are reported.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

#include <boost/program_options.hpp>

#include "rfs/migration/rfs_worker.hpp"

#include "absl/status/statusor.h"

namespace rfs::apps::worker {

extern const char* const kUsage;

boost::program_options::options_description Options();

/// The run described by parsed options; InvalidArgument names the bad option.
absl::StatusOr<migration::RfsWorkerOptions> WorkerOptions(
    const boost::program_options::variables_map& vm);

/// Prints each phase event on standard error: a status line on a terminal (`live`), else one
/// JSON object per line. Thread-safe.
std::function<void(const migration::RfsWorkerEvent&)> EventPrinter(std::string worker_id,
                                                                   bool live);

/// Prints the verification report and the one-line JSON summary of a finished run on standard
/// output (a trial run said as such), and its error on standard error.
void PrintResult(const migration::RfsWorkerResult& result, bool verify_only, uint64_t trial_limit,
                 const std::string& trial_prefix);

}  // namespace rfs::apps::worker
