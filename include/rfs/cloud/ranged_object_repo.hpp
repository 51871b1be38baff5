// RangedObjectRepo: a snapshot repository in an object store (S3, Google Cloud Storage, Azure
// Blob Storage), read in place.
//
// Blobs are read with ranged GETs as the readers ask for them (nothing is written to local disk),
// with parallel read-ahead under a memory budget once a blob is read in order; small blobs
// (metadata) are fetched whole and kept for the run; every open handle of a large blob shares its
// blocks. Requests are resent on 429, 5xx and broken connections with backoff. What differs
// between the stores (how a listing page, a ranged GET, a size and an upload are asked for, how
// their answers and errors read) is an IObjectProtocol: the S3, GCS and Azure adapters are a
// few requests and parsers each over this one reader.
//
// Thread safety: every method may be called concurrently.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "rfs/net/http_transport.hpp"
#include "rfs/snapshot/source_repo.hpp"

#include "absl/status/statusor.h"

namespace rfs::cloud {

/// One page of a listing: keys and (with a delimiter) folder prefixes, both full keys.
struct ObjectListPage {
  std::vector<std::string> keys;
  std::vector<std::string> prefixes;
  /// The token of the next page; empty on the last one.
  std::string next_token;
};

/// One object store's requests and answers. Keys are full object names (the repository's
/// prefix included); requests are relative to the transport's endpoint.
class IObjectProtocol {
 public:
  virtual ~IObjectProtocol() = default;
  /// A page of the keys under `prefix`, '/' as the delimiter unless `flat`, from `token` (empty:
  /// the first page), at most `page_keys` keys.
  virtual net::HttpRequest ListRequest(std::string_view prefix, bool flat, std::string_view token,
                                       int page_keys) const = 0;
  /// A 200 answer to ListRequest; DataLoss naming `source` when it cannot be read.
  virtual absl::StatusOr<ObjectListPage> ParseList(const net::HttpResponse& response,
                                                   std::string_view source) const = 0;
  /// A GET of the object's bytes; the caller adds RangeHeader() = "bytes=FIRST-LAST".
  virtual net::HttpRequest GetRequest(std::string_view key) const = 0;
  /// "Range" (S3, GCS) or "x-ms-range" (Azure).
  virtual std::string_view RangeHeader() const { return "Range"; }
  /// A request whose 200 answer gives the object's size (HEAD, or GCS's metadata GET).
  virtual net::HttpRequest SizeRequest(std::string_view key) const = 0;
  virtual absl::StatusOr<uint64_t> ParseSize(const net::HttpResponse& response,
                                             std::string_view source) const;
  /// One object written whole (the failed-document stream).
  virtual net::HttpRequest PutRequest(std::string_view key, std::string body,
                                      std::string_view content_type) const = 0;
  /// A non-2xx answer to `what` in `description` as a status: the store's own code and message
  /// from its body, 401 as PermissionDenied, 404 NotFound, 429 and 5xx Unavailable.
  virtual absl::Status ErrorFor(const net::HttpResponse& response, std::string_view what,
                                std::string_view description) const = 0;
};

/// The reader's sizes and counts; each store's options derive from it.
struct RangedReadOptions {
  /// Keys per listing page (S3 and Azure return at most 5,000; S3 1,000).
  int list_page_keys = 1000;
  /// Sends per request on transient failures (429, 5xx, resets, timeouts).
  int request_attempts = 6;
  /// Blobs up to this size are fetched whole on open (metadata blobs) and kept for the run (up
  /// to `metadata_cache_bytes`); larger ones are read by range as the reader asks.
  uint64_t whole_blob_bytes = 1 << 20;
  uint64_t metadata_cache_bytes = uint64_t{64} << 20;
  /// Ranged reads fetch aligned blocks of this size; each open blob keeps the
  /// `cached_blocks_per_blob` most recently read (three: two decoding threads reading a blob
  /// side by side use up to three blocks at once).
  uint64_t read_block_bytes = uint64_t{4} << 20;
  size_t cached_blocks_per_blob = 3;
  /// Read-ahead: once a blob is read block after block, up to `read_ahead_blocks` following
  /// blocks are fetched in parallel by `fetch_threads` threads, while the blocks fetched ahead
  /// and not read yet (across every blob) stay under `read_ahead_bytes`. 0 blocks: none.
  size_t read_ahead_blocks = 8;
  uint64_t read_ahead_bytes = uint64_t{64} << 20;
  /// The read-ahead's budget while the shared memory budget (ShareMemoryBudget) holds a huge
  /// document: with a 100 MB document decoded and converted beside the blocks fetched ahead, the
  /// full read-ahead would take a worker past 256 MiB.
  uint64_t read_ahead_bytes_beside_large_document = uint64_t{8} << 20;
  int fetch_threads = 16;
  /// Tests: a transport to use instead of opening one for the endpoint.
  std::shared_ptr<net::IHttpTransport> transport;
};

class RangedObjectRepo : public snapshot::ISourceRepo {
 public:
  struct Impl;

  /// A repository of the keys under `prefix` ("" or ending in '/'), named `description` in
  /// messages, read through `transport` (resends are added here) as `protocol` asks.
  static absl::StatusOr<std::shared_ptr<RangedObjectRepo>> Open(
      std::string description, std::string prefix, std::shared_ptr<const IObjectProtocol> protocol,
      std::shared_ptr<net::IHttpTransport> transport, const RangedReadOptions& options);
  ~RangedObjectRepo() override;

  const std::string& description() const override;
  absl::StatusOr<std::vector<std::string>> ListBlobs(std::string_view dir) const override;
  absl::StatusOr<std::vector<std::string>> ListFolders(std::string_view dir) const override;
  /// One listing without a delimiter: every key under the prefix, whatever the store reports as
  /// folders (s3rver names a folder only where it holds an object directly).
  absl::StatusOr<std::vector<std::string>> ListBlobsBelow(std::string_view dir,
                                                          int max_depth = 16) const override;
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlob(
      std::string_view path) const override;
  /// Without the size request that OpenBlob may send first: at a store's first-byte latency that
  /// halves the requests that open a shard's files.
  absl::StatusOr<std::shared_ptr<const core::IRandomAccessFile>> OpenBlobOfSize(
      std::string_view path, uint64_t size) const override;
  absl::StatusOr<uint64_t> BlobSize(std::string_view path) const override;
  /// Fetches the small blobs whole (into the metadata cache) and the first block of the large
  /// ones (under the read-ahead budget) on the fetch threads, so that a shard's files open
  /// without a round trip each.
  void Prefetch(std::span<const snapshot::BlobExtent> blobs) const override;
  void ShareMemoryBudget(const core::MemoryBudget* budget) const override;

  /// Writes one object at `key` below the prefix (a single request, resent on transient
  /// failures: the same key and body, so a resend is harmless). For the failed-document stream.
  absl::Status PutObject(std::string_view key, std::string body, std::string_view content_type);

  struct Stats {
    /// Bytes fetched by ranged reads of large blobs (read-ahead and lone footers included).
    uint64_t fetched_block_bytes = 0;
    /// Opens served from the metadata cache without a request.
    uint64_t metadata_cache_hits = 0;
    /// Bytes fetched ahead and not read yet.
    uint64_t read_ahead_bytes_held = 0;
  };
  Stats stats() const;

 protected:
  static std::shared_ptr<Impl> MakeImpl(std::string description, std::string prefix,
                                        std::shared_ptr<const IObjectProtocol> protocol,
                                        std::shared_ptr<net::IHttpTransport> transport,
                                        const RangedReadOptions& options);
  explicit RangedObjectRepo(std::shared_ptr<Impl> impl);
  // Shared with the blobs it opened, which may outlive this object.
  std::shared_ptr<Impl> impl_;
};

/// Splits "scheme://BUCKET[/PATH]" into the bucket and a prefix with no leading and one
/// trailing '/' (or empty). InvalidArgument naming `what` (e.g. "gs://bucket/path") when `uri`
/// has another scheme or no bucket; the bucket's own rules are the caller's.
struct BucketUri {
  std::string bucket;
  std::string prefix;
  static absl::StatusOr<BucketUri> Parse(std::string_view uri, std::string_view scheme,
                                         std::string_view what);
  /// The split alone, of what follows "scheme://" ("BUCKET[/PATH]"), with no check.
  static BucketUri Split(std::string_view bucket_and_path);
};

/// The "Range"/"x-ms-range" value for [offset, offset + length), length > 0.
std::string ByteRange(uint64_t offset, uint64_t length);

}  // namespace rfs::cloud
