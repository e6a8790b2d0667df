//===- ModelBuilder.h - Build the ds module of a model ---------------------===//
//
// buildModule(spec) returns a verified module with:
//   - one `ds.parameter` per checkpoint tensor the model binds (official names;
//     stacked routed experts use `{e}`),
//   - `@prefill(ids: tensor<?xi32>)` and `@decode(id: tensor<1xi32>)`: every
//     backbone layer as a `ds.layer`, Engram, the final collapse and the head;
//     both also return the DSpark main_hidden (copy means of the targets),
//   - `@dspark_prefill` (seeds the DSpark rings) and `@dspark_draft` (one
//     drafting step: stages, head, Markov and confidence heads) when the model
//     has DSpark stages.
// Module attributes `ds.n_layers`, `ds.ced_split` and `ds.vocab_size` carry
// the facts passes need without the ModelSpec.
//===----------------------------------------------------------------------===//
#ifndef DSC_MODELS_BUILDER_MODELBUILDER_H
#define DSC_MODELS_BUILDER_MODELBUILDER_H

#include "models/ModelSpec.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir {
class MLIRContext;
}

namespace dsc::models {

struct BuildOptions {
  /// @prefill returns the logits of every position (conformance plans; the
  /// goldens' prefill.logits_all), not only the last one.
  bool allPrefillLogits = false;
};

/// Builds the whole model graph; returns null (after emitting a diagnostic)
/// if the result does not verify, which is a bug in the builder.
mlir::OwningOpRef<mlir::ModuleOp> buildModule(const ModelSpec &spec,
                                              mlir::MLIRContext &context,
                                              const BuildOptions &options = {});

} // namespace dsc::models

#endif // DSC_MODELS_BUILDER_MODELBUILDER_H
