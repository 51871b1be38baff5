// The console's OpenAPI document and the check of answers against it (console_openapi_check.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rfs::console::internal {

/// The OpenAPI 3.0 document of the console's API, as JSON text: lib/console/openapi.json,
/// compiled in at build time (rfs_embed_file) and served at GET /openapi.json. The suite fuzzes
/// the console against it (schemathesis: no 5xx, every answer within this document); a route or
/// field added to console_service.cpp belongs there too.
std::string_view ConsoleOpenApi();

/// Where an answer (`status`, JSON `body`) to `method target` departs from the document, as one
/// line; "" when it holds to it (or the path is not the API's: the page).
std::string CheckAnswerAgainstOpenApi(std::string_view method, std::string_view target, int status,
                                      std::string_view body);

/// The methods the document serves on `path` (its path template's operations), upper case, in
/// the document's order; nullopt when the path is not the API's (the page).
std::optional<std::vector<std::string>> DocumentedMethods(std::string_view path);

}  // namespace rfs::console::internal
