//===- CedSummary.h - What CED prefill runs on how many tokens ------------===//
//
// Read off a module after ds-ced-split (or an unsplit one: mode "full"):
// which backbone layers of @prefill run on every prompt token and which on
// the replayed suffix, and the parameters activated per prompt token by
// what runs on every token (the cost that grows with the prompt).
//===----------------------------------------------------------------------===//
#ifndef DSC_PASSES_CEDSUMMARY_H
#define DSC_PASSES_CEDSUMMARY_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
} // namespace mlir

namespace dsc::ds {

struct CedSummary {
  /// The module's ds.ced_mode: "full" (no attribute), "bounded" or "exact".
  std::string mode;
  /// R of the ds.replay_slice (0 for full: nothing is replayed).
  int64_t replayTokens = 0;
  /// Per backbone layer id 0..n-1 of @prefill: "all", or the replay length
  /// (std::to_string(R)) for a layer whose attention and MoE run on the
  /// slice. Layer L/2 reads the replay length; its CED projection runs on all
  /// tokens and is counted in activatedPerPromptToken.
  std::vector<std::string> prefillLayerTokens;
  /// Parameters activated per prompt token by the @prefill ops that run on
  /// every token (prompt length >> R): GEMM weights count fully, a routed
  /// expert stack top-k/E, an Engram table hash-columns/rows; the embedding
  /// (a lookup) and a last-row-only head do not count.
  double activatedPerPromptToken = 0;
};

/// Summarises @prefill of `module`. Missing @prefill: mode only.
CedSummary summarizeCed(mlir::ModuleOp module);

} // namespace dsc::ds

#endif // DSC_PASSES_CEDSUMMARY_H
