// The console's single page (HTML, CSS and JavaScript in one document, served at "/").
#pragma once

#include <string_view>

namespace rfs::console::internal {

/// The page: lib/console/page.html, compiled in at build time (rfs_embed_file). Plain HTML, CSS
/// and JavaScript, no build step. It reads the token from "?token=T" (then drops it from the
/// address bar) or asks for it, lists the sessions the token opens with their percent complete,
/// and shows one session's status, polled every two seconds: overall, per-index and per-shard
/// progress bars, throughput, ETA, active workers and failed documents, with filters by status,
/// worker and index.
std::string_view ConsolePage();

}  // namespace rfs::console::internal
