// libFuzzer entry point for the console's request handling (JSON bodies, paths and queries from
// any peer): whatever arrives, the answer is no 5xx but a store outage (503), and holds to the
// console's OpenAPI document.
//
// Input: byte 0 picks the route, the rest is the body (or, for acquire, the worker id).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "rfs/console/console_service.hpp"
#include "rfs/console/console_store.hpp"

#include "console/console_openapi_internal.hpp"
#include <unistd.h>

namespace {

constexpr const char* kAdminToken = "fuzz-admin-token-0123456789abcdef";
constexpr const char* kItems = "/sessions/fuzz/backfill/work-items";

rfs::console::ConsoleService& Service() {
  static std::unique_ptr<rfs::console::ConsoleStore> store = [] {
    static char path[] = "/tmp/rfs-console-fuzz-XXXXXX";
    const int fd = mkstemp(path);
    if (fd < 0) std::abort();
    close(fd);
    std::atexit([] {
      for (const char* suffix : {"", "-wal", "-shm"})
        std::remove((std::string(path) + suffix).c_str());
    });
    rfs::console::ConsoleStoreOptions options;
    options.uri = std::string("sqlite:") + path;
    auto opened = rfs::console::ConsoleStore::Open(std::move(options));
    if (!opened.ok()) std::abort();
    if (!(*opened)->CreateSession("fuzz", "").ok()) std::abort();
    return *std::move(opened);
  }();
  static rfs::console::ConsoleService service(*store, {.admin_token = kAdminToken});
  return service;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 1) return 0;
  const std::string body(reinterpret_cast<const char*>(data + 1), size - 1);
  rfs::net::HttpRequest request;
  request.headers.emplace_back("Authorization", std::string("Bearer ") + kAdminToken);
  request.headers.emplace_back("Content-Type", "application/json");
  request.body = body;
  const std::string item = std::string(kItems) + "/logs__0__0";
  switch (data[0] % 8) {
    case 0:
      request.method = "POST";
      request.target = "/sessions";
      break;
    case 1:
      request.method = "POST";
      request.target = kItems;
      break;
    case 2:
      request.method = "PUT";
      request.target = item + "/lease";
      break;
    case 3:
      request.method = "PUT";
      request.target = item + "/release";
      break;
    case 4:
      request.method = "PUT";
      request.target = item + "/complete";
      break;
    case 5:
      request.method = "POST";
      request.target = item + "/successors";
      break;
    case 6:
      request.method = "GET";
      request.target = std::string(kItems) + "/acquire?worker_id=" + body;
      request.body.clear();
      break;
    default:
      request.method = "GET";
      request.target = body.empty() || body[0] != '/' ? "/" + body : body;
      request.body.clear();
      break;
  }
  const rfs::net::HttpResponse response = Service().Handle(request);
  if (response.status >= 500 && response.status != 503) {
    std::fprintf(stderr, "%s %s -> %d %s\n", request.method.c_str(), request.target.c_str(),
                 response.status, response.body.c_str());
    std::abort();
  }
  const std::string departure = rfs::console::internal::CheckAnswerAgainstOpenApi(
      request.method, request.target, response.status, response.body);
  if (!departure.empty()) {
    std::fprintf(stderr, "departs from the OpenAPI document: %s\nthe answer: %.2000s\n",
                 departure.c_str(), response.body.c_str());
    std::abort();
  }
  return 0;
}
