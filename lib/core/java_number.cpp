#include "rfs/core/java_number.hpp"

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <string>

namespace rfs::core {
namespace {

// Java's Double.toString / Float.toString from the shortest round-trip digits.
template <typename T>
std::string JavaNumber(T value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "Infinity" : "-Infinity";
  if (value == 0) return std::signbit(value) ? "-0.0" : "0.0";
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::scientific);
  std::string sci(buf, end);  // d[.ddd]e±xx
  const size_t e = sci.find('e');
  const int exponent = std::atoi(sci.c_str() + e + 1);
  std::string digits;
  bool negative = false;
  for (size_t i = 0; i < e; ++i) {
    if (sci[i] == '-') negative = true;
    if (sci[i] >= '0' && sci[i] <= '9') digits.push_back(sci[i]);
  }
  while (digits.size() > 1 && digits.back() == '0') digits.pop_back();
  std::string out = negative ? "-" : "";
  const T magnitude = std::fabs(value);
  if (magnitude >= T(1e-3) && magnitude < T(1e7)) {
    if (exponent >= 0) {
      const size_t int_digits = static_cast<size_t>(exponent) + 1;
      std::string whole = digits.substr(0, std::min(int_digits, digits.size()));
      whole.append(int_digits > digits.size() ? int_digits - digits.size() : 0, '0');
      std::string fraction = int_digits < digits.size() ? digits.substr(int_digits) : "0";
      out += whole + "." + fraction;
    } else {
      out += "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    }
    return out;
  }
  out += digits.substr(0, 1) + "." + (digits.size() > 1 ? digits.substr(1) : "0") + "E" +
         std::to_string(exponent);
  return out;
}

}  // namespace

std::string JavaDoubleString(double value) { return JavaNumber(value); }
std::string JavaFloatString(float value) { return JavaNumber(value); }

}  // namespace rfs::core
