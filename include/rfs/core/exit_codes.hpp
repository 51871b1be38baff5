// The process exit codes of every rfs tool, in one place (the Java tools' codes where they have
// one; sysexits' EX_USAGE and EX_SOFTWARE otherwise). The library's tool entry points return
// them; the mains only pass them on. README lists them per tool.
#pragma once

namespace rfs::core {

/// Done: the work asked for finished (one item with --single-work-item, every phase of RfsWorker,
/// a snapshot taken).
inline constexpr int kExitOk = 0;
/// Any failure without a code of its own.
inline constexpr int kExitFailure = 1;
/// A worker handed its item on (its lease ran short; a successor item carries the rest), or was
/// asked to stop (SIGTERM, SIGINT) and released its item with its cursor.
inline constexpr int kExitHandoffOrStopped = 2;
/// A worker found every item complete. MigrationConsole: no such session.
inline constexpr int kExitNoWorkLeft = 3;
inline constexpr int kExitConsoleNoSuchSession = 3;
/// A worker found the remaining items all leased by other workers. MigrationConsole: the token
/// does not open the session.
inline constexpr int kExitAllLeasedElsewhere = 4;
inline constexpr int kExitConsoleForbidden = 4;
/// The snapshot cannot be read (missing or corrupt blobs).
inline constexpr int kExitSnapshotUnreadable = 5;
/// Documents could not be migrated (rejected by the target for good, failed by a transform, or
/// without any stored source): they are in the failed-documents sink. It wins over 0, 2, 3 and 4,
/// so no run with lost documents reads as "all done". MigrationConsole status: the session
/// completed with such findings.
inline constexpr int kExitDocumentsFailed = 6;
/// RfsWorker: a phase is FAILED (the snapshot failed, a template was rejected, documents are
/// missing); every worker ends with this code and the reason.
inline constexpr int kExitPhaseFailed = 7;
/// Bad options: a missing or contradictory option, a malformed URL or number (EX_USAGE).
inline constexpr int kExitUsage = 64;
/// An internal error the library did not report as a status (EX_SOFTWARE).
inline constexpr int kExitInternal = 70;

}  // namespace rfs::core
