// Atomic file writes, whole or in pieces: readers see the old file or the whole new one, and a
// writer dropped before Commit leaves nothing behind.
#include "rfs/core/file_util.hpp"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <span>
#include <sstream>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "support/direct_io.hpp"
#include "support/temp_dir.hpp"
#include <sys/wait.h>
#include <unistd.h>

namespace {

std::string Read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

size_t Entries(const std::filesystem::path& dir) {
  size_t n = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++n;
  return n;
}

}  // namespace

TEST_CASE("AtomicFileWriter shows the whole file only on Commit", "[core][file]") {
  rfs::test::TempDir dir("rfs-file");
  const std::string path = dir.File("out.ndjson");
  REQUIRE(rfs::core::WriteFileAtomically(path, "old\n", true).ok());
  {
    auto writer = rfs::core::AtomicFileWriter::Create(path, true);
    REQUIRE(writer.ok());
    REQUIRE(writer->Append("new 1\n").ok());
    REQUIRE(writer->Append(std::string(3 << 20, 'x')).ok());
    CHECK(Read(path) == "old\n");  // not yet
    REQUIRE(writer->Append("\nnew 2\n").ok());
    REQUIRE(writer->Commit().ok());
    CHECK(absl::IsFailedPrecondition(writer->Append("late")));
  }
  const std::string content = Read(path);
  CHECK(content.size() == 6 + (3u << 20) + 7);
  CHECK(content.starts_with("new 1\nxxx"));
  CHECK(content.ends_with("x\nnew 2\n"));
  CHECK(Entries(dir.path()) == 1);
  {
    auto dropped = rfs::core::AtomicFileWriter::Create(dir.File("never.ndjson"), false);
    REQUIRE(dropped.ok());
    REQUIRE(dropped->Append("partial").ok());
  }
  CHECK_FALSE(std::filesystem::exists(dir.File("never.ndjson")));
  CHECK(Entries(dir.path()) == 1);  // no temporary file left
  CHECK(absl::IsNotFound(
      rfs::core::AtomicFileWriter::Create(dir.File("missing/folder/x"), false).status()));
}

TEST_CASE("AtomicFileWriter::AppendAll writes many pieces in order", "[core][file]") {
  rfs::test::TempDir dir;
  const std::string path = (dir.path() / "pieces.txt").string();
  // More pieces than one writev takes, some empty, one large.
  std::vector<std::string> storage;
  std::string expected;
  for (int i = 0; i < 2600; ++i) {
    storage.push_back(i % 5 == 0 ? std::string() : "piece-" + std::to_string(i) + "\n");
  }
  storage.push_back(std::string(3 << 20, 'x'));
  std::vector<std::string_view> pieces;
  for (const auto& piece : storage) {
    pieces.emplace_back(piece);
    expected += piece;
  }
  auto writer = rfs::core::AtomicFileWriter::Create(path, /*sync=*/true);
  REQUIRE(writer.ok());
  REQUIRE(writer->AppendAll(pieces).ok());
  REQUIRE(writer->AppendAll(std::span<const std::string_view>(pieces).first(3)).ok());
  expected += storage[0] + storage[1] + storage[2];
  REQUIRE(writer->Commit().ok());
  CHECK(Read(path) == expected);
}

TEST_CASE("AtomicFileWriter with direct I/O writes every length exactly", "[core][file]") {
  rfs::test::TempDir dir;
  constexpr size_t kMiB = size_t{1} << 20;
  bool used_direct = false;
  for (size_t length : {size_t{0}, size_t{1}, size_t{4095}, size_t{4096}, size_t{4097}, kMiB - 1,
                        kMiB, kMiB + 1, 3 * kMiB + 7}) {
    INFO("length " << length);
    std::string expected(length, '\0');
    for (size_t i = 0; i < length; ++i) expected[i] = static_cast<char>('a' + (i * 7919) % 26);
    const std::string path = dir.File("direct-" + std::to_string(length));
    auto writer =
        rfs::core::AtomicFileWriter::Create(path, /*sync=*/true, rfs::core::FileCaching::kDirect);
    REQUIRE(writer.ok());
    used_direct = used_direct || writer->direct();
    // Pieces of uneven sizes, through both entry points, so buffer boundaries fall mid-piece.
    std::string_view rest = expected;
    for (size_t step = 1; !rest.empty(); step = step * 3 + 1) {
      const size_t n = std::min(rest.size(), step);
      if (step % 2 == 0) {
        REQUIRE(writer->Append(rest.substr(0, n)).ok());
      } else {
        const std::string_view pieces[] = {rest.substr(0, n / 2), rest.substr(n / 2, n - n / 2)};
        REQUIRE(writer->AppendAll(pieces).ok());
      }
      rest.remove_prefix(n);
    }
    REQUIRE(writer->Commit().ok());
    CHECK(std::filesystem::file_size(path) == length);
    CHECK(Read(path) == expected);
  }
  if (rfs::test::DirectIoAvailable(dir.path())) {
    CHECK(used_direct);  // the file system takes O_DIRECT: the fast path must have been taken
  } else {
    WARN("the temporary folder's file system refuses direct I/O: only the fallback was tested");
  }
}

TEST_CASE("AtomicFileWriter writes a long piece from where it is once padding places it",
          "[core][file]") {
  rfs::test::TempDir dir;
  constexpr size_t kBlock = 4096;
  constexpr size_t kPieceBytes = (size_t{600} << 10) + 123;
  // The piece sits 37 bytes into a block of its buffer; the file already holds 100 bytes.
  // aligned_alloc wants a size that is a multiple of the alignment.
  const size_t buffer_bytes = (kPieceBytes + 2 * kBlock) / kBlock * kBlock;
  auto* memory = static_cast<char*>(std::aligned_alloc(kBlock, buffer_bytes));
  REQUIRE(memory != nullptr);
  std::unique_ptr<char, decltype(&std::free)> owned(memory, &std::free);
  const std::string_view piece(memory + 37, kPieceBytes);
  for (size_t i = 0; i < kPieceBytes; ++i) memory[37 + i] = static_cast<char>('a' + i % 23);
  const std::string head(100, 'h');

  const std::string path = dir.File("in-place");
  auto writer =
      rfs::core::AtomicFileWriter::Create(path, /*sync=*/true, rfs::core::FileCaching::kDirect);
  REQUIRE(writer.ok());
  REQUIRE(writer->Append(head).ok());
  std::string padding;
  if (!writer->direct()) {
    CHECK_FALSE(rfs::test::DirectIoAvailable(dir.path()));
    WARN("the temporary folder's file system refuses direct I/O: nothing is written in place");
    CHECK_FALSE(writer->PaddingForInPlace(piece, 0).has_value());
  } else {
    // Short pieces are copied whatever their place.
    CHECK_FALSE(writer->PaddingForInPlace(piece.substr(0, 1000), 0).has_value());
    // The padding counts the bytes still to come before the piece.
    const auto after_ten = writer->PaddingForInPlace(piece, 10);
    REQUIRE(after_ten.has_value());
    CHECK(*after_ten == (kBlock + 37 - 110) % kBlock);
    const auto now = writer->PaddingForInPlace(piece, 0);
    REQUIRE(now.has_value());
    CHECK(*now == (kBlock + 37 - 100) % kBlock);
    padding.assign(*now, ' ');
    REQUIRE(writer->Append(padding).ok());
    CHECK(writer->PaddingForInPlace(piece, 0) == 0);
  }
  const std::string_view pieces[] = {piece, "tail"};
  REQUIRE(writer->AppendAll(pieces).ok());
  if (writer->direct()) {
    // Every whole block of the piece past its first boundary went from where it was.
    const size_t head_bytes = kBlock - 37;
    CHECK(writer->in_place_bytes() == (kPieceBytes - head_bytes) / kBlock * kBlock);
  }
  REQUIRE(writer->Commit().ok());
  CHECK(Read(path) == head + padding + std::string(piece) + "tail");
}

namespace rfs::core {
namespace {

TEST_CASE("temporary files of writers that are gone are removed, never a live one's",
          "[core][file]") {
  rfs::test::TempDir dir("rfs-stale-temp");
  const std::string folder = dir.File("out/index/0");
  REQUIRE(CreateDirectories(folder, /*sync=*/false).ok());
  // A process that has ended: its pid is free (a reused pid would only keep the file).
  const pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  REQUIRE(child > 0);
  int status = 0;
  REQUIRE(::waitpid(child, &status, 0) == child);
  const uint64_t dead = static_cast<uint64_t>(child);
  const uint64_t alive = static_cast<uint64_t>(::getpid());
  const std::string gone = AtomicTempPath(folder + "/0-99.ndjson", dead, 3);
  const std::string running = AtomicTempPath(folder + "/100-199.ndjson", alive, 4);
  const std::string other_host =
      folder + "/200-299.ndjson.tmp-otherhost-" + std::to_string(dead) + "-5";
  const std::string old_name = folder + "/300-399.ndjson.tmp-" + std::to_string(dead) + "-6";
  const std::string finished = folder + "/400-499.ndjson";
  for (const auto& path : {gone, running, other_host, old_name, finished}) {
    REQUIRE(WriteFileAtomically(path, "x", /*sync=*/false).ok());
  }
  auto removed = RemoveStaleTempFiles(dir.File("out"));
  REQUIRE(removed.ok());
  CHECK(removed->removed == 1);
  CHECK(removed->kept_other_hosts == 2);
  CHECK_FALSE(std::filesystem::exists(gone));
  for (const auto& path : {running, other_host, old_name, finished}) {
    INFO(path);
    CHECK(std::filesystem::exists(path));
  }
  // A writer's own temporary name carries this host and its pid.
  CHECK(AtomicTempPath("f", 42, 7).starts_with("f.tmp-"));
  CHECK(AtomicTempPath("f", 42, 7).ends_with("-42-7"));
  auto none = RemoveStaleTempFiles(dir.File("missing"));
  REQUIRE(none.ok());
  CHECK(none->removed == 0);
}

}  // namespace
}  // namespace rfs::core
