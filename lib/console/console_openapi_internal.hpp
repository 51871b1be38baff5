// The console's OpenAPI document (console_openapi.cpp).
#pragma once

#include <string_view>

namespace rfs::console::internal {

/// The OpenAPI 3.0 document of the console's API, as JSON text.
std::string_view ConsoleOpenApi();

}  // namespace rfs::console::internal
