# Third-party dependencies, all from Debian bookworm packages (scripts/install-deps).
# PUBLIC: what public headers expose (Abseil status, Boost.JSON). Everything else is PRIVATE.
find_package(absl CONFIG REQUIRED)
# Boost 1.81 is the first Debian Boost with Boost.JSON; 1.74 (the default) lacks it.
find_package(Boost 1.81 CONFIG REQUIRED COMPONENTS json program_options)
find_package(ZLIB REQUIRED)
find_package(SQLite3 REQUIRED)
find_package(OpenSSL REQUIRED)
# libdeflate (fast gzip of bulk bodies) has only a pkg-config file in Debian bookworm (1.14).
find_package(PkgConfig REQUIRED)
pkg_check_modules(LIBDEFLATE REQUIRED IMPORTED_TARGET libdeflate)
# libyaml (YAML _source -> JSON) is found through its pkg-config file yaml-0.1.
pkg_check_modules(LIBYAML REQUIRED IMPORTED_TARGET yaml-0.1)
# zstd stored fields (ES 8.14+, OpenSearch custom codecs) and OpenSearch ZSTD\0 metadata blobs:
# libzstd is the library those writers call through zstd-jni (Debian libzstd-dev).
pkg_check_modules(LIBZSTD REQUIRED IMPORTED_TARGET libzstd)
# The PostgreSQL work-coordination store (libpqxx 6.4, Debian libpqxx-dev).
pkg_check_modules(LIBPQXX REQUIRED IMPORTED_TARGET libpqxx)
# User transforms: libjq (jq 1.6; Debian ships no pkg-config file for it) and duktape.
find_library(RFS_JQ_LIBRARY jq REQUIRED)
find_path(RFS_JQ_INCLUDE_DIR jq.h REQUIRED)
pkg_check_modules(DUKTAPE REQUIRED IMPORTED_TARGET duktape)
# User-supplied regular expressions: RE2 (linear-time matching, no recursion).
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_package(Threads REQUIRED)
