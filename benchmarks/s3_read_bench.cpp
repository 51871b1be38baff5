// s3_read_bench: a snapshot repository read from a local folder and from S3 (s3rver on loopback,
// the same bytes uploaded), side by side: time to the first document, MB/s of `_source` over
// every shard, and bytes this process wrote to disk while reading (/proc/self/io write_bytes;
// reading in place should write none). s3rver on loopback answers in microseconds, so the S3
// reads are also made through a proxy (test/support/s3_proxy.hpp) that gives every answer S3's
// first-byte latency and caps each connection's bandwidth, as S3 over a network does. Each shard
// is read as the workers read it by default: decoded on one thread per core in cursor order
// (lucene::ParallelDocumentReader); --reader-threads 0 reads on this thread (the serial cursor,
// which checks a stored-fields file's checksum by reading it whole before decoding it).
//
// The same repository is then read from GCS (fake-gcs-server) and Azure Blob Storage (Azurite),
// started and filled through scripts/local-cloud, on loopback and through the same proxy at the
// same latency and per-connection bandwidth (passing their requests on with their own
// credentials), with the CPU each takes per GB of `_source`.
//
//   s3_read_bench REPOSITORY_FOLDER [--latency-ms 30] [--mb-per-s 80] [--reader-threads N]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>

#include "rfs/cloud/azure_repo.hpp"
#include "rfs/cloud/gcs_repo.hpp"
#include "rfs/lucene/parallel_reader.hpp"
#include "rfs/lucene/snapshot_shard.hpp"
#include "rfs/s3/s3_repo.hpp"
#include "rfs/snapshot/repository.hpp"

#include "support/local_cloud.hpp"
#include "support/s3_proxy.hpp"
#include "support/s3_server.hpp"
#include <sys/resource.h>

namespace {

uint64_t WrittenBytes() {
  std::ifstream io("/proc/self/io");
  std::string key;
  uint64_t value = 0;
  while (io >> key >> value) {
    if (key == "write_bytes:") return value;
  }
  return 0;
}

struct Figures {
  double first_doc_s = 0;
  double total_s = 0;
  uint64_t docs = 0;
  uint64_t source_bytes = 0;
  uint64_t written = 0;
  double cpu_s = 0;  // this process's CPU (the proxy's included: it runs in this process)
};

double CpuSeconds() {
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  return usage.ru_utime.tv_sec + usage.ru_stime.tv_sec +
         (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

Figures Read(const std::shared_ptr<rfs::snapshot::ISourceRepo>& source, int reader_threads) {
  Figures f;
  const uint64_t written_before = WrittenBytes();
  const double cpu_before = CpuSeconds();
  const auto start = std::chrono::steady_clock::now();
  auto seconds = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  auto repository = rfs::snapshot::SnapshotRepository::Open(source);
  if (!repository.ok()) throw std::runtime_error(repository.status().ToString());
  auto snapshot = (*repository)->LatestSnapshot();
  if (!snapshot.ok()) throw std::runtime_error(snapshot.status().ToString());
  for (const auto& index : (*repository)->IndicesIn(**snapshot)) {
    auto meta = (*repository)->ReadIndexMetadata(**snapshot, index);
    if (!meta.ok()) throw std::runtime_error(meta.status().ToString());
    for (int shard = 0; shard < meta->number_of_shards; ++shard) {
      auto reader = rfs::lucene::OpenSnapshotShard(**repository, **snapshot, index, shard);
      if (!reader.ok()) throw std::runtime_error(reader.status().ToString());
      std::unique_ptr<rfs::lucene::IDocumentReader> cursor;
      if (reader_threads > 0) {
        auto parallel =
            rfs::lucene::ParallelDocumentReader::Open(**reader, 0, {.threads = reader_threads});
        if (!parallel.ok()) throw std::runtime_error(parallel.status().ToString());
        cursor = *std::move(parallel);
      } else {
        auto serial = (*reader)->OpenAt(0);
        if (!serial.ok()) throw std::runtime_error(serial.status().ToString());
        cursor = *std::move(serial);
      }
      rfs::lucene::Document doc;
      while (true) {
        auto more = cursor->Next(doc);
        if (!more.ok()) throw std::runtime_error(more.status().ToString());
        if (!*more) break;
        if (f.docs++ == 0) f.first_doc_s = seconds();
        f.source_bytes += doc.source.size();
      }
    }
  }
  f.total_s = seconds();
  f.written = WrittenBytes() - written_before;
  f.cpu_s = CpuSeconds() - cpu_before;
  return f;
}

void Print(const char* what, const Figures& f) {
  std::printf(
      "%-18s first document %7.3f s  %8llu docs  %7.1f MB of _source in %6.2f s = %6.1f MB/s"
      "  CPU %5.2f s  written to disk %llu bytes\n",
      what, f.first_doc_s, static_cast<unsigned long long>(f.docs), f.source_bytes / 1e6, f.total_s,
      f.source_bytes / 1e6 / f.total_s, f.cpu_s, static_cast<unsigned long long>(f.written));
}

void PrintCpuPerGb(const char* what, const Figures& f) {
  std::printf("%-18s CPU %.2f s per GB of _source\n", what, f.cpu_s / (f.source_bytes / 1e9));
}

constexpr const char* kProxyKey = "AKIDBENCHPROXY";
constexpr const char* kProxySecret = "bench-proxy-secret";

}  // namespace

int main(int argc, char** argv) {
  double latency_ms = 30;
  double mb_per_s = 80;
  int reader_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  uint64_t read_ahead_mib = rfs::s3::S3Options{}.read_ahead_bytes >> 20;
  std::string folder;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if ((arg == "--latency-ms" || arg == "--mb-per-s") && i + 1 < argc) {
      (arg == "--latency-ms" ? latency_ms : mb_per_s) = std::stod(argv[++i]);
    } else if (arg == "--reader-threads" && i + 1 < argc) {
      reader_threads = std::stoi(argv[++i]);
    } else if (arg == "--read-ahead-mib" && i + 1 < argc) {
      read_ahead_mib = std::stoull(argv[++i]);
    } else if (folder.empty() && !arg.starts_with("--")) {
      folder = arg;
    } else {
      folder.clear();
      break;
    }
  }
  if (folder.empty()) {
    std::fprintf(stderr,
                 "usage: s3_read_bench REPOSITORY_FOLDER [--latency-ms 30] [--mb-per-s 80] "
                 "[--reader-threads N] [--read-ahead-mib M]\n");
    return 64;
  }
  try {
    auto local = rfs::snapshot::FileSystemRepo::Open(folder);
    if (!local.ok()) throw std::runtime_error(local.status().ToString());
    rfs::test::S3Server server("rfs-bench");
    const size_t files = server.Upload(folder, "repo/");
    std::printf("uploaded %zu files to s3rver\n", files);
    rfs::s3::S3Options options;
    options.endpoint = server.endpoint();
    options.region = "us-east-1";
    options.credentials = rfs::test::S3Server::Credentials();
    options.read_ahead_bytes = read_ahead_mib << 20;
    // The same read without read-ahead (each block fetched when the reader reaches it), then
    // with the defaults (parallel read-ahead); each on a fresh repository, so no cache is shared.
    rfs::s3::S3Options sequential = options;
    sequential.read_ahead_blocks = 0;
    auto plain = rfs::s3::S3Repo::Open("s3://rfs-bench/repo", sequential);
    if (!plain.ok()) throw std::runtime_error(plain.status().ToString());
    auto remote = rfs::s3::S3Repo::Open("s3://rfs-bench/repo", options);
    if (!remote.ok()) throw std::runtime_error(remote.status().ToString());
    // The same two reads at cloud latency and bandwidth.
    rfs::test::S3ProxyOptions proxy_options;
    proxy_options.upstream = server.endpoint();
    proxy_options.upstream_credentials = rfs::test::S3Server::Credentials();
    proxy_options.expect.service = "s3";
    proxy_options.expect.secrets = {{kProxyKey, kProxySecret}};
    proxy_options.first_byte_latency =
        std::chrono::microseconds(static_cast<int64_t>(latency_ms * 1000));
    proxy_options.bytes_per_second = mb_per_s * 1e6;
    rfs::test::S3Proxy proxy(proxy_options);
    rfs::s3::S3Options cloud = options;
    cloud.endpoint = proxy.endpoint();
    cloud.credentials = rfs::net::AwsCredentials{kProxyKey, kProxySecret, "", std::nullopt};
    rfs::s3::S3Options cloud_sequential = cloud;
    cloud_sequential.read_ahead_blocks = 0;
    auto cloud_plain = rfs::s3::S3Repo::Open("s3://rfs-bench/repo", cloud_sequential);
    if (!cloud_plain.ok()) throw std::runtime_error(cloud_plain.status().ToString());
    auto cloud_remote = rfs::s3::S3Repo::Open("s3://rfs-bench/repo", cloud);
    if (!cloud_remote.ok()) throw std::runtime_error(cloud_remote.status().ToString());
    // Again, with the proxy answering GETs from the folder: the same latency and per-connection
    // bandwidth without s3rver's own ceiling behind them (S3 spreads reads over many servers).
    rfs::test::S3ProxyOptions fast_options = proxy_options;
    fast_options.local_prefix = "/rfs-bench/repo/";
    fast_options.local_folder = folder;
    rfs::test::S3Proxy fast_proxy(fast_options);
    rfs::s3::S3Options fast_cloud = cloud;
    fast_cloud.endpoint = fast_proxy.endpoint();
    auto fast_remote = rfs::s3::S3Repo::Open("s3://rfs-bench/repo", fast_cloud);
    if (!fast_remote.ok()) throw std::runtime_error(fast_remote.status().ToString());

    std::printf("reading each shard on %d decoding thread(s)%s\n", reader_threads,
                reader_threads > 0 ? "" : " (the serial cursor, on this thread)");
    const Figures from_folder = Read(*local, reader_threads);
    const Figures from_s3_plain = Read(*plain, reader_threads);
    const Figures from_s3 = Read(*remote, reader_threads);
    const Figures from_cloud_plain = Read(*cloud_plain, reader_threads);
    const Figures from_cloud = Read(*cloud_remote, reader_threads);
    const Figures from_fast_cloud = Read(*fast_remote, reader_threads);
    Print("folder", from_folder);
    Print("s3, no read-ahead", from_s3_plain);
    Print("s3", from_s3);
    std::printf("through the proxy: %.0f ms to the first byte, %.0f MB/s per connection\n",
                latency_ms, mb_per_s);
    Print("s3, no read-ahead", from_cloud_plain);
    Print("s3", from_cloud);
    std::printf(
        "s3 at that latency reads at %.0f%% of the folder's rate (%.0f%% without "
        "read-ahead)\n",
        100 * from_folder.total_s / from_cloud.total_s,
        100 * from_folder.total_s / from_cloud_plain.total_s);
    std::printf("the same, GETs answered by the proxy from the folder (no s3rver behind them)\n");
    Print("s3", from_fast_cloud);
    std::printf(
        "s3 at that latency without s3rver's ceiling reads at %.0f%% of the folder's rate\n",
        100 * from_folder.total_s / from_fast_cloud.total_s);
    // Each block fetched once: more than the files' bytes would be blocks dropped and fetched
    // again.
    std::printf(
        "ranged blocks fetched: %.1f MB (s3rver), %.1f MB (proxy), %.1f MB (proxy from the "
        "folder)\n",
        (*remote)->stats().fetched_block_bytes / 1e6,
        (*cloud_remote)->stats().fetched_block_bytes / 1e6,
        (*fast_remote)->stats().fetched_block_bytes / 1e6);
    for (const Figures* f :
         {&from_s3_plain, &from_s3, &from_cloud_plain, &from_cloud, &from_fast_cloud}) {
      if (from_folder.docs != f->docs || from_folder.source_bytes != f->source_bytes) {
        std::fprintf(stderr, "s3_read_bench: S3 and folder reads differ\n");
        return 1;
      }
    }

    // GCS and Azure: the same reader over their requests, on loopback and at cloud latency.
    const auto latency = std::chrono::microseconds(static_cast<int64_t>(latency_ms * 1000));
    std::printf(
        "GCS (fake-gcs-server) and Azure (Azurite), on loopback and at %.0f ms, %.0f MB/s "
        "per connection\n",
        latency_ms, mb_per_s);
    Print("folder", from_folder);
    PrintCpuPerGb("folder", from_folder);
    PrintCpuPerGb("s3 (proxy)", from_cloud);
    for (const std::string kind : {"gcs", "azure"}) {
      rfs::test::LocalCloud emulator(kind);
      emulator.Upload(folder, "rfs-bench", "repo");
      // The same proxy as for S3, passing requests on with their own credentials.
      rfs::test::S3ProxyOptions slow_options;
      slow_options.upstream = emulator.endpoint();
      slow_options.pass_through = true;
      slow_options.first_byte_latency = latency;
      slow_options.bytes_per_second = mb_per_s * 1e6;
      rfs::test::S3Proxy slow_proxy(slow_options);
      std::shared_ptr<rfs::cloud::RangedObjectRepo> loopback, slowed;
      if (kind == "gcs") {
        rfs::cloud::GcsOptions gcs;
        gcs.endpoint = emulator.endpoint();
        gcs.read_ahead_bytes = read_ahead_mib << 20;
        loopback = rfs::cloud::GcsRepo::Open("gs://rfs-bench/repo", gcs).value();
        gcs.endpoint = slow_proxy.endpoint();
        slowed = rfs::cloud::GcsRepo::Open("gs://rfs-bench/repo", gcs).value();
      } else {
        rfs::cloud::AzureOptions azure;
        azure.endpoint = emulator.endpoint() + "/devstoreaccount1";
        azure.getenv = [&emulator](const char* name) -> const char* {
          auto it = emulator.environment().find(name);
          return it == emulator.environment().end() ? nullptr : it->second.c_str();
        };
        azure.read_ahead_bytes = read_ahead_mib << 20;
        loopback = rfs::cloud::AzureRepo::Open("az://rfs-bench/repo", azure).value();
        azure.endpoint = slow_proxy.endpoint() + "/devstoreaccount1";
        slowed = rfs::cloud::AzureRepo::Open("az://rfs-bench/repo", azure).value();
      }
      const Figures near = Read(loopback, reader_threads);
      const Figures far = Read(slowed, reader_threads);
      const std::string at_latency = kind + " (latency)";
      Print(kind.c_str(), near);
      Print(at_latency.c_str(), far);
      PrintCpuPerGb(kind.c_str(), near);
      std::printf("%s at that latency reads at %.0f%% of the folder's rate\n", kind.c_str(),
                  100 * from_folder.total_s / far.total_s);
      for (const Figures* f : {&near, &far}) {
        if (from_folder.docs != f->docs || from_folder.source_bytes != f->source_bytes) {
          std::fprintf(stderr, "s3_read_bench: %s and folder reads differ\n", kind.c_str());
          return 1;
        }
      }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "s3_read_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
