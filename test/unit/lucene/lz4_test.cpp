// Lz4Decompress against blocks built sequence by sequence here, whose output the builder knows:
// every literal and match length class (the short-sequence fast path and the checked path),
// offsets that overlap the bytes being written (1-7, 8-15) and those that do not, matches
// reaching into a preset dictionary, blocks ending after literals or after a match, and the
// errors for offsets outside the history. The bytes past the slack are never written.
#include <algorithm>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "rfs/core/byte_reader.hpp"

#include "lucene/codecs/compression_internal.hpp"

namespace {

using rfs::lucene::internal::kLz4Slack;
using rfs::lucene::internal::Lz4Decompress;
using rfs::lucene::internal::Lz4DecompressPair;

// Writes LZ4 sequences and, beside them, what they decode to (`history` + output).
class BlockBuilder {
 public:
  explicit BlockBuilder(std::vector<uint8_t> history) : decoded_(std::move(history)) {
    history_len_ = decoded_.size();
  }

  // One sequence: `literals`, then (when match_len > 0) a match of match_len >= 4 bytes at
  // `offset` back from the end of the output so far.
  void Sequence(const std::vector<uint8_t>& literals, size_t offset, size_t match_len) {
    const size_t lit = literals.size();
    const size_t ml = match_len == 0 ? 0 : match_len - 4;
    block_.push_back(static_cast<uint8_t>((std::min<size_t>(lit, 15) << 4) |
                                          (match_len == 0 ? 0 : std::min<size_t>(ml, 15))));
    if (lit >= 15) Extension(lit - 15);
    block_.insert(block_.end(), literals.begin(), literals.end());
    decoded_.insert(decoded_.end(), literals.begin(), literals.end());
    if (match_len == 0) return;
    block_.push_back(static_cast<uint8_t>(offset & 0xFF));
    block_.push_back(static_cast<uint8_t>(offset >> 8));
    if (ml >= 15) Extension(ml - 15);
    // Byte by byte, so overlapping matches repeat their pattern as LZ4 defines.
    const size_t from = decoded_.size() - offset;
    for (size_t i = 0; i < match_len; ++i) decoded_.push_back(decoded_[from + i]);
  }

  const std::vector<uint8_t>& block() const { return block_; }
  size_t history_len() const { return history_len_; }
  // History and output.
  const std::vector<uint8_t>& decoded() const { return decoded_; }
  size_t output_len() const { return decoded_.size() - history_len_; }

 private:
  void Extension(size_t rest) {
    for (; rest >= 255; rest -= 255) block_.push_back(255);
    block_.push_back(static_cast<uint8_t>(rest));
  }

  std::vector<uint8_t> block_;
  std::vector<uint8_t> decoded_;
  size_t history_len_ = 0;
};

std::vector<uint8_t> RandomBytes(std::mt19937_64& rng, size_t n) {
  // JSON-like text: a small alphabet, so matches are plausible.
  static const std::string kAlphabet = "{}\":,abcdefghij 0123456789";
  std::vector<uint8_t> out(n);
  for (auto& b : out) b = static_cast<uint8_t>(kAlphabet[rng() % kAlphabet.size()]);
  return out;
}

// A length from each class the decoder treats differently, mostly short ones.
size_t PickLength(std::mt19937_64& rng, size_t short_max) {
  switch (rng() % 8) {
    case 0:
      return 15 + rng() % 300;  // extension bytes
    case 1:
      return short_max;  // the edge of the token's own field
    default:
      return rng() % (short_max + 1);
  }
}

size_t PickOffset(std::mt19937_64& rng, size_t available) {
  size_t offset = 0;
  switch (rng() % 4) {
    case 0:
      offset = 1 + rng() % 7;  // overlaps the bytes it writes
      break;
    case 1:
      offset = 8 + rng() % 8;
      break;
    case 2:
      offset = 16 + rng() % 48;
      break;
    default:
      offset = 1 + rng() % 65535;
  }
  return std::min(offset, available);
}

struct Decoded {
  absl::Status status;
  std::vector<uint8_t> buffer;
  size_t consumed = 0;
};

constexpr uint8_t kSentinel = 0xA5;
constexpr size_t kGuard = 64;  // bytes past the slack that must stay untouched

Decoded Decode(const BlockBuilder& b) {
  Decoded d;
  const size_t out_pos = b.history_len();
  d.buffer.assign(out_pos + b.output_len() + kLz4Slack + kGuard, kSentinel);
  std::copy(b.decoded().begin(), b.decoded().begin() + static_cast<std::ptrdiff_t>(out_pos),
            d.buffer.begin());
  rfs::core::ByteReader in(b.block(), "test.fdt", 1000);
  d.status = Lz4Decompress(in, std::span<uint8_t>(d.buffer.data(), d.buffer.size() - kGuard), 0,
                           out_pos, b.output_len());
  d.consumed = in.position();
  return d;
}

// A random block of `sequences` sequences of every shape after `history` bytes.
BlockBuilder RandomBlock(std::mt19937_64& rng, size_t history, size_t sequences) {
  BlockBuilder b(RandomBytes(rng, history));
  for (size_t s = 0; s < sequences; ++s) {
    // A first match needs at least one byte before it.
    const size_t lit = std::max<size_t>(PickLength(rng, 14), b.decoded().empty() ? 1 : 0);
    const size_t available = b.decoded().size() + lit;
    b.Sequence(RandomBytes(rng, lit), PickOffset(rng, available), 4 + PickLength(rng, 14));
  }
  if (rng() % 3 != 0) b.Sequence(RandomBytes(rng, 1 + rng() % 20), 0, 0);
  return b;
}

}  // namespace

TEST_CASE("LZ4 blocks of every sequence shape decode to exactly what they encode",
          "[lucene][lz4]") {
  std::mt19937_64 rng(20261124);
  size_t fast_shaped = 0;
  for (int round = 0; round < 3000; ++round) {
    const size_t history = rng() % 3 == 0 ? 1 + rng() % 2000 : 0;
    BlockBuilder b(RandomBytes(rng, history));
    const size_t sequences = 1 + rng() % 40;
    for (size_t s = 0; s < sequences; ++s) {
      // A first match needs at least one byte before it.
      const size_t lit = std::max<size_t>(PickLength(rng, 14), b.decoded().empty() ? 1 : 0);
      const size_t available = b.decoded().size() + lit;
      const size_t match = 4 + PickLength(rng, 14);
      if (lit < 15 && match < 19) ++fast_shaped;
      b.Sequence(RandomBytes(rng, lit), PickOffset(rng, available), match);
    }
    // Lucene ends most blocks with literals, some right after a match.
    if (rng() % 3 != 0) b.Sequence(RandomBytes(rng, 1 + rng() % 20), 0, 0);
    const Decoded d = Decode(b);

    INFO("round " << round);
    INFO(d.status.ToString());
    REQUIRE(d.status.ok());
    CHECK(d.consumed == b.block().size());
    const size_t end = b.decoded().size();
    CHECK(std::equal(b.decoded().begin(), b.decoded().end(), d.buffer.begin()));
    CHECK(std::all_of(d.buffer.begin() + static_cast<std::ptrdiff_t>(end + kLz4Slack),
                      d.buffer.end(), [](uint8_t v) { return v == kSentinel; }));
  }
  CHECK(fast_shaped > 20000);
}

TEST_CASE("LZ4 offsets outside the history are DataLoss at the offset's bytes, on both paths",
          "[lucene][lz4]") {
  for (const size_t lead : {size_t{0}, size_t{200}}) {
    for (const bool past_history : {false, true}) {
      // `lead` bytes of plain sequences first, so the bad one sits far from the block's end
      // (the short-sequence path) or at it (the checked path).
      BlockBuilder b(std::vector<uint8_t>(past_history ? 10 : 0, 'h'));
      std::mt19937_64 rng(7);
      while (b.output_len() < lead) b.Sequence(RandomBytes(rng, 5), 3, 6);
      const size_t bad_at = b.block().size() + 1 + 4;  // token, 4 literals, then the offset
      // Offset 0, or one byte past everything written (history included).
      const size_t offset = past_history ? b.decoded().size() + 4 + 1 : 0;
      std::vector<uint8_t> block = b.block();
      block.push_back(0x42);  // 4 literals, a match of 6
      block.insert(block.end(), {'a', 'b', 'c', 'd'});
      block.push_back(static_cast<uint8_t>(offset & 0xFF));
      block.push_back(static_cast<uint8_t>(offset >> 8));
      block.insert(block.end(), 40, 0);  // more sequences' worth of bytes after it
      std::vector<uint8_t> buffer(b.decoded().size() + 400 + kLz4Slack, 0);
      rfs::core::ByteReader in(block, "test.fdt", 1000);
      const absl::Status status =
          Lz4Decompress(in, buffer, 0, b.history_len(), b.output_len() + 4 + 6 + 200);
      INFO("lead " << lead << ", offset " << offset);
      REQUIRE(absl::IsDataLoss(status));
      CHECK_THAT(std::string(status.message()), Catch::Contains("test.fdt"));
      CHECK_THAT(std::string(status.message()),
                 Catch::Contains("offset " + std::to_string(1000 + bad_at)));
      CHECK_THAT(std::string(status.message()),
                 Catch::Contains("match offset " + std::to_string(offset) + " out of range"));
    }
  }
}

TEST_CASE("Two LZ4 blocks decoded together are each what it is decoded alone, damaged or not",
          "[lucene][lz4]") {
  std::mt19937_64 rng(20261204);
  size_t together = 0;
  size_t refused = 0;
  for (int round = 0; round < 3000; ++round) {
    // One draw per statement: the order of a call's arguments is unspecified.
    const size_t history_a = rng() % 3 == 0 ? 1 + rng() % 2000 : 0;
    const size_t sequences_a = rng() % 60;
    const size_t history_b = rng() % 2 == 0 ? 1 + rng() % 2000 : 0;
    const size_t sequences_b = rng() % 60;
    BlockBuilder blocks[2] = {RandomBlock(rng, history_a, sequences_a),
                              RandomBlock(rng, history_b, sequences_b)};
    std::vector<uint8_t> compressed[2] = {blocks[0].block(), blocks[1].block()};
    // A third of the rounds damage one byte of one block (any byte: token, length, offset,
    // literal), or cut its end off, or add a byte it does not decode.
    if (round % 3 == 0) {
      std::vector<uint8_t>& victim = compressed[rng() % 2];
      switch (rng() % 3) {
        case 0:
          if (!victim.empty())
            victim[rng() % victim.size()] ^= static_cast<uint8_t>(1 + rng() % 255);
          break;
        case 1:
          if (!victim.empty()) victim.resize(rng() % victim.size());
          break;
        default:
          victim.push_back(0);
      }
    }
    // Alone: the reference, each in its own buffer.
    Decoded alone[2];
    bool alone_ok = true;
    for (int i = 0; i < 2; ++i) {
      const BlockBuilder& b = blocks[i];
      alone[i].buffer.assign(b.history_len() + b.output_len() + kLz4Slack + kGuard, kSentinel);
      std::copy(b.decoded().begin(),
                b.decoded().begin() + static_cast<std::ptrdiff_t>(b.history_len()),
                alone[i].buffer.begin());
      rfs::core::ByteReader in(compressed[i], "test.fdt", 1000);
      alone[i].status = Lz4Decompress(
          in, std::span<uint8_t>(alone[i].buffer.data(), alone[i].buffer.size() - kGuard), 0,
          b.history_len(), b.output_len());
      alone_ok = alone_ok && alone[i].status.ok() && in.at_end();
    }
    // Together.
    std::vector<uint8_t> buffers[2];
    for (int i = 0; i < 2; ++i) {
      const BlockBuilder& b = blocks[i];
      buffers[i].assign(b.history_len() + b.output_len() + kLz4Slack + kGuard, kSentinel);
      std::copy(b.decoded().begin(),
                b.decoded().begin() + static_cast<std::ptrdiff_t>(b.history_len()),
                buffers[i].begin());
    }
    rfs::core::ByteReader in_a(compressed[0], "a.fdt", 0);
    rfs::core::ByteReader in_b(compressed[1], "b.fdt", 0);
    const bool ok =
        Lz4DecompressPair(in_a, std::span<uint8_t>(buffers[0].data(), buffers[0].size() - kGuard),
                          blocks[0].history_len(), blocks[0].output_len(), in_b,
                          std::span<uint8_t>(buffers[1].data(), buffers[1].size() - kGuard),
                          blocks[1].history_len(), blocks[1].output_len());
    INFO("round " << round << ": " << alone[0].status << " / " << alone[1].status);
    REQUIRE(ok == alone_ok);
    for (int i = 0; i < 2; ++i) {
      // Nothing past the slack is written, whatever the bytes.
      CHECK(std::all_of(buffers[i].end() - static_cast<std::ptrdiff_t>(kGuard), buffers[i].end(),
                        [](uint8_t v) { return v == kSentinel; }));
    }
    if (ok) {
      ++together;
      CHECK(in_a.at_end());
      CHECK(in_b.at_end());
      for (int i = 0; i < 2; ++i) {
        // What it decodes to alone (a damaged literal decodes too, to other bytes).
        const auto end =
            static_cast<std::ptrdiff_t>(blocks[i].history_len() + blocks[i].output_len());
        CHECK(std::equal(buffers[i].begin(), buffers[i].begin() + end, alone[i].buffer.begin()));
        if (round % 3 != 0) {
          CHECK(std::equal(blocks[i].decoded().begin(), blocks[i].decoded().end(),
                           buffers[i].begin()));
        }
      }
    } else {
      ++refused;
      // Unmoved, for the caller to decode each alone and say what is wrong.
      CHECK(in_a.position() == 0);
      CHECK(in_b.position() == 0);
    }
  }
  CHECK(together > 1500);
  CHECK(refused > 300);
}
