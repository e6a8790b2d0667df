//===- FuzzCheck.h - A harness's invariant check: a libFuzzer finding ------===//
//
// What the three harnesses of test/fuzz share: an invariant an accepted input
// must keep, checked by aborting with `<prefix>: <what>` on stderr, which
// libFuzzer reports as a crash and saves as a reproducer (docs/fuzzing.md).
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_FUZZ_FUZZCHECK_H
#define DSC_TEST_FUZZ_FUZZCHECK_H

#include <cstdio>
#include <cstdlib>

namespace dsc::fuzz {

/// Aborts with "prefix: what" unless `ok`.
inline void check(bool ok, const char *prefix, const char *what) {
  if (!ok) {
    std::fprintf(stderr, "%s: %s\n", prefix, what);
    std::abort();
  }
}

} // namespace dsc::fuzz

#endif // DSC_TEST_FUZZ_FUZZCHECK_H
