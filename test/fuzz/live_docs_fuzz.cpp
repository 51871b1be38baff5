// libFuzzer entry point for `.liv` (hard deletes, Lucene 5-10): any input must read or fail with
// a clean status, never crash or read out of bounds.
//
// Input: one byte for max_doc (times 37, so that several words are needed), one for del_count,
// then the `.liv` file's bytes.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "rfs/core/random_access.hpp"

#include "lucene/codecs/dispatch_internal.hpp"

namespace {

class OneFileDirectory final : public rfs::core::IDirectory {
 public:
  OneFileDirectory(std::string name, std::vector<uint8_t> bytes)
      : name_(std::move(name)), bytes_(std::move(bytes)) {}
  const std::string& description() const override { return description_; }
  std::vector<std::string> ListFiles() const override { return {name_}; }
  absl::StatusOr<std::shared_ptr<const rfs::core::IRandomAccessFile>> OpenFile(
      std::string_view name) const override {
    if (name != name_) return absl::NotFoundError(std::string(name));
    return std::shared_ptr<const rfs::core::IRandomAccessFile>(
        std::make_shared<rfs::core::MemoryFile>(name_, bytes_));
  }

 private:
  std::string name_;
  std::vector<uint8_t> bytes_;
  std::string description_ = "fuzz";
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  rfs::lucene::SegmentCommitInfo segment;
  segment.name = "_0";
  segment.del_gen = 1;
  segment.info.max_doc = data[0] * 37;
  segment.del_count = data[1];
  // The header says the byte order: Lucene50LiveDocs (5-8, big-endian) or Lucene90LiveDocs.
  segment.info.version = rfs::lucene::LuceneVersion{9, 12, 0};
  OneFileDirectory directory("_0_1.liv", std::vector<uint8_t>(data + 2, data + size));
  auto live = rfs::lucene::ReadHardLiveDocs(directory, segment);
  if (live.ok() && live->CountLive() != live->max_doc() - segment.del_count) std::abort();
  return 0;
}
