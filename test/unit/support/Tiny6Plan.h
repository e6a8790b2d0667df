//===- Tiny6Plan.h - The tiny6 CPU plan the runtime tests read ------------===//
//
// test/CMakeLists.txt compiles the tiny6 golden config into a CPU plan at
// build time (dsc-compile --gpu-arch=none --ced=full, target
// dsc_tiny6_cpu_plan), so the fixture always matches the current schema and
// lowering; nothing binary is checked in. Test binaries that read it get its
// path as DSC_TINY6_CPU_PLAN. Without it (DSC_BUILD_COMPILER=OFF, or no
// golden config at configure time) tests that need it skip themselves with
// DSC_SKIP_WITHOUT_TINY6_PLAN().
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_SUPPORT_TINY6PLAN_H
#define DSC_TEST_SUPPORT_TINY6PLAN_H

#include <string>

namespace dsc::test {

/// The build-time tiny6 CPU plan, or "" when this build has none.
inline std::string tiny6CpuPlan() {
#ifdef DSC_TINY6_CPU_PLAN
  return DSC_TINY6_CPU_PLAN;
#else
  return "";
#endif
}

} // namespace dsc::test

/// First statement of a test that reads the tiny6 CPU plan.
#define DSC_SKIP_WITHOUT_TINY6_PLAN()                                                           \
  if (::dsc::test::tiny6CpuPlan().empty())                                                      \
  GTEST_SKIP() << "no tiny6 CPU plan in this build (it needs DSC_BUILD_COMPILER=ON and the "    \
                  "golden tiny6 config at configure time)"

#endif // DSC_TEST_SUPPORT_TINY6PLAN_H
