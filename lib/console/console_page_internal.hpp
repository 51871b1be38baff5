// The console's single page (HTML, CSS and JavaScript in one document, served at "/").
#pragma once

#include <string_view>

namespace rfs::console::internal {

std::string_view ConsolePage();

}  // namespace rfs::console::internal
