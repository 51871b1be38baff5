// The one way lib/reindex includes Boost.Asio, Boost.Beast and Asio's OpenSSL layer.
//
// Asio and Beast are compiled once, in net_asio_src.cpp and net_beast_src.cpp, rather than
// inlined into every translation unit, which keeps builds fast on small machines.
// Every file of this library that needs them includes this header first, so the separate-
// compilation macros are always defined consistently; public headers never include it, so
// embedders never see the macros. Not installed.
#pragma once

#ifndef BOOST_ASIO_SEPARATE_COMPILATION
#define BOOST_ASIO_SEPARATE_COMPILATION
#endif
#ifndef BOOST_BEAST_SEPARATE_COMPILATION
#define BOOST_BEAST_SEPARATE_COMPILATION
#endif

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>
