// Damaged doc values whose checksums still agree: every byte of the `.dvm` and `.dvd` of the
// Lucene 10.5 doc-values fixtures is changed in turn and the file's CRC footer rewritten to match,
// so that the reader's own bounds checks (not the checksum) meet the damage. Reading every value
// of every field must then give an error or values, never a crash, an out-of-bounds read (the
// sanitizers watch) or a hang.
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/crc32.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "lucene/codecs/dispatch_internal.hpp"
#include "lucene/codecs/doc_values_internal.hpp"
#include "support/temp_dir.hpp"
#include "unit/lucene/test_util.hpp"

namespace {

namespace fs = std::filesystem;

std::vector<uint8_t> ReadBytes(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<uint8_t>((std::istreambuf_iterator<char>(in)),
                              std::istreambuf_iterator<char>());
}

void WriteBytes(const fs::path& path, const std::vector<uint8_t>& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
}

// Rewrites the CodecUtil footer's checksum (the last 8 bytes, big-endian) over the bytes before it.
void FixFooter(std::vector<uint8_t>& bytes) {
  const uint32_t crc = rfs::core::Crc32(std::span<const uint8_t>(bytes.data(), bytes.size() - 8));
  for (int i = 0; i < 8; ++i) {
    bytes[bytes.size() - 1 - i] = i < 4 ? static_cast<uint8_t>(crc >> (8 * i)) : 0;
  }
}

// Reads every value of every doc-values field of the single segment in `dir`; false on an error.
bool ReadEverything(const fs::path& dir) {
  auto opened = rfs::core::LocalDirectory::Open(dir.string());
  REQUIRE(opened.ok());
  std::shared_ptr<const rfs::core::IDirectory> directory(*std::move(opened));
  auto infos = rfs::lucene::ReadSegmentInfos(*directory);
  REQUIRE(infos.ok());
  const auto& segment = infos->segments.at(0);
  auto fields = rfs::lucene::ReadFieldInfos(*directory, *directory, segment);
  REQUIRE(fields.ok());
  rfs::lucene::internal::SegmentDocValues values(directory, directory, segment, *fields);
  bool ok = true;
  std::vector<int64_t> numbers;
  std::vector<std::string> terms;
  std::string binary;
  for (const auto& info : fields->fields()) {
    if (info.doc_values_type == rfs::lucene::DocValuesType::kNone) continue;
    auto field = values.Field(info.name);
    if (!field.ok() || *field == nullptr) {
      ok = false;
      continue;
    }
    for (int32_t doc = 0; doc < segment.max_doc(); ++doc) {
      absl::Status status;
      switch ((*field)->type()) {
        case rfs::lucene::internal::DvmType::kNumeric:
        case rfs::lucene::internal::DvmType::kSortedNumeric:
          status = (*field)->Numbers(doc, numbers);
          break;
        case rfs::lucene::internal::DvmType::kSorted:
        case rfs::lucene::internal::DvmType::kSortedSet:
          status = (*field)->Terms(doc, terms);
          break;
        case rfs::lucene::internal::DvmType::kBinary:
          status = (*field)->Binary(doc, binary).status();
          break;
      }
      if (!status.ok()) {
        ok = false;
        break;
      }
    }
  }
  return ok;
}

}  // namespace

TEST_CASE("doc values with any one byte changed (checksums rewritten) never crash the reader",
          "[lucene][doc_values][corruption]") {
  if (!rfs::lucene::testing::HaveCorpus()) return;
  uint64_t changes = 0, errors = 0;
  for (const char* fixture : {"doc_values_index", "multi_valued_dv_index", "sorted_dv_index"}) {
    rfs::test::TempDir dir("rfs-dv-flip");
    const fs::path source =
        rfs::lucene::testing::CorpusDir() / "lucene-10.5-fixture-indexes" / fixture;
    for (const auto& entry : fs::directory_iterator(source)) {
      fs::copy_file(entry.path(), dir.path() / entry.path().filename());
    }
    REQUIRE(ReadEverything(dir.path()));  // intact: everything reads
    for (const char* name : {"_0_Lucene90_0.dvm", "_0_Lucene90_0.dvd"}) {
      const fs::path file = dir.path() / name;
      const std::vector<uint8_t> intact = ReadBytes(file);
      REQUIRE(intact.size() > 16);
      // The footer itself is left alone: its damage is the checksum's to find.
      for (size_t offset = 0; offset + 16 < intact.size(); ++offset) {
        for (uint8_t mask : {uint8_t{0x01}, uint8_t{0x80}, uint8_t{0xFF}}) {
          std::vector<uint8_t> damaged = intact;
          damaged[offset] ^= mask;
          FixFooter(damaged);
          WriteBytes(file, damaged);
          INFO(fixture << " " << name << " byte " << offset << " ^ " << int{mask});
          errors += ReadEverything(dir.path()) ? 0 : 1;
          ++changes;
        }
      }
      WriteBytes(file, intact);
    }
  }
  INFO(changes << " changes, " << errors << " errors");
  CHECK(changes > 1000);
  CHECK(errors > 0);
}
