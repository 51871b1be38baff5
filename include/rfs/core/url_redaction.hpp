// URLs in messages without their secrets.
#pragma once

#include <string>
#include <string_view>

namespace rfs::core {

/// `url` with the password of its user info removed: "postgresql://user:secret@host/db" ->
/// "postgresql://user@host/db". The user info ends at the last '@' of the URL, so a password
/// holding '@' (or '/') leaves no part of itself behind; an '@' later in the path costs at most
/// some of the path. Text without "://" is returned as it is.
std::string WithoutPassword(std::string_view url);

}  // namespace rfs::core
