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
pkg_check_modules(LIBISAL REQUIRED IMPORTED_TARGET libisal)
# libyaml (YAML _source -> JSON) is found through its pkg-config file yaml-0.1.
pkg_check_modules(LIBYAML REQUIRED IMPORTED_TARGET yaml-0.1)
# zstd stored fields (ES 8.14+, OpenSearch custom codecs) and OpenSearch ZSTD\0 metadata blobs:
# libzstd is the library those writers call through zstd-jni (Debian libzstd-dev).
pkg_check_modules(LIBZSTD REQUIRED IMPORTED_TARGET libzstd)
# Debian python3-dev: the headers of CPython 3.11, for JsonPythonTransformerProvider, which
# loads libpython3.11 with dlopen when a transform asks for it (the Java tool runs the same
# Python scripts on GraalPy) rather than linking it into every tool.
pkg_check_modules(PYTHON3_EMBED REQUIRED python3-embed)
pkg_get_variable(PYTHON3_EMBED_PREFIX python3-embed prefix)
# The PostgreSQL stores: libpq's header only (Debian libpq-dev). The library itself is loaded when
# the first connection is opened (lib/coordination/postgres_connection.cpp), so that no tool pays
# for loading it, and the twenty libraries it brings, unless it uses PostgreSQL.
pkg_check_modules(LIBPQ REQUIRED libpq)
# User transforms: libjq (jq 1.6; Debian ships no pkg-config file for it) and duktape.
find_library(RFS_JQ_LIBRARY jq REQUIRED)
find_path(RFS_JQ_INCLUDE_DIR jq.h REQUIRED)
# rfs::transform links this imported target rather than the library's path, so the installed
# package names it and finds libjq where the consumer has it (cmake/rfsConfig.cmake.in).
add_library(RfsDeps::jq UNKNOWN IMPORTED)
set_target_properties(RfsDeps::jq PROPERTIES IMPORTED_LOCATION "${RFS_JQ_LIBRARY}"
  INTERFACE_INCLUDE_DIRECTORIES "${RFS_JQ_INCLUDE_DIR}")
# duktape 2.7 is built from the source that Debian's duktape-dev ships beside its shared library
# (/usr/share/duktape), with the execution-timeout hook turned on (DUK_USE_INTERRUPT_COUNTER and
# DUK_USE_EXEC_TIMEOUT_CHECK, left out of the packaged build): without it a script that loops
# without allocating cannot be stopped. Its objects go into rfs::transform (lib/CMakeLists.txt),
# so consumers of the package need no duktape. Compiled without sanitizers and optimized, as the
# packaged library was: it is third-party code, and 100k lines under ASan would slow every build.
find_file(RFS_DUKTAPE_SOURCE duktape.c PATHS /usr/share/duktape NO_DEFAULT_PATH REQUIRED
  DOC "duktape's amalgamated source (Debian duktape-dev)")
enable_language(C)
if(RFS_CCACHE AND NOT CMAKE_C_COMPILER_LAUNCHER)
  set(CMAKE_C_COMPILER_LAUNCHER ${RFS_CCACHE})
endif()
get_filename_component(_rfs_duktape_dir "${RFS_DUKTAPE_SOURCE}" DIRECTORY)
set(RFS_DUKTAPE_INCLUDE_DIR "${CMAKE_BINARY_DIR}/duktape")
file(READ "${_rfs_duktape_dir}/duk_config.h" _rfs_duk_config)
set(_rfs_duk_hook [=[
#define DUK_USE_INTERRUPT_COUNTER
/* rfs: the transform's watchdog asks the running script to stop (lib/transform/js_transformer.cpp) */
#if defined(__cplusplus)
extern "C" int rfs_duktape_exec_timeout(void *heap_udata);
#else
extern int rfs_duktape_exec_timeout(void *heap_udata);
#endif
#define DUK_USE_EXEC_TIMEOUT_CHECK(heap_udata) rfs_duktape_exec_timeout(heap_udata)]=])
string(REPLACE "#undef DUK_USE_EXEC_TIMEOUT_CHECK" "${_rfs_duk_hook}" _rfs_duk_config
  "${_rfs_duk_config}")
string(REPLACE "#undef DUK_USE_INTERRUPT_COUNTER" "" _rfs_duk_config "${_rfs_duk_config}")
if(NOT _rfs_duk_config MATCHES "rfs_duktape_exec_timeout")
  message(FATAL_ERROR "${_rfs_duktape_dir}/duk_config.h has no DUK_USE_EXEC_TIMEOUT_CHECK line")
endif()
file(CONFIGURE OUTPUT "${RFS_DUKTAPE_INCLUDE_DIR}/duk_config.h" CONTENT "${_rfs_duk_config}"
  @ONLY)
# Beside the configuration, so that their #include "duk_config.h" finds it.
configure_file("${_rfs_duktape_dir}/duktape.h" "${RFS_DUKTAPE_INCLUDE_DIR}/duktape.h" COPYONLY)
configure_file("${RFS_DUKTAPE_SOURCE}" "${RFS_DUKTAPE_INCLUDE_DIR}/duktape.c" COPYONLY)
add_library(rfs_duktape_objects OBJECT "${RFS_DUKTAPE_INCLUDE_DIR}/duktape.c")
target_include_directories(rfs_duktape_objects PRIVATE "${RFS_DUKTAPE_INCLUDE_DIR}")
target_compile_options(rfs_duktape_objects PRIVATE -O2 -g0 -w -fno-sanitize=all)
# User-supplied regular expressions: RE2 (linear-time matching, no recursion).
pkg_check_modules(RE2 REQUIRED IMPORTED_TARGET re2)
find_package(Threads REQUIRED)
