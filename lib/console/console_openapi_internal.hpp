// The console's OpenAPI document (console_openapi.cpp).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rfs::console::internal {

/// The OpenAPI 3.0 document of the console's API, as JSON text.
std::string_view ConsoleOpenApi();

/// Where an answer (`status`, JSON `body`) to `method target` departs from the document, as one
/// line; "" when it holds to it (or the path is not the API's: the page).
std::string CheckAnswerAgainstOpenApi(std::string_view method, std::string_view target, int status,
                                      std::string_view body);

/// The methods the document serves on `path` (its path template's operations), upper case, in
/// the document's order; nullopt when the path is not the API's (the page).
std::optional<std::vector<std::string>> DocumentedMethods(std::string_view path);

}  // namespace rfs::console::internal
