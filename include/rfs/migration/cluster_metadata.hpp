// A live Elasticsearch or OpenSearch cluster read for its metadata, as the Java tool's
// `MetadataMigration --source-host` reads one: its legacy, component and index templates, its
// data streams and each index's settings, mappings and aliases, over the REST API (the reads a
// cluster answers from its cluster state, with no search and no document read).
//
// The cluster is presented as a repository that holds one snapshot (snapshot::SnapshotCatalog)
// without shard files, so that MetadataMigrator migrates or evaluates it unchanged. The answers
// are put in the shapes a snapshot's metadata blobs have (docs/tools.md, "Metadata from a live
// cluster"): index settings flat, mappings by type (`_doc` for the typeless answers of
// Elasticsearch 8 and OpenSearch 2+), aliases with their filters and routing.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "rfs/opensearch/client.hpp"
#include "rfs/snapshot/repository.hpp"

#include "absl/status/statusor.h"

namespace rfs::migration {

/// The name of the one snapshot of a repository made by ReadClusterMetadata.
inline constexpr const char* kLiveClusterSnapshotName = "live-cluster";

/// Reads the metadata of the cluster behind `source` (GET /, then the template, data stream,
/// settings, mapping and alias APIs its version has). `version` (`--source-version`) stands in
/// for the cluster's own where GET / is refused (404, 403, 405: a proxy, a user without the
/// permission) and where an OpenSearch in compatibility mode answers as Elasticsearch 7.10; what
/// was taken instead, and an index deleted while it was read, are said in `notes`.
/// The client's errors as they are (with the request and endpoint); DataLoss naming the request
/// when an answer is not shaped as the API documents. Every request is made before this returns:
/// the repository does not keep the client.
absl::StatusOr<std::unique_ptr<snapshot::SnapshotRepository>> ReadClusterMetadata(
    opensearch::OpenSearchClient& source, std::optional<core::ClusterVersion> version = {},
    std::vector<std::string>* notes = nullptr);

}  // namespace rfs::migration
