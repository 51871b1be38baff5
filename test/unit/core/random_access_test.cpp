#include "rfs/core/random_access.hpp"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

namespace {

std::filesystem::path MakeTempDir() {
  auto dir =
      std::filesystem::temp_directory_path() / ("rfs-random-access-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace

TEST_CASE("MemoryFile reads in range and rejects reads past the end", "[core]") {
  rfs::core::MemoryFile file("inline.si", {1, 2, 3, 4, 5});
  std::vector<uint8_t> out(2);
  REQUIRE(file.ReadAt(3, out).ok());
  CHECK(out == std::vector<uint8_t>{4, 5});
  auto status = file.ReadAt(4, out);
  CHECK(absl::IsDataLoss(status));
  CHECK(std::string(status.message()).find("inline.si") != std::string::npos);
  CHECK(std::string(status.message()).find("offset 4") != std::string::npos);
  auto range = rfs::core::ReadRange(file, 1, 3);
  REQUIRE(range.ok());
  CHECK(*range == std::vector<uint8_t>{2, 3, 4});
  CHECK_FALSE(rfs::core::ReadRange(file, 6, 0).ok());
}

TEST_CASE("LocalDirectory lists and maps files", "[core]") {
  const auto dir = MakeTempDir();
  { std::ofstream(dir / "segments_1") << "abcdef"; }
  { std::ofstream(dir / "_0.si") << ""; }
  std::filesystem::create_directories(dir / "subdir");

  auto opened = rfs::core::LocalDirectory::Open(dir.string());
  REQUIRE(opened.ok());
  auto& directory = **opened;
  CHECK(directory.ListFiles() == std::vector<std::string>{"_0.si", "segments_1"});

  auto file = directory.OpenFile("segments_1");
  REQUIRE(file.ok());
  CHECK((*file)->size() == 6);
  CHECK((*file)->name() == "segments_1");
  auto view = (*file)->ContiguousView();
  REQUIRE(view.has_value());
  CHECK(std::string(view->begin(), view->end()) == "abcdef");

  auto empty = directory.OpenFile("_0.si");
  REQUIRE(empty.ok());
  CHECK((*empty)->size() == 0);

  CHECK(absl::IsNotFound(directory.OpenFile("missing").status()));
  CHECK(absl::IsInvalidArgument(directory.OpenFile("../etc").status()));
  CHECK(absl::IsNotFound(rfs::core::LocalDirectory::Open((dir / "nope").string()).status()));
  std::filesystem::remove_all(dir);
}

TEST_CASE("Dropping a mapped file's pages leaves its content readable and unchanged", "[core]") {
  const auto dir = MakeTempDir();
  std::string content(3 * 1024 * 1024 + 123, '\0');
  for (size_t i = 0; i < content.size(); ++i) content[i] = static_cast<char>(i * 7 + (i >> 12));
  { std::ofstream(dir / "_0.fdt", std::ios::binary) << content; }
  auto file = rfs::core::MappedFile::Open((dir / "_0.fdt").string());
  REQUIRE(file.ok());
  auto view = (*file)->ContiguousView();
  REQUIRE(view.has_value());
  uint64_t sum_before = 0;
  for (uint8_t b : *view) sum_before += b;
  // Unaligned ranges, the whole file, a range past the end: only whole pages inside are dropped.
  (*file)->DropCachedPages(1, 2 * 1024 * 1024 + 5);
  (*file)->DropCachedPages(0, content.size());
  (*file)->DropCachedPages(content.size() - 10, 1000);
  (*file)->DropCachedPages(content.size() + 10, 1000);
  CHECK(std::memcmp(view->data(), content.data(), content.size()) == 0);
  std::vector<uint8_t> tail(123);
  REQUIRE((*file)->ReadAt(content.size() - 123, tail).ok());
  CHECK(std::memcmp(tail.data(), content.data() + content.size() - 123, 123) == 0);
  uint64_t sum_after = 0;
  for (uint8_t b : *view) sum_after += b;
  CHECK(sum_after == sum_before);
  // The other files ignore the hint.
  rfs::core::MemoryFile memory("inline", {1, 2, 3});
  memory.DropCachedPages(0, 3);
  CHECK(memory.ContiguousView()->size() == 3);
  CHECK((*memory.ContiguousView())[2] == 3);
  std::filesystem::remove_all(dir);
}
