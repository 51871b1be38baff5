// Checks of Prometheus metrics in tests: a scrape, promtool's verdict and one series' value.
#pragma once

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <utility>

#include <catch2/catch.hpp>

#include "rfs/net/beast_http_transport.hpp"

#include <sys/wait.h>
#include <unistd.h>

namespace rfs::test {

/// Runs `promtool check metrics` (Debian prometheus, installed by scripts/install-deps) on
/// `text`; its exit status and output.
inline std::pair<int, std::string> PromtoolCheck(const std::string& text) {
  std::string path = (std::filesystem::temp_directory_path() / "rfs-metrics-XXXXXX").string();
  const int fd = mkstemp(path.data());
  REQUIRE(fd >= 0);
  REQUIRE(write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()));
  close(fd);
  const std::string command = std::string(RFS_PROMTOOL) + " check metrics < " + path + " 2>&1";
  FILE* pipe = popen(command.c_str(), "r");
  REQUIRE(pipe != nullptr);
  std::string output;
  char buffer[4096];
  size_t n;
  while ((n = fread(buffer, 1, sizeof buffer, pipe)) > 0) output.append(buffer, n);
  const int status = pclose(pipe);
  std::remove(path.c_str());
  return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, output};
}

/// GET `url` (a metrics endpoint, e.g. "http://127.0.0.1:9464/metrics"): the body of its 200.
inline std::string ScrapeMetrics(const std::string& url) {
  const size_t path = url.find('/', url.find("://") + 3);
  rfs::net::HttpTransportOptions options;
  options.endpoint = url.substr(0, path);
  auto transport = rfs::net::BeastHttpTransport::Open(options);
  REQUIRE(transport.ok());
  rfs::net::HttpRequest get;
  get.target = path == std::string::npos ? "/metrics" : url.substr(path);
  auto response = (*transport)->Send(get);
  REQUIRE(response.ok());
  REQUIRE(response->status == 200);
  return response->body;
}

/// The value of the sample whose name and labels are exactly `series` (as written in the text,
/// e.g. `rfs_x_total{tool="T"}`); -1 when there is none.
inline double MetricValue(const std::string& text, const std::string& series) {
  const std::string prefix = series + " ";
  size_t at = 0;
  while ((at = text.find(prefix, at)) != std::string::npos) {
    if (at == 0 || text[at - 1] == '\n')
      return std::strtod(text.c_str() + at + prefix.size(), nullptr);
    at += prefix.size();
  }
  return -1;
}

}  // namespace rfs::test
