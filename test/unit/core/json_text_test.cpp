#include "rfs/core/json_text.hpp"

#include <cmath>
#include <limits>

#include <boost/json.hpp>
#include <catch2/catch.hpp>

namespace rfs::core {
namespace {

namespace json = boost::json;

TEST_CASE("JsonText prints numbers as people and JSON clients expect", "[core][json]") {
  // Boost.JSON's own serializer prints these as 4E1, 9.9598935E-2 and 3E2.
  CHECK(JsonText(json::value(40.0)) == "40.0");
  CHECK(JsonText(json::value(0.099598935)) == "0.099598935");
  CHECK(JsonText(json::value(int64_t{300})) == "300");
  CHECK(JsonText(json::value(uint64_t{18446744073709551615ULL})) == "18446744073709551615");
  CHECK(JsonText(json::value(-2.5)) == "-2.5");
  CHECK(JsonText(json::value(1e-7)) == "1e-07");
  CHECK(JsonText(json::value(1e300)) == "1e+300");
  CHECK(JsonText(json::value(std::numeric_limits<double>::infinity())) == "null");
  CHECK(JsonText(json::value(std::nan(""))) == "null");
  // Every double reads back as the same double.
  for (double d : {0.1, 1.0 / 3, 123456789.123, 5e-324, 1.7976931348623157e308}) {
    CHECK(json::parse(JsonText(json::value(d))).as_double() == d);
  }
}

TEST_CASE("JsonText keeps key order and escapes strings", "[core][json]") {
  json::object o;
  o["z"] = "a\"b\\c\n\x01";
  o["a"] = json::array{1, 2.5, true, nullptr, json::object{{"k", "v"}}};
  const std::string text = JsonText(o);
  CHECK(text == R"({"z":"a\"b\\c\n\u0001","a":[1,2.5,true,null,{"k":"v"}]})");
  CHECK(json::parse(text) == json::value(o));
  CHECK(JsonText(json::array{}) == "[]");
  CHECK(JsonText(json::object{}) == "{}");
}

}  // namespace
}  // namespace rfs::core
