//===- BenchJson.h - dsc-bench's number formatting and clock ---*- C++ -*-===//
//
// One definition of how dsc-bench writes a number into its --json output
// (%.6g; a non-finite value is JSON null) and of its clock, shared by the
// decode benchmark (dsc-bench.cpp) and --sessions (Sessions.cpp).
//
//===----------------------------------------------------------------------===//
#pragma once

#include <chrono>
#include <cmath>
#include <cstdio>
#include <string>

namespace dsc::tools::bench {

using Clock = std::chrono::steady_clock;

/// Seconds from a to b.
inline double seconds(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

/// Milliseconds from a to now.
inline double msSince(Clock::time_point a) { return 1e3 * seconds(a, Clock::now()); }

/// A JSON number with six significant digits; NaN and infinities are null.
inline std::string num(double v) {
  if (!std::isfinite(v))
    return "null";
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.6g", v);
  return buf;
}

} // namespace dsc::tools::bench
