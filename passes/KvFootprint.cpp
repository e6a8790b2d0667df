//===- KvFootprint.cpp - KV buffers and bytes per token from the IR -------------===//
#include "passes/KvFootprint.h"
#include "passes/KvRecordSizes.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;

dsc::ds::KvFootprint dsc::ds::computeKvFootprint(ModuleOp module) {
  KvFootprint plan;
  auto decode = module.lookupSymbol<func::FuncOp>("decode");
  if (!decode)
    return plan;
  decode.walk([&](LayerOp layer) {
    if (layer.getMode() == LayerMode::full) {
      KvSourcePlan source;
      source.layer = layer.getId();
      source.ratio = layer.getRatio();
      for (Value result : layer.getResults()) {
        if (auto kv = llvm::dyn_cast<KvCacheType>(result.getType())) {
          source.mainBytesPerEntry = mainKvRecordBytes(kv.getDim());
          for (Operation *user : result.getUsers())
            if (LayerOp reader = LayerOp::of(user))
              source.readers.push_back(reader.getId());
        }
        if (auto keys = llvm::dyn_cast<IndexKeysType>(result.getType()))
          source.indexBytesPerEntry = indexKeyRecordBytes(keys.getDim());
      }
      source.readers.insert(source.readers.begin(), source.layer);
      llvm::sort(source.readers);
      source.readers.erase(std::unique(source.readers.begin(), source.readers.end()),
                           source.readers.end());
      plan.mainBytesPerToken += double(source.mainBytesPerEntry) / double(source.ratio);
      plan.indexBytesPerToken += double(source.indexBytesPerEntry) / double(source.ratio);
      plan.sources.push_back(std::move(source));
    }
    // Rings the layer keeps (a DSpark draft window keeps no backbone ring).
    layer.getBody().walk([&](WindowKvOp window) {
      WindowType type = window.getWindow().getType();
      WindowPlan ring{layer.getId(), type.getSize(), windowRecordBytes(type.getDim())};
      plan.windowBytesPerTokenPerLayer = ring.bytesPerToken;
      plan.windowRingBytes += ring.slots * ring.bytesPerToken;
      plan.windows.push_back(ring);
    });
  });
  return plan;
}
