// Calls on a running migration console for tools and scripts: create a session, read a
// session's status. (Workers use coordination::ConsoleWorkCoordinator.)
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <string_view>

#include <boost/json/object.hpp>

#include "rfs/console/console_server.hpp"

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace rfs::console {

struct ConsoleClientOptions {
  /// "http://host:port" or "https://...".
  std::string url;
  /// The admin token (to create sessions) or a session's token. Never logged.
  std::string token;
  /// PEM CA certificates to trust for an https:// console (default: the system's).
  std::string ca_cert_file;
  std::chrono::milliseconds timeout{std::chrono::seconds(30)};
};

/// Creates session `name`; returns its token. AlreadyExists if the name is taken,
/// PermissionDenied without the admin token, InvalidArgument for a bad name.
absl::StatusOr<std::string> CreateSession(const ConsoleClientOptions& options,
                                          std::string_view name);

/// The session's status document (see console_status.hpp). NotFound for no such session,
/// PermissionDenied for a token that does not open it, Unavailable when the console is down.
absl::StatusOr<boost::json::object> FetchSessionStatus(const ConsoleClientOptions& options,
                                                       std::string_view session);

/// Runs a console until `stop` is set: starts it, calls `on_ready` with it (its URLs), then
/// waits.
absl::Status ServeConsole(ConsoleServerOptions options, const std::atomic<bool>& stop,
                          const std::function<void(const ConsoleServer& server)>& on_ready);

}  // namespace rfs::console
