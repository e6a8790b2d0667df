//===- PlanFile.h - Read, verify and write plan files ----------------------===//
//
// A plan file is a FlatBuffers buffer (schema runtime/schema/plan.fbs, file
// identifier "DSCP", extension .dscp) holding a Plan. Reading checks, in
// order: the file can be read; the buffer passes the FlatBuffers verifier
// with the right identifier ("not a dsc plan" otherwise); the schema version
// is kPlanSchemaVersion; then verifyPlan's semantic checks. Every error says
// what is wrong and where (program, launch, value, tensor index).
// Writing is all-or-nothing: a temporary file renamed into place.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_PLANFILE_H
#define DSC_RUNTIME_PLANFILE_H

#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dsc::runtime {

/// Serialises a plan (does not verify it; call verifyPlan first).
std::vector<uint8_t> serializePlan(const Plan &plan);
/// Parses and verifies a plan from bytes; `origin` names the source in errors.
Expected<Plan> parsePlan(std::span<const uint8_t> bytes, const std::string &origin);

/// Semantic checks (see Plan.h invariants).
Status verifyPlan(const Plan &plan);

Status writePlanFile(const std::string &path, const Plan &plan);
Expected<Plan> readPlanFile(const std::string &path);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_PLANFILE_H
