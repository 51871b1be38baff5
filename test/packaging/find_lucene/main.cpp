// A consumer of the installed package's Lucene reader alone: reading the commit of an empty
// folder must fail cleanly, naming what is missing.
#include <cstdio>
#include <filesystem>
#include <string>

#include "rfs/core/file_util.hpp"
#include "rfs/lucene/segment_infos.hpp"

int main() {
  const std::filesystem::path empty =
      std::filesystem::temp_directory_path() / "rfs-lucene-consumer-empty";
  std::filesystem::create_directories(empty);
  auto dir = rfs::core::LocalDirectory::Open(empty.string());
  if (!dir.ok()) {
    std::fprintf(stderr, "cannot open %s\n", empty.c_str());
    return 1;
  }
  auto infos = rfs::lucene::ReadSegmentInfos(**dir);
  if (infos.ok()) {
    std::fprintf(stderr, "an empty folder read as a Lucene commit\n");
    return 1;
  }
  std::printf("rfs lucene consumer OK: %s\n", std::string(infos.status().message()).c_str());
  return 0;
}
