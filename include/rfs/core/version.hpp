// ClusterVersion: the product and version of an Elasticsearch or OpenSearch cluster. The one
// version type of the library, under this one name: what wrote a snapshot
// (snapshot::SnapshotRepository::DetectSourceVersion), what a target runs
// (opensearch::OpenSearchClient::GetVersion), and what the metadata transforms convert between.
#pragma once

#include <string>
#include <string_view>

#include "absl/status/statusor.h"

namespace rfs::core {

struct ClusterVersion {
  enum class Product { kUnknown, kElasticsearch, kOpenSearch };
  Product product = Product::kUnknown;
  int major = 0;
  /// -1 when not known (e.g. an Elasticsearch 8.10+ index version id rfs has no table entry for).
  int minor = 0;
  /// -1 when not known or not given.
  int patch = -1;

  bool opensearch() const { return product == Product::kOpenSearch; }
  bool elasticsearch() const { return product == Product::kElasticsearch; }
  /// Mappings without types: OpenSearch, Elasticsearch >= 7.
  bool typeless() const { return opensearch() || major >= 7; }
  /// Elasticsearch 5/6 need a mapping type in bulk actions; later versions reject or ignore it.
  bool RequiresDocumentType() const { return elasticsearch() && major <= 6; }
  /// Composable index and component templates: OpenSearch, Elasticsearch >= 7.8.
  bool SupportsComposableTemplates() const {
    return opensearch() || major > 7 || (major == 7 && minor >= 8);
  }
  /// Data streams: OpenSearch, Elasticsearch >= 7.9.
  bool SupportsDataStreams() const {
    return opensearch() || major > 7 || (major == 7 && minor >= 9);
  }
  /// The releases rfs reads and writes: Elasticsearch 1-9 and OpenSearch 1-3.
  bool IsKnownMajor() const {
    return (elasticsearch() && major >= 1 && major <= 9) ||
           (opensearch() && major >= 1 && major <= 3);
  }
  /// "ES 7.10.2", "OS 2.19" (without a known patch), "ES 9.x" (without a known minor), "unknown".
  std::string ToString() const;
  /// "Elasticsearch 7.10.2", "OpenSearch 2.11.0".
  std::string LongName() const;

  /// Parses "ES 6.8", "es6", "Elasticsearch 7.10.2", "OS 2.19", "OpenSearch 1.3", "os_2.11",
  /// "ES_7_10" (product, then major[.minor[.patch]]). InvalidArgument otherwise.
  static absl::StatusOr<ClusterVersion> Parse(std::string_view text);
  /// Parse, refusing versions that are not IsKnownMajor() (a mistyped major, "OS_99").
  static absl::StatusOr<ClusterVersion> ParseKnown(std::string_view text);

  friend bool operator==(const ClusterVersion&, const ClusterVersion&) = default;
};

}  // namespace rfs::core
