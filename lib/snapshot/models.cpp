#include "rfs/snapshot/models.hpp"

#include <charconv>

#include "rfs/core/str_cat.hpp"

namespace rfs::snapshot {

using core::StrCat;

const char* LayoutName(RepositoryLayout layout) {
  switch (layout) {
    case RepositoryLayout::kEs1:
      return "Elasticsearch 1.x";
    case RepositoryLayout::kEs2:
      return "Elasticsearch 2.x";
    case RepositoryLayout::kModern:
      return "Elasticsearch 5.x+/OpenSearch";
  }
  return "unknown";
}

namespace {

// OpenSearch sets this bit in its Version ids to tell them from Elasticsearch's
// (OpenSearch org/opensearch/Version.java, MASK).
constexpr int64_t kOpenSearchMask = 0x08000000;
// From ES 8.10 the ids written are IndexVersion ids, no longer derived from the release
// number. Releases whose id is known from real repositories (the provenance of the real
// repositories the tests read):
struct IndexVersionRelease {
  int64_t id;
  int major, minor;
};
constexpr IndexVersionRelease kIndexVersionReleases[] = {
    {8505000, 8, 14},
    {9009000, 9, 0},
};

}  // namespace

core::ClusterVersion VersionFromId(int64_t id) {
  core::ClusterVersion v;
  if (id <= 0) return v;
  if ((id & kOpenSearchMask) != 0) {
    id ^= kOpenSearchMask;
    v.product = core::ClusterVersion::Product::kOpenSearch;
  } else {
    v.product = core::ClusterVersion::Product::kElasticsearch;
    if (id >= kFirstIndexVersionId) {
      for (const auto& release : kIndexVersionReleases) {
        if (release.id == id) {
          v.major = release.major;
          v.minor = release.minor;
          v.patch = -1;
          return v;
        }
      }
      v.major = static_cast<int>(id / 1000000);
      v.minor = -1;
      return v;
    }
  }
  v.major = static_cast<int>(id / 1000000);
  v.minor = static_cast<int>(id / 10000 % 100);
  v.patch = static_cast<int>(id / 100 % 100);
  return v;
}

std::optional<core::ClusterVersion> ParseVersionNumber(core::ClusterVersion::Product product,
                                                       std::string_view text) {
  core::ClusterVersion v;
  v.product = product;
  int* parts[] = {&v.major, &v.minor, &v.patch};
  const char* p = text.data();
  const char* end = text.data() + text.size();
  for (int i = 0; i < 3; ++i) {
    auto [next, ec] = std::from_chars(p, end, *parts[i]);
    if (ec != std::errc()) return std::nullopt;
    p = next;
    if (i < 2) {
      if (p == end || *p != '.') return std::nullopt;
      ++p;
    }
  }
  return v;
}

const DataStream* DataStreamOf(const std::vector<DataStream>& streams, std::string_view index) {
  for (const DataStream& stream : streams) {
    for (const std::string& backing : stream.backing_indices) {
      if (backing == index) return &stream;
    }
  }
  return nullptr;
}

uint64_t FileInfo::number_of_parts() const {
  if (length == 0 || !part_size || *part_size == 0) return 1;
  return (length + *part_size - 1) / *part_size;
}

std::string FileInfo::PartName(uint64_t i) const {
  if (number_of_parts() == 1) return name;
  return StrCat(name, ".part", i);
}

uint64_t ShardSnapshot::total_file_bytes() const {
  uint64_t total = 0;
  for (const auto& f : files) total += f.length;
  return total;
}

}  // namespace rfs::snapshot
