#include "rfs/net/gzip.hpp"

#include <algorithm>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/str_cat.hpp"

namespace rfs::net {

TEST_CASE("a gzip stream of pieces inflates to the pieces joined, in one member", "[net][gzip]") {
  std::string joined;
  GzipStream stream(1024);
  // Pieces of every size: empty, one byte, and one larger than the stream's output steps.
  const std::string pieces[] = {"",   "{", std::string(3'000'000, 'a'),
                                "\n", "",  std::string(70'000, 'q') + "tail"};
  for (const std::string& piece : pieces) {
    REQUIRE(stream.Append(piece).ok());
    joined += piece;
  }
  auto member = stream.Finish();
  REQUIRE(member.ok());
  CHECK(member->size() < joined.size() / 50);
  // A second member after it would also inflate: check there is exactly one, by its trailer.
  auto inflated = GzipDecompress(*member);
  REQUIRE(inflated.ok());
  CHECK(*inflated == joined);
  const auto* tail = reinterpret_cast<const unsigned char*>(member->data() + member->size() - 4);
  const uint32_t isize = tail[0] | tail[1] << 8 | tail[2] << 16 | uint32_t{tail[3]} << 24;
  CHECK(isize == joined.size());
  CHECK(static_cast<unsigned char>((*member)[0]) == 0x1f);
  CHECK(static_cast<unsigned char>((*member)[1]) == 0x8b);
}

TEST_CASE("an empty gzip stream is a valid empty member", "[net][gzip]") {
  GzipStream stream;
  auto member = stream.Finish();
  REQUIRE(member.ok());
  auto inflated = GzipDecompress(*member);
  REQUIRE(inflated.ok());
  CHECK(inflated->empty());
}

TEST_CASE("GzipCompress output inflates back, large inputs included", "[net][gzip]") {
  const std::string input = std::string(5'000'000, 'z') + "end";
  auto compressed = GzipCompress(input);
  REQUIRE(compressed.ok());
  CHECK(compressed->size() < input.size() / 100);
  auto inflated = GzipDecompress(*compressed);
  REQUIRE(inflated.ok());
  CHECK(*inflated == input);
}

TEST_CASE("GzipCompressInto replaces the bytes of the buffer it is given and keeps it",
          "[net][gzip]") {
  std::string first;
  for (int i = 0; first.size() < 3'000'000; ++i) first += "{\"n\":" + std::to_string(i) + "}\n";
  const std::string second = "{\"small\":true}\n";
  std::string out = "stale bytes";
  REQUIRE(GzipCompressInto(first, out).ok());
  auto inflated = GzipDecompress(out);
  REQUIRE(inflated.ok());
  CHECK(*inflated == first);
  // A smaller input into the same buffer: one member of its own bytes, in the same allocation.
  const char* buffer = out.data();
  const size_t capacity = out.capacity();
  REQUIRE(GzipCompressInto(second, out).ok());
  CHECK(out.data() == buffer);
  CHECK(out.capacity() == capacity);
  inflated = GzipDecompress(out);
  REQUIRE(inflated.ok());
  CHECK(*inflated == second);
  REQUIRE(GzipCompressInto("", out).ok());
  inflated = GzipDecompress(out);
  REQUIRE(inflated.ok());
  CHECK(inflated->empty());
}

TEST_CASE("GzipCompressInto takes pieces where they lie, as one member of their bytes joined",
          "[net][gzip]") {
  std::string lines;
  for (int i = 0; lines.size() < 2'000'000; ++i) lines += "{\"n\":" + std::to_string(i) + "}\n";
  const std::string_view all(lines);
  // Empty pieces first, between and last, and a piece of one byte.
  const std::vector<std::string_view> pieces = {all.substr(0, 0),       all.substr(0, 700'000),
                                                all.substr(700'000, 1), all.substr(700'001, 0),
                                                all.substr(700'001),    std::string_view()};
  std::string out = "stale bytes";
  REQUIRE(GzipCompressInto(pieces, out).ok());
  CHECK(out.size() < lines.size() / 4);
  auto inflated = GzipDecompress(out);
  REQUIRE(inflated.ok());
  CHECK(*inflated == lines);
  const auto* tail = reinterpret_cast<const unsigned char*>(out.data() + out.size() - 4);
  const uint32_t isize = tail[0] | tail[1] << 8 | tail[2] << 16 | uint32_t{tail[3]} << 24;
  CHECK(isize == lines.size());  // one member
  REQUIRE(GzipCompressInto(std::span<const std::string_view>(), out).ok());
  inflated = GzipDecompress(out);
  REQUIRE(inflated.ok());
  CHECK(inflated->empty());
}

TEST_CASE("gzip pieces: a member inflated a piece at a time is the member's bytes", "[net][gzip]") {
  std::string data;
  for (int i = 0; i < 200'000; ++i) data += core::StrCat("line ", i, " ", i * 7919 % 1000, "\n");
  auto gzipped = GzipCompress(data);
  REQUIRE(gzipped.ok());
  std::string inflated;
  size_t largest = 0;
  REQUIRE(GzipInflatePieces(*gzipped, 4096, [&](std::string_view piece) {
            largest = std::max(largest, piece.size());
            inflated.append(piece);
            return absl::OkStatus();
          }).ok());
  CHECK(inflated == data);
  CHECK(largest <= 4096);
  // Stopped by the caller: its error, and nothing more is inflated.
  size_t calls = 0;
  const absl::Status stopped = GzipInflatePieces(*gzipped, 4096, [&](std::string_view) {
    ++calls;
    return absl::CancelledError("enough");
  });
  CHECK(absl::IsCancelled(stopped));
  CHECK(calls == 1);
  // Damaged or cut short: DataLoss naming the offset.
  std::string damaged = *gzipped;
  damaged[damaged.size() / 2] ^= 0x55;
  damaged[damaged.size() / 2 + 1] ^= 0x55;
  const absl::Status bad =
      GzipInflatePieces(damaged, 4096, [](std::string_view) { return absl::OkStatus(); });
  CHECK(absl::IsDataLoss(bad));
  const absl::Status cut =
      GzipInflatePieces(std::string_view(*gzipped).substr(0, gzipped->size() / 2), 4096,
                        [](std::string_view) { return absl::OkStatus(); });
  CHECK(absl::IsDataLoss(cut));
  CHECK(std::string(cut.message()).find("offset") != std::string::npos);
}

}  // namespace rfs::net
