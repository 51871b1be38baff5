#include "rfs/core/string_pool.hpp"

#include <string>

#include <catch2/catch.hpp>

namespace rfs::core {

TEST_CASE("a string pool gives back the buffers it was given, empty, within its caps",
          "[core][string_pool]") {
  StringPool pool(/*max_each=*/1 << 20, /*max_bytes=*/3 << 20, /*max_count=*/2);
  std::string first = pool.Take(100'000);
  CHECK(first.capacity() >= 100'000);
  first.assign(50'000, 'x');
  const char* buffer = first.data();
  pool.Give(std::move(first));
  // The buffer comes back empty, and grows when more room is asked for.
  std::string again = pool.Take(10);
  CHECK(again.empty());
  CHECK(again.data() == buffer);
  pool.Give(std::move(again));
  std::string grown = pool.Take(500'000);
  CHECK(grown.capacity() >= 500'000);

  // Too large for one buffer: freed, not kept.
  std::string huge = pool.Take(2 << 20);
  pool.Give(std::move(huge));
  CHECK(pool.Take(0).capacity() < (2 << 20));

  // At most two kept.
  std::string a = pool.Take(1000), b = pool.Take(1000), c = pool.Take(1000);
  const char* kept_a = a.data();
  const char* kept_b = b.data();
  pool.Give(std::move(a));
  pool.Give(std::move(b));
  pool.Give(std::move(c));
  const std::string b2 = pool.Take(0), a2 = pool.Take(0), fresh = pool.Take(0);
  CHECK(b2.data() == kept_b);
  CHECK(a2.data() == kept_a);
  CHECK(fresh.capacity() < 1000);

  // At most 1.5 MiB in all: a second 1 MiB buffer does not fit beside the first.
  StringPool by_bytes(/*max_each=*/2 << 20, /*max_bytes=*/3 << 19);
  std::string x = by_bytes.Take(1 << 20), y = by_bytes.Take(1 << 20);
  by_bytes.Give(std::move(x));
  by_bytes.Give(std::move(y));
  CHECK(by_bytes.Take(0).capacity() >= (1 << 20));
  CHECK(by_bytes.Take(0).capacity() < (1 << 20));

  // Clear frees what is kept.
  std::string kept = pool.Take(1000);
  pool.Give(std::move(kept));
  pool.Clear();
  CHECK(pool.Take(0).capacity() < 1000);
}

}  // namespace rfs::core
