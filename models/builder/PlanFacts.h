//===- PlanFacts.h - The model facts a plan carries, from a ModelSpec -----===//
#ifndef DSC_MODELS_BUILDER_PLANFACTS_H
#define DSC_MODELS_BUILDER_PLANFACTS_H

#include "dsc/runtime/Plan.h"
#include "models/ModelSpec.h"

namespace dsc::models {

/// Fills the runtime's model facts (sizes, limits) from a spec; the CED mode,
/// conformance flag and token map are the caller's.
runtime::PlanFacts planFactsFor(const ModelSpec &spec, int64_t maxSeqLen, int64_t maxBatch);

} // namespace dsc::models

#endif // DSC_MODELS_BUILDER_PLANFACTS_H
