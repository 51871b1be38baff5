// The usage text of DocumentsFromSnapshotMigration; its options are the shared document options
// (common/document_options.hpp), which RfsWorker takes too.
#include "cli.hpp"

namespace rfs::apps::documents {

const char* const kUsage =
    "Usage: DocumentsFromSnapshotMigration --snapshot-local-dir DIR [--snapshot-name NAME]\n"
    "         (--output-dir OUT | --target-host URL) [options]\n"
    "\n"
    "One migration worker: takes shards of the snapshot under a lease, reads their Lucene files\n"
    "in place, and writes every live document (same _id and routing) to the target, until no\n"
    "work is left. Run several at once, on one host or many, to share the work; any of them may\n"
    "be killed at any time without losing documents.\n"
    "\n"
    "Targets:\n"
    "  --output-dir OUT   embedded default: bulk NDJSON files OUT/<index>/<shard>/*.ndjson\n"
    "                     (replayable with curl --data-binary @file URL/_bulk), coordinated\n"
    "                     through OUT/.rfs/coordination.sqlite\n"
    "  --target-host URL  an OpenSearch (or Elasticsearch) cluster; coordination in its\n"
    "                     .migrations_working_state index, or on --coordinator-host, or in the\n"
    "                     SQLite file or PostgreSQL database --coordinator-db\n"
    "  either target may coordinate through a migration console instead: --console-url URL\n"
    "                     --session-name S with the session's token in RFS_CONSOLE_TOKEN\n"
    "\n"
    "Exit codes: 0 one item done (--single-work-item), 2 the lease ran out and a successor item\n"
    "was handed on, or SIGTERM/SIGINT stopped the worker and its shard was released with the\n"
    "cursor recorded (run again), 3 no work left, 4 the remaining work is leased by other workers\n"
    "(run again later), 5 the snapshot cannot be read, 6 some documents could not be migrated\n"
    "(rejected by the target or without _source; they are in the failed-documents folder, and\n"
    "this code wins over 0/2/3/4), 1 other failures, 64 usage.\n"
    "\n"
    "Progress: on a terminal, a live line; otherwise one JSON line per event, on stderr. A\n"
    "summary ends the run on stdout. Every option can also be set through an RFS_ environment\n"
    "variable, e.g. RFS_TARGET_HOST for --target-host. The Java tool's JSON form is taken too:\n"
    "---INLINE-JSON '{\"targetHost\": URL, ...}' (or its base64), or ---JSON-FILE PATH.\n";

}  // namespace rfs::apps::documents
