// Reading every live document of a Lucene folder in-process, one thread, with no line laid out:
// the decoding itself, as the benchmarks that set a tool's figures beside it measure it. Needs
// rfs::lucene (bench_support.hpp does not, so it stays apart).
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/shard_reader.hpp"

#include "bench_support.hpp"

namespace bench {

/// The newest commit point (`segments_N`) of `directory`.
inline std::string CommitName(const rfs::core::IDirectory& directory) {
  std::string out;
  for (const auto& name : directory.ListFiles()) {
    if (name.starts_with("segments_")) out = name;
  }
  return out;
}

/// Every live document's `_id` and `_source` of the commit `segments`, on the calling thread;
/// `cpu_seconds` is the process's CPU time meanwhile (every thread's: the caller runs nothing else
/// beside it).
struct ReadResult : Result {
  double cpu_seconds = 0;
};

inline ReadResult ReadEveryDocument(std::shared_ptr<const rfs::core::IDirectory> directory,
                                    std::string segments) {
  rfs::lucene::ShardReaderOptions options;
  options.segments_file = std::move(segments);
  options.pass_through_non_json_source = true;
  const auto start = std::chrono::steady_clock::now();
  const double cpu_start = CpuSecondsOf(RUSAGE_SELF);
  auto reader = rfs::lucene::ShardReader::Open(std::move(directory), options);
  if (!reader.ok()) Fail(std::string(reader.status().message()));
  auto cursor = (*reader)->OpenAt(0);
  if (!cursor.ok()) Fail(std::string(cursor.status().message()));
  ReadResult result;
  rfs::lucene::Document doc;
  while (true) {
    auto more = (*cursor)->Next(doc);
    if (!more.ok()) Fail(std::string(more.status().message()));
    if (!*more) break;
    ++result.docs;
    result.source_bytes += doc.source.size();
  }
  result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  result.cpu_seconds = CpuSecondsOf(RUSAGE_SELF) - cpu_start;
  return result;
}

}  // namespace bench
