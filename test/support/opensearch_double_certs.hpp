// Test certificates for the OpenSearch double's TLS mode, made at test time with OpenSSL's C API
// (no `openssl` binary needed): a self-signed CA and a server certificate it signs.
//
// Thread-safe (no shared state).
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace rfs::testing {

struct TestCertificates {
  std::string ca_cert_file;      // PEM
  std::string server_cert_file;  // PEM, signed by the CA
  std::string server_key_file;   // PEM
  std::string client_cert_file;  // PEM, signed by the CA, for clientAuth (mutual TLS)
  std::string client_key_file;   // PEM
};

/// Writes ca.pem, server.pem and server-key.pem into `directory` (which must exist). The server
/// certificate carries the given subject alternative names, e.g. {"IP:127.0.0.1",
/// "DNS:localhost"}.
absl::StatusOr<TestCertificates> MakeTestCertificates(
    const std::string& directory,
    const std::vector<std::string>& subject_alt_names = {"IP:127.0.0.1", "DNS:localhost"});

}  // namespace rfs::testing
