//===- PlanKv.cpp - ds-plan-kv: attach the KV plan to the module -----------===//
//
// Writes `ds.kv_plan` on the module: a dictionary with bytes per token
// (main, index, total), the window record bytes per token per layer, the ring
// bytes of one sequence, and one entry per KV source (layer, ratio, record
// bytes, reader layers). See KvFootprint.h for how the plan is derived.
//===----------------------------------------------------------------------===//
#include "passes/KvFootprint.h"
#include "passes/Passes.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace dsc::ds {
#define GEN_PASS_DEF_PLANKV
#include "passes/Passes.h.inc"
} // namespace dsc::ds

using namespace mlir;

namespace {
struct PlanKvPass : dsc::ds::impl::PlanKvBase<PlanKvPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    dsc::ds::KvFootprint plan = dsc::ds::computeKvFootprint(module);
    Builder b(module.getContext());
    SmallVector<Attribute> sources;
    for (const dsc::ds::KvSourcePlan &s : plan.sources)
      sources.push_back(b.getDictionaryAttr({
          b.getNamedAttr("layer", b.getI64IntegerAttr(s.layer)),
          b.getNamedAttr("ratio", b.getI64IntegerAttr(s.ratio)),
          b.getNamedAttr("main_bytes_per_entry", b.getI64IntegerAttr(s.mainBytesPerEntry)),
          b.getNamedAttr("index_bytes_per_entry", b.getI64IntegerAttr(s.indexBytesPerEntry)),
          b.getNamedAttr("readers", b.getDenseI64ArrayAttr(s.readers)),
      }));
    module->setAttr("ds.kv_plan",
                    b.getDictionaryAttr({
                        b.getNamedAttr("main_bytes_per_token", b.getF64FloatAttr(plan.mainBytesPerToken)),
                        b.getNamedAttr("index_bytes_per_token", b.getF64FloatAttr(plan.indexBytesPerToken)),
                        b.getNamedAttr("total_bytes_per_token", b.getF64FloatAttr(plan.totalBytesPerToken())),
                        b.getNamedAttr("window_bytes_per_token_per_layer",
                                       b.getI64IntegerAttr(plan.windowBytesPerTokenPerLayer)),
                        b.getNamedAttr("window_ring_bytes", b.getI64IntegerAttr(plan.windowRingBytes)),
                        b.getNamedAttr("sources", b.getArrayAttr(sources)),
                    }));
  }
};
} // namespace
