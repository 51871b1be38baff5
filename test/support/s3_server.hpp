// S3Server: a real S3-compatible server for tests, s3rver from npm (installed into test/s3 by
// scripts/install-deps), started on a loopback port in a temporary folder and stopped with the
// object. It requires SigV4-signed requests with its default access key (kAccessKey).
#pragma once

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>

#include "rfs/core/clock.hpp"
#include "rfs/net/aws_sigv4.hpp"
#include "rfs/net/beast_http_transport.hpp"
#include "rfs/net/encoding.hpp"

#include "support/process.hpp"
#include "support/temp_dir.hpp"
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

namespace rfs::test {

class S3Server {
 public:
  static constexpr const char* kAccessKey = "S3RVER";
  static constexpr const char* kSecretKey = "S3RVER";

  /// Starts s3rver with `bucket` created; throws (failing the test) when it cannot run: a missing
  /// Node.js or s3rver is an install-deps bug, not a reason to skip.
  explicit S3Server(const std::string& bucket) : bucket_(bucket) {
    const std::filesystem::path script =
        std::filesystem::path(RFS_SOURCE_DIR) / "test/s3/node_modules/s3rver/bin/s3rver.js";
    if (!std::filesystem::exists(script)) {
      throw std::runtime_error("s3rver is not installed: run scripts/install-deps");
    }
    port_ = FreeLoopbackPort();
    process_ = std::make_unique<ChildProcess>(
        // s3rver 3.7 makes continuation tokens with a cipher that Node's OpenSSL 3 keeps behind
        // the legacy provider.
        std::vector<std::string>{RFS_NODE, "--openssl-legacy-provider", script.string(), "-d",
                                 dir_.File("data"), "-a", "127.0.0.1", "-p", std::to_string(port_),
                                 "--silent", "--no-vhost-buckets", "--configure-bucket", bucket},
        dir_.File("s3rver.out"), dir_.File("s3rver.err"));
    std::filesystem::create_directories(dir_.File("data"));
    auto opened = net::BeastHttpTransport::Open({.endpoint = endpoint(), .sigv4 = Signing()});
    if (!opened.ok()) throw std::runtime_error(opened.status().ToString());
    transport_ = *std::move(opened);
    const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      net::HttpRequest probe;
      probe.target = "/" + bucket_ + "?list-type=2";
      auto response = transport_->Send(probe);
      if (response.ok() && response->status == 200) break;
      if (process_->Exited() || std::chrono::steady_clock::now() > give_up) {
        throw std::runtime_error("s3rver did not start: " + ReadTextFile(dir_.File("s3rver.err")));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  }
  ~S3Server() {
    if (process_) {
      kill(process_->pid(), SIGTERM);
      process_->Wait();
    }
  }

  std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(port_); }
  const std::string& bucket() const { return bucket_; }
  static net::AwsCredentials Credentials() { return {kAccessKey, kSecretKey, "", std::nullopt}; }

  /// PUTs one object; throws on failure.
  void Put(const std::string& key, const std::string& bytes) {
    net::HttpRequest request;
    request.method = "PUT";
    request.target = "/" + bucket_ + "/" + net::PercentEncode(key, /*keep_slash=*/true);
    request.headers.emplace_back("Content-Type", "application/octet-stream");
    request.body = bytes;
    auto response = transport_->Send(request);
    if (!response.ok() || response->status != 200) {
      throw std::runtime_error("PUT " + key + " failed: " +
                               (response.ok() ? response->body : response.status().ToString()));
    }
  }

  /// Uploads every file under `folder` as `prefix` + its relative path. Returns the file count.
  /// Each folder also gets an empty "<folder>/" marker object (as the AWS console's "Create
  /// folder" makes): s3rver's file store reports a common prefix only for folders that directly
  /// hold an object, where S3 reports every one.
  size_t Upload(const std::filesystem::path& folder, const std::string& prefix) {
    size_t count = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(folder)) {
      if (entry.is_directory()) {
        Put(prefix + std::filesystem::relative(entry.path(), folder).generic_string() + "/", "");
        continue;
      }
      if (!entry.is_regular_file()) continue;
      std::ifstream in(entry.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      Put(prefix + std::filesystem::relative(entry.path(), folder).generic_string(), bytes);
      ++count;
    }
    return count;
  }

 private:
  static net::SigV4Options Signing() {
    return net::SigV4Options{.region = "us-east-1", .service = "s3", .credentials = Credentials()};
  }

  TempDir dir_{"rfs-s3rver"};
  std::string bucket_;
  int port_ = 0;
  std::unique_ptr<ChildProcess> process_;
  std::unique_ptr<net::BeastHttpTransport> transport_;
};

}  // namespace rfs::test
