//===- PlanFile.h - Read, verify and write plan files ----------------------===//
//
// A plan file is a FlatBuffers buffer (schema runtime/schema/plan.fbs, file
// identifier "DSCP", extension .dscp) holding a PlanModel. Reading checks, in
// order: the file can be read; the buffer passes the FlatBuffers verifier
// with the right identifier ("not a dsc plan" otherwise); the schema version
// is kPlanSchemaVersion; then verifyPlan's semantic checks. Every error says
// what is wrong and where (program, launch, value, tensor index).
// Writing is all-or-nothing: a temporary file renamed into place.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_PLANFILE_H
#define DSC_RUNTIME_PLANFILE_H

#include "dsc/runtime/PlanModel.h"
#include "dsc/runtime/Status.h"

#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace dsc::runtime {

/// Serialises a plan (does not verify it; call verifyPlan first).
std::vector<uint8_t> serializePlan(const PlanModel &plan);
/// Parses and verifies a plan from bytes; `origin` names the source in errors.
Expected<PlanModel> parsePlan(std::span<const uint8_t> bytes, const std::string &origin);

/// Semantic checks (see PlanModel.h invariants).
Status verifyPlan(const PlanModel &plan);

Status writePlanFile(const std::string &path, const PlanModel &plan);
Expected<PlanModel> readPlanFile(const std::string &path);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_PLANFILE_H
