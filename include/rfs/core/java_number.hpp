// Numbers as Java prints them (Double.toString, Float.toString), for text that must match what the
// engines and Java libraries write.
#pragma once

#include <string>

namespace rfs::core {

/// Java's Double.toString / Float.toString from the shortest round-trip digits (as JDK 19 and
/// later print them): "1.0", "0.001", "1.0E7", "-0.0", "NaN", "Infinity".
std::string JavaDoubleString(double value);
std::string JavaFloatString(float value);

}  // namespace rfs::core
