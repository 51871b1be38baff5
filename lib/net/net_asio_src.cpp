// Boost.Asio (with its OpenSSL layer), compiled once for the library and everything linking it.
// See net_beast_internal.hpp for why.
// The internal header defines the separate-compilation macros and must come first.
// clang-format off
#include "net/net_beast_internal.hpp"
#include <boost/asio/impl/src.hpp>
#include <boost/asio/ssl/impl/src.hpp>
// clang-format on
