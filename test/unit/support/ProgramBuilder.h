//===- ProgramBuilder.h - Hand-built plan programs for unit tests ----------===//
//
// The pieces of a runtime::Program that tests spell out by hand (the memory
// plan, launch graph and stream schedule tests): a launch from its input and
// output value slots.
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_SUPPORT_PROGRAMBUILDER_H
#define DSC_TEST_SUPPORT_PROGRAMBUILDER_H

#include "dsc/runtime/Plan.h"

#include <cstdint>
#include <utility>
#include <vector>

namespace dsc::test {

/// A launch of kernel 0 reading `in` and writing `out` (value slot indices).
inline runtime::Launch launchOf(std::vector<int64_t> in, std::vector<int64_t> out) {
  runtime::Launch l;
  l.inputs = std::move(in);
  l.outputs = std::move(out);
  return l;
}

} // namespace dsc::test

#endif // DSC_TEST_SUPPORT_PROGRAMBUILDER_H
