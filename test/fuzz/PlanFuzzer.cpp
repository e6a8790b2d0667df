//===- PlanFuzzer.cpp - libFuzzer harness: plan reader + verifier ---------===//
//
// Input: the raw bytes of a plan file (.dscp, a FlatBuffers buffer), as
// readPlanFile hands them on after reading the file.
// API: dsc::runtime::parsePlan (runtime/lib/PlanFile.cpp): identifier and
// version check, the FlatBuffers verifier, the conversion to a Plan and
// verifyPlan's semantic checks. On an accepted plan, what a runtime does next
// with it: checkSessionMemory (the engines' first call, MemoryPlan.cpp) and
// planMemory of every program for a 1-token call; and the writer: the plan
// serialises and reads back to the same bytes.
// Finding: a crash, a sanitizer report (ASan, UBSan, leak), a hang or a huge
// allocation on any input, accepted or not; an error without a message; an
// accepted plan that does not survive serialise + parse.
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/PlanFile.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <span>
#include <vector>

namespace {

void check(bool ok, const char *what) { dsc::fuzz::check(ok, "dsc-fuzz-plan", what); }

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  using namespace dsc::runtime;
  Expected<Plan> plan = parsePlan(std::span<const uint8_t>(data, size), "fuzz.dscp");
  if (!plan) {
    check(!plan.status().message().empty(), "an error without a message");
    return 0;
  }

  (void)checkSessionMemory(*plan, uint64_t(1) << 30);
  for (const Program &program : plan->programs)
    (void)planMemory(*plan, program, /*tokens=*/1, /*startPos=*/0);

  const std::vector<uint8_t> bytes = serializePlan(*plan);
  Expected<Plan> again = parsePlan(bytes, "fuzz.dscp (re-serialised)");
  if (!again)
    std::fprintf(stderr, "%s\n", again.status().message().c_str());
  check(bool(again), "an accepted plan does not parse after serialisation");
  check(serializePlan(*again) == bytes, "serialise(parse(serialise(plan))) != serialise(plan)");
  return 0;
}
