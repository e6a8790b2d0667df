//===- KvFootprint.h - The KV state a model keeps, in bytes ---------------===//
//
// computeKvFootprint reads the `@decode` function of a ds module: every value of
// type !ds.kv_cache / !ds.index_keys a layer publishes is one persistent
// buffer (one per KV source); every !ds.window is one ring per layer. Bytes per
// token divide a record by the source's compress ratio, so they may be
// fractional (tiny40: 42.5 B/token of index keys).
//===----------------------------------------------------------------------===//
#ifndef DSC_PASSES_KVFOOTPRINT_H
#define DSC_PASSES_KVFOOTPRINT_H

#include <cstdint>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace dsc::ds {

struct KvSourcePlan {
  int64_t layer = 0;
  int64_t ratio = 0;
  int64_t mainBytesPerEntry = 0;  ///< FP4 main KV record (288 B released)
  int64_t indexBytesPerEntry = 0; ///< FP4 index-key record (68 B released)
  std::vector<int64_t> readers;   ///< layers attending to this buffer (source included)
};

struct WindowPlan {
  int64_t layer = 0;
  int64_t slots = 0;         ///< ring size (window)
  int64_t bytesPerToken = 0; ///< FP8 record (528 B released)
};

struct KvFootprint {
  std::vector<KvSourcePlan> sources;
  std::vector<WindowPlan> windows;
  double mainBytesPerToken = 0;
  double indexBytesPerToken = 0;
  double totalBytesPerToken() const { return mainBytesPerToken + indexBytesPerToken; }
  /// Window record bytes per token per layer (0 if no layer keeps a ring).
  int64_t windowBytesPerTokenPerLayer = 0;
  /// Bytes of all rings of one sequence.
  int64_t windowRingBytes = 0;
};

/// Computes the plan from the module's @decode function (empty if absent).
KvFootprint computeKvFootprint(mlir::ModuleOp module);

} // namespace dsc::ds

#endif // DSC_PASSES_KVFOOTPRINT_H
