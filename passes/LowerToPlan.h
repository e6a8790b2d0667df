//===- LowerToPlan.h - ds module -> runtime Plan ----------------------===//
//
// Lowers every phase function of a verified ds module to a plan Program:
// one kernel step per ds op, grouped into one Program::fusions entry per
// ds.fused (its executable and internal values included), one value slot per
// SSA value, checkpoint bindings from ds.parameter, and the state a session
// keeps (window rings, per-source KV and index keys, compressor partial
// groups, Engram history) as StateBuffers with their record layouts. The
// kernel vocabulary is the ds op names without the prefix (docs/kernels.md);
// a kernel's typed parameters come from the generated kernel ABI
// (lowerKernelParams, dsc-tblgen: the op's attributes plus its
// `kernelParams` derived from types).
//===----------------------------------------------------------------------===//
#ifndef DSC_PASSES_LOWERTOPLAN_H
#define DSC_PASSES_LOWERTOPLAN_H

#include "dsc/runtime/Plan.h"

#include <string>

namespace mlir {
class ModuleOp;
}

namespace dsc::ds {

/// `facts` carries what the module does not (limits, CED mode, token map).
/// Returns false and sets `error` if something cannot be lowered.
bool lowerModuleToPlan(mlir::ModuleOp module, const runtime::PlanFacts &facts,
                       runtime::Plan &plan, std::string &error);

} // namespace dsc::ds

#endif // DSC_PASSES_LOWERTOPLAN_H
