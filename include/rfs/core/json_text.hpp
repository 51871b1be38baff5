// JSON text as rfs writes it: its events, summaries, reports, records, request bodies and the
// console's answers. Numbers print as people and JSON clients expect: a double as its shortest
// round-trip digits and always with a '.', 'e' or 'E' (`40.0`, `0.0996`, `1e-07`), integers as
// integers (`300`); Boost.JSON's own serializer prints doubles as `4E1` and `9.96E-2`. Non-finite
// doubles, which JSON cannot hold, print as null. Keys keep their order.
#pragma once

#include <string>

#include <boost/json/array.hpp>
#include <boost/json/object.hpp>
#include <boost/json/value.hpp>

namespace rfs::core {

void AppendJsonText(const boost::json::value& value, std::string& out);
void AppendJsonText(const boost::json::object& object, std::string& out);
void AppendJsonText(const boost::json::array& array, std::string& out);

std::string JsonText(const boost::json::value& value);
std::string JsonText(const boost::json::object& object);
std::string JsonText(const boost::json::array& array);

}  // namespace rfs::core
