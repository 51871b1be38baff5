// opensearch-double: the OpenSearch test double as a standalone server for manual runs, e.g.
//   opensearch-double --port 9200 --fault-429 0.1
//   curl -s localhost:9200/ ; curl -s -H 'Content-Type: application/x-ndjson' \
//     --data-binary @batch.ndjson localhost:9200/_bulk
// Serves until SIGINT or SIGTERM.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "opensearch_double.hpp"
#include <signal.h>

namespace {

void Usage() {
  std::fprintf(stderr,
               "usage: opensearch-double [--port N] [--version 2.11.0] [--distribution "
               "opensearch|elasticsearch]\n"
               "  [--user U --password P] [--tls-cert FILE --tls-key FILE [--tls-client-ca FILE]]\n"
               "  [--discard-bulk]\n"
               "  [--fault-429 P] [--fault-503 P] [--fault-reset P] [--fault-reset-after P]\n"
               "  [--fault-slow P --slow-ms MS] [--fault-item P] [--fault-path SUBSTRING]\n"
               "  [--snapshot-polls N] [--snapshot-final-state SUCCESS|PARTIAL|FAILED]\n"
               "  [--create-index NAME]... (empty indices created at start-up)\n"
               "Faults (--fault-* P: the probability per request) hit only requests whose path\n"
               "contains --fault-path (default: _bulk); --fault-path / faults every request.\n");
}

}  // namespace

int main(int argc, char** argv) {
  rfs::testing::OpenSearchDoubleOptions options;
  options.port = 9200;
  std::vector<std::string> create_indices;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      Usage();
      return 0;
    }
    if (arg == "--discard-bulk") {
      options.discard_bulk = true;
      continue;
    }
    if (i + 1 >= argc) {
      Usage();
      return 2;
    }
    const std::string value = argv[++i];
    if (arg == "--port") {
      const int port = std::atoi(value.c_str());
      if (port < 0 || port > 65535 || value.find_first_not_of("0123456789") != std::string::npos) {
        std::fprintf(stderr, "opensearch-double: --port must be 0-65535 (0: any free port)\n");
        return 2;
      }
      options.port = static_cast<uint16_t>(port);
    } else if (arg == "--version") {
      options.version = value;
    } else if (arg == "--distribution") {
      options.distribution = value;
    } else if (arg == "--user") {
      options.username = value;
    } else if (arg == "--password") {
      options.password = value;
    } else if (arg == "--tls-cert") {
      options.tls_cert_file = value;
    } else if (arg == "--tls-key") {
      options.tls_key_file = value;
    } else if (arg == "--tls-client-ca") {
      options.tls_client_ca_file = value;
    } else if (arg == "--fault-429") {
      options.faults.reject_429 = std::atof(value.c_str());
    } else if (arg == "--fault-503") {
      options.faults.unavailable_503 = std::atof(value.c_str());
    } else if (arg == "--fault-reset") {
      options.faults.reset_before_apply = std::atof(value.c_str());
    } else if (arg == "--fault-reset-after") {
      options.faults.reset_after_apply = std::atof(value.c_str());
    } else if (arg == "--fault-slow") {
      options.faults.slow = std::atof(value.c_str());
    } else if (arg == "--slow-ms") {
      options.faults.slow_delay = std::chrono::milliseconds(std::atoi(value.c_str()));
    } else if (arg == "--fault-item") {
      options.faults.item_failure = std::atof(value.c_str());
    } else if (arg == "--fault-path") {
      options.faults.path_contains = value;
    } else if (arg == "--snapshot-polls") {
      options.snapshot_polls_to_complete = std::atoi(value.c_str());
    } else if (arg == "--snapshot-final-state") {
      if (value != "SUCCESS" && value != "PARTIAL" && value != "FAILED") {
        Usage();
        return 2;
      }
      options.snapshot_final_state = value;
    } else if (arg == "--create-index") {
      create_indices.push_back(value);
    } else {
      Usage();
      return 2;
    }
  }

  // Block the stop signals before any server thread starts, so only sigwait sees them.
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  auto server = rfs::testing::OpenSearchDouble::Start(options);
  if (!server.ok()) {
    std::fprintf(stderr, "opensearch-double: %s\n", std::string(server.status().message()).c_str());
    return 1;
  }
  for (const auto& index : create_indices) {
    if (auto created = (*server)->CreateIndex(index, "{}"); !created.ok()) {
      std::fprintf(stderr, "opensearch-double: --create-index %s: %s\n", index.c_str(),
                   std::string(created.message()).c_str());
      return 2;
    }
  }
  std::printf("opensearch-double %s %s listening on %s\n", options.distribution.c_str(),
              options.version.c_str(), (*server)->endpoint().c_str());
  std::fflush(stdout);
  int received = 0;
  sigwait(&signals, &received);
  std::printf("opensearch-double: stopping\n");
  return 0;
}
