// _source -> JSON (see source_json.hpp). CBOR layout per RFC 8949 section 3:
// an initial byte of major type (high 3 bits) and additional information (low
// 5 bits: the value itself below 24, then 1/2/4/8 following big-endian bytes
// for 24..27, 31 = indefinite length or "break").
#include "rfs/content/source_json.hpp"

#include <charconv>
#include <cmath>
#include <cstring>

#include <boost/json/serialize.hpp>

#include "rfs/content/smile.hpp"
#include "rfs/core/base64.hpp"
#include "rfs/core/byte_reader.hpp"
#include "rfs/core/errors.hpp"
#include "rfs/core/json_string.hpp"
#include "rfs/core/status_macros.hpp"
#include "rfs/core/str_cat.hpp"

#include "content/yaml_source_internal.hpp"

namespace rfs::content {

using core::ByteReader;
using core::StrCat;

namespace {

// RFC 8949 section 3.1 major types.
constexpr uint8_t kUnsigned = 0;
constexpr uint8_t kNegative = 1;
constexpr uint8_t kBytes = 2;
constexpr uint8_t kText = 3;
constexpr uint8_t kArray = 4;
constexpr uint8_t kMap = 5;
constexpr uint8_t kTag = 6;
constexpr uint8_t kSimple = 7;
// Additional information values (section 3): 24..27 = 1/2/4/8-byte argument,
// 31 = indefinite length (types 2-5) or break (type 7).
constexpr uint8_t kAiOneByte = 24;
constexpr uint8_t kAiEightBytes = 27;
constexpr uint8_t kAiIndefinite = 31;
constexpr uint8_t kBreak = 0xFF;
// Simple values (section 3.3): false, true, null, undefined; 25/26/27 are
// half, single and double floats.
constexpr uint8_t kFalse = 20, kTrue = 21, kNull = 22, kUndefined = 23;
constexpr uint8_t kHalf = 25, kSingle = 26, kDouble = 27;
// Self-described CBOR (section 3.4.6), which Jackson may prefix.
constexpr uint64_t kSelfDescribeTag = 55799;

}  // namespace

namespace internal {

void AppendJsonDouble(double d, bool single, std::string& out) {
  if (std::isnan(d)) {
    out += "\"NaN\"";
    return;
  }
  if (std::isinf(d)) {
    out += d > 0 ? "\"Infinity\"" : "\"-Infinity\"";
    return;
  }
  char buf[400];
  // Shortest text that round-trips at the value's own precision, so a
  // single-precision 0.1 prints as 0.1 rather than 0.10000000149011612;
  // plain notation in [1e-3, 1e7) and scientific outside, as Java's
  // Double.toString chooses.
  const double mag = std::fabs(d);
  const auto fmt = mag == 0 || (mag >= 1e-3 && mag < 1e7) ? std::chars_format::fixed
                                                          : std::chars_format::scientific;
  auto res = single ? std::to_chars(buf, buf + sizeof(buf), static_cast<float>(d), fmt)
                    : std::to_chars(buf, buf + sizeof(buf), d, fmt);
  std::string_view text(buf, res.ptr - buf);
  out += text;
  // Keep floats recognisably floating point ("42.0", not "42").
  if (text.find_first_of(".eE") == std::string_view::npos) out += ".0";
}

}  // namespace internal

namespace {

using internal::AppendJsonDouble;

// Appends `text` as a JSON string, checking it is well-formed UTF-8.
absl::Status AppendJsonText(std::string_view text, const ByteReader& in, size_t at,
                            std::string& out) {
  if (!core::AppendJsonStringIfUtf8(text, out)) {
    return in.ErrorAt(at, "invalid UTF-8 in a text string");
  }
  return absl::OkStatus();
}

// RFC 8949 Appendix D: half-precision to double.
double HalfToDouble(uint16_t half) {
  const int exponent = (half >> 10) & 0x1F;
  const int mantissa = half & 0x3FF;
  double value;
  if (exponent == 0) {
    value = std::ldexp(mantissa, -24);
  } else if (exponent != 31) {
    value = std::ldexp(mantissa + 1024, exponent - 25);
  } else {
    value = mantissa == 0 ? INFINITY : NAN;
  }
  return (half & 0x8000) ? -value : value;
}

class CborToJson {
 public:
  CborToJson(ByteReader& in, std::string& out) : in_(in), out_(out) {}

  absl::Status Item(int depth) {
    const size_t at = in_.position();
    RFS_ASSIGN_OR_RETURN(uint8_t initial, in_.ReadByte());
    const uint8_t major = initial >> 5;
    const uint8_t ai = initial & 0x1F;
    if (major == kSimple) return Simple(at, ai);
    if (ai == kAiIndefinite) {
      switch (major) {
        case kBytes:
        case kText:
          return IndefiniteString(at, major);
        case kArray:
          return Array(at, depth, /*count=*/0, /*indefinite=*/true);
        case kMap:
          return Map(at, depth, 0, true);
        default:
          return in_.ErrorAt(at, StrCat("indefinite length for major type ", int{major}));
      }
    }
    RFS_ASSIGN_OR_RETURN(uint64_t arg, Argument(at, ai));
    switch (major) {
      case kUnsigned:
        out_ += StrCat(arg);
        return absl::OkStatus();
      case kNegative:
        // -1 - arg; arg may be 2^64 - 1, so print the magnitude unsigned.
        if (arg == UINT64_MAX) {
          out_ += "-18446744073709551616";
        } else {
          out_ += StrCat("-", arg + 1);
        }
        return absl::OkStatus();
      case kBytes: {
        RFS_ASSIGN_OR_RETURN(auto bytes, Payload(at, arg));
        out_.push_back('"');
        out_ += core::Base64Encode(bytes);
        out_.push_back('"');
        return absl::OkStatus();
      }
      case kText: {
        RFS_ASSIGN_OR_RETURN(auto bytes, Payload(at, arg));
        return AppendJsonText(AsText(bytes), in_, at, out_);
      }
      case kArray:
        return Array(at, depth, arg, false);
      case kMap:
        return Map(at, depth, arg, false);
      case kTag:
        if (arg != kSelfDescribeTag) {
          return in_.ErrorAt(at, StrCat("unsupported CBOR tag ", arg));
        }
        return Item(depth);
    }
    return in_.ErrorAt(at, "unreachable major type");
  }

 private:
  static std::string_view AsText(std::span<const uint8_t> bytes) {
    return {reinterpret_cast<const char*>(bytes.data()), bytes.size()};
  }

  absl::StatusOr<uint64_t> Argument(size_t at, uint8_t ai) {
    if (ai < kAiOneByte) return ai;
    if (ai > kAiEightBytes) {
      return in_.ErrorAt(at, StrCat("reserved additional information ", int{ai}));
    }
    switch (ai - kAiOneByte) {
      case 0:
        return in_.ReadByte();
      case 1:
        return in_.ReadBeU16();
      case 2:
        return in_.ReadBeU32();
      default:
        return in_.ReadBeU64();
    }
  }

  absl::StatusOr<std::span<const uint8_t>> Payload(size_t at, uint64_t length) {
    if (length > in_.remaining()) {
      return in_.ErrorAt(at, StrCat("string of ", length, " bytes runs past the end (",
                                    in_.remaining(), " left)"));
    }
    return in_.ReadBytes(static_cast<size_t>(length));
  }

  // True (and consumes it) when the next byte is a break.
  absl::StatusOr<bool> AtBreak() {
    if (in_.at_end()) return in_.Error("missing break of an indefinite-length item");
    if (in_.data()[in_.position()] != kBreak) return false;
    RFS_RETURN_IF_ERROR(in_.Skip(1));
    return true;
  }

  absl::Status Array(size_t at, int depth, uint64_t count, bool indefinite) {
    // Each element takes at least one byte.
    return Container(at, depth, count, indefinite, 1, '[', ']', [&] { return Item(depth + 1); });
  }

  absl::Status Map(size_t at, int depth, uint64_t count, bool indefinite) {
    // Each entry takes at least two bytes.
    return Container(at, depth, count, indefinite, 2, '{', '}', [&]() -> absl::Status {
      RFS_RETURN_IF_ERROR(Key());
      out_.push_back(':');
      return Item(depth + 1);
    });
  }

  // `count` elements (or, when indefinite, elements up to a break) between
  // `open` and `close`, each written by `element`.
  template <typename Element>
  absl::Status Container(size_t at, int depth, uint64_t count, bool indefinite,
                         uint64_t min_bytes_each, char open, char close, Element&& element) {
    if (depth >= kMaxCborDepth) {
      return in_.ErrorAt(at, StrCat("nesting deeper than ", kMaxCborDepth));
    }
    if (!indefinite && count > in_.remaining() / min_bytes_each) {
      return in_.ErrorAt(at, StrCat(count, " items run past the end"));
    }
    out_.push_back(open);
    for (uint64_t i = 0;; ++i) {
      if (indefinite) {
        RFS_ASSIGN_OR_RETURN(bool done, AtBreak());
        if (done) break;
      } else if (i == count) {
        break;
      }
      if (i > 0) out_.push_back(',');
      RFS_RETURN_IF_ERROR(element());
    }
    out_.push_back(close);
    return absl::OkStatus();
  }

  // JSON keys are strings: text keys as they are, integer keys as decimal
  // text (Jackson's CBORParser accepts both).
  absl::Status Key() {
    const size_t at = in_.position();
    if (in_.at_end()) return in_.Error("missing map key");
    const uint8_t initial = in_.data()[at];
    const uint8_t major = initial >> 5;
    if (major == kText) return Item(0);
    if (major == kUnsigned || major == kNegative) {
      out_.push_back('"');
      RFS_RETURN_IF_ERROR(Item(0));
      out_.push_back('"');
      return absl::OkStatus();
    }
    return in_.ErrorAt(at, StrCat("map key of major type ", int{major}, " (expected text)"));
  }

  absl::Status IndefiniteString(size_t at, uint8_t major) {
    // Chunks are definite-length strings of the same major type (section
    // 3.2.3), concatenated.
    std::string joined;
    for (;;) {
      RFS_ASSIGN_OR_RETURN(bool done, AtBreak());
      if (done) break;
      const size_t chunk_at = in_.position();
      RFS_ASSIGN_OR_RETURN(uint8_t initial, in_.ReadByte());
      if ((initial >> 5) != major || (initial & 0x1F) == kAiIndefinite) {
        return in_.ErrorAt(chunk_at, "invalid chunk of an indefinite-length string");
      }
      RFS_ASSIGN_OR_RETURN(uint64_t length, Argument(chunk_at, initial & 0x1F));
      RFS_ASSIGN_OR_RETURN(auto bytes, Payload(chunk_at, length));
      joined.append(AsText(bytes));
    }
    if (major == kText) return AppendJsonText(joined, in_, at, out_);
    out_.push_back('"');
    out_ += core::Base64Encode(
        std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(joined.data()), joined.size()));
    out_.push_back('"');
    return absl::OkStatus();
  }

  absl::Status Simple(size_t at, uint8_t ai) {
    switch (ai) {
      case kFalse:
        out_ += "false";
        return absl::OkStatus();
      case kTrue:
        out_ += "true";
        return absl::OkStatus();
      case kNull:
      case kUndefined:
        out_ += "null";
        return absl::OkStatus();
      case kHalf: {
        RFS_ASSIGN_OR_RETURN(uint16_t bits, in_.ReadBeU16());
        AppendJsonDouble(HalfToDouble(bits), /*single=*/true, out_);
        return absl::OkStatus();
      }
      case kSingle: {
        RFS_ASSIGN_OR_RETURN(uint32_t bits, in_.ReadBeU32());
        float f;
        std::memcpy(&f, &bits, 4);
        AppendJsonDouble(f, true, out_);
        return absl::OkStatus();
      }
      case kDouble: {
        RFS_ASSIGN_OR_RETURN(uint64_t bits, in_.ReadBeU64());
        double d;
        std::memcpy(&d, &bits, 8);
        AppendJsonDouble(d, false, out_);
        return absl::OkStatus();
      }
      case kAiIndefinite:
        return in_.ErrorAt(at, "unexpected break");
      default:
        return in_.ErrorAt(at, StrCat("unsupported simple value ", int{ai}));
    }
  }

  ByteReader& in_;
  std::string& out_;
};

}  // namespace

absl::Status AppendCborAsJson(std::span<const uint8_t> cbor, std::string_view source,
                              std::string& out) {
  const size_t original = out.size();
  ByteReader in(cbor, source);
  CborToJson converter(in, out);
  absl::Status status = converter.Item(0);
  if (status.ok() && !in.at_end()) {
    status = in.Error(StrCat(in.remaining(), " trailing bytes after the CBOR value"));
  }
  if (!status.ok()) out.resize(original);
  return status;
}

absl::Status AppendSourceAsJson(std::span<const uint8_t> source, SourceFormat format,
                                std::string& out, std::string_view what) {
  switch (format) {
    case SourceFormat::kJson:
      out.append(reinterpret_cast<const char*>(source.data()), source.size());
      return absl::OkStatus();
    case SourceFormat::kSmile: {
      auto json = DecodeSmile(source, what);
      if (!json.ok()) return json.status();
      out += boost::json::serialize(*json);
      return absl::OkStatus();
    }
    case SourceFormat::kCbor:
      return AppendCborAsJson(source, what, out);
    case SourceFormat::kYaml:
      return AppendYamlAsJson(source, what, out);
    case SourceFormat::kNone:
      break;
  }
  return absl::InvalidArgumentError(StrCat(what, ": no _source to convert"));
}

}  // namespace rfs::content
