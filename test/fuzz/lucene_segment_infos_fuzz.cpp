// libFuzzer entry point for segments_N / .si parsing (docs/formats.md C.2-C.3) and
// .fnm parsing (C.6) over an in-memory directory: any input must parse or
// fail with a clean status, never crash, hang or read out of bounds.
//
// Input: a BE u16 length L, then L bytes of `segments_1`; the rest is served
// as every segment's `.si` (and parsed as a `.fnm` too).
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "rfs/core/random_access.hpp"
#include "rfs/lucene/segment_infos.hpp"

#include "lucene/codecs/dispatch_internal.hpp"

namespace {

// Serves `segments_1` and, for any name ending in ".si", the second part.
class FuzzDirectory final : public rfs::core::IDirectory {
 public:
  FuzzDirectory(std::vector<uint8_t> segments, std::vector<uint8_t> si)
      : segments_(std::move(segments)), si_(std::move(si)) {}
  const std::string& description() const override { return description_; }
  std::vector<std::string> ListFiles() const override { return {"segments_1"}; }
  absl::StatusOr<std::shared_ptr<const rfs::core::IRandomAccessFile>> OpenFile(
      std::string_view name) const override {
    if (name == "segments_1") {
      return std::shared_ptr<const rfs::core::IRandomAccessFile>(
          std::make_shared<rfs::core::MemoryFile>("segments_1", segments_));
    }
    if (name.size() > 3 && name.substr(name.size() - 3) == ".si") {
      return std::shared_ptr<const rfs::core::IRandomAccessFile>(
          std::make_shared<rfs::core::MemoryFile>(std::string(name), si_));
    }
    return absl::NotFoundError(std::string(name));
  }

 private:
  std::string description_ = "fuzz";
  std::vector<uint8_t> segments_;
  std::vector<uint8_t> si_;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  size_t split = size_t{data[0]} << 8 | data[1];
  if (split > size - 2) split = size - 2;
  std::vector<uint8_t> segments(data + 2, data + 2 + split);
  std::vector<uint8_t> si(data + 2 + split, data + size);
  auto infos = rfs::lucene::ReadSegmentInfos(FuzzDirectory(segments, si));
  std::array<uint8_t, 16> id{};
  if (infos.ok() && !infos->segments.empty()) id = infos->segments[0].id;
  (void)rfs::lucene::ParseFieldInfos(si, "_0.fnm", id, "");
  return 0;
}
