// Boost.Beast, compiled once for the library and everything linking it. See
// net_beast_internal.hpp for why.
// The internal header defines the separate-compilation macros and must come first.
// clang-format off
#include "net/net_beast_internal.hpp"
// GCC 12 reports Beast's parser (boost::optional members) as maybe-uninitialized; the warning is
// a known false positive in Boost 1.81 and would drown ours.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <boost/beast/src.hpp>
// clang-format on
