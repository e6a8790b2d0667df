//===- CedSplit.cpp - ds-ced-split: CED prefill on a replayed suffix -------===//
//
// Rewrites @prefill (see Passes.td and docs/passes.md):
//
//   layers 0 .. L/2-1                          all S rows (unchanged)
//   ds.layer L/2 {ced_projection} -> kv, keys  all S rows
//   ds.replay_slice %h, %mix {tokens = R}      last R' = min(R, S) rows
//   ds.layer L/2 (reads the projected kv/keys) R' rows
//   ds.layer L/2+1 .. L-1, norm, head          R' rows
//
// The projection is a copy of layer L/2 reduced to what its kv cache and
// index keys depend on (dead ops dropped); the replayed layer L/2 loses its
// compress_kv / index_keys (and what only fed them) and no longer publishes
// kv and keys: later readers take them from the projection, which has the
// same id, so the csa2 sources stay as they are.
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

namespace dsc::ds {
#define GEN_PASS_DEF_CEDSPLIT
#include "passes/Passes.h.inc"
} // namespace dsc::ds

using namespace mlir;
using namespace dsc::ds;

namespace {

/// Erases the ops of `block` whose results are unused, until none is left
/// (the ds ops are value semantics; the terminator stays).
void eraseDeadOps(Block &block) {
  bool changed = true;
  while (changed) {
    changed = false;
    for (Operation &op : llvm::make_early_inc_range(llvm::reverse(block))) {
      if (op.hasTrait<OpTrait::IsTerminator>() || !op.use_empty())
        continue;
      op.erase();
      changed = true;
    }
  }
}

LayerOp findLayer(func::FuncOp fn, int64_t id) {
  for (auto layer : fn.getBody().front().getOps<LayerOp>())
    if (int64_t(layer.getId()) == id && layer.getMode() != LayerMode::dspark)
      return layer;
  return {};
}

LayerOp createLayerLike(OpBuilder &b, LayerOp like, TypeRange types) {
  auto layer = LayerOp::create(b, like.getLoc(), types, like.getIdAttr(), like.getCsa2Attr(),
                               like.getDecoderAttr(), like.getEngramAttr(),
                               like.getDsparkTargetAttr(), like.getCedProjectionAttr());
  return layer;
}

struct CedSplitPass : dsc::ds::impl::CedSplitBase<CedSplitPass> {
  using CedSplitBase::CedSplitBase;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (mode != "full" && mode != "bounded" && mode != "exact") {
      module.emitError() << "ds-ced-split: mode must be full, bounded or exact, got '" << mode
                         << "'";
      return signalPassFailure();
    }
    if (mode == "full")
      return; // prefill runs every layer on every token: nothing to do
    if (failed(split(module)))
      return signalPassFailure();
    module->setAttr("ds.ced_mode", StringAttr::get(module.getContext(), mode));
  }

  LogicalResult split(ModuleOp module) {
    auto splitAttr = module->getAttrOfType<IntegerAttr>("ds.ced_split");
    if (!splitAttr)
      return module.emitError() << "ds-ced-split needs the module's ds.ced_split";
    int64_t split = splitAttr.getInt();
    auto prefill = module.lookupSymbol<func::FuncOp>("prefill");
    if (!prefill)
      return module.emitError() << "ds-ced-split needs a @prefill function";
    if (split < 1)
      return prefill.emitError() << "ds-ced-split needs ds.ced_split >= 1, got " << split;

    // The window, from the !ds.window types of the prefill layers.
    int64_t window = -1;
    WalkResult walk = prefill.walk([&](WindowKvOp op) {
      if (LayerOp::of(op) && LayerOp::of(op).getMode() == LayerMode::dspark)
        return WalkResult::advance();
      int64_t size = op.getWindow().getType().getSize();
      if (window >= 0 && size != window) {
        op.emitOpError() << "has window " << size << " but an earlier layer has " << window
                         << ": ds-ced-split needs one window size";
        return WalkResult::interrupt();
      }
      window = size;
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return failure();
    if (window < 1)
      return prefill.emitError() << "ds-ced-split reads the window from !ds.window types; "
                                    "@prefill has none";
    const int64_t tokens = mode == "exact" ? split * window : window;

    for (auto layer : prefill.getBody().front().getOps<LayerOp>()) {
      if (layer.getCedProjection())
        return layer.emitOpError() << "@prefill is already split for CED";
      if (int64_t(layer.getId()) >= split && layer.getMode() != LayerMode::dspark &&
          layer.getEngram())
        return layer.emitOpError() << "Engram layer " << layer.getId()
                                   << " is at or above the CED split (layer " << split
                                   << "): its hashes cover all tokens, which ds-ced-split "
                                      "does not slice";
    }
    LayerOp target = findLayer(prefill, split);
    LayerOp previous = findLayer(prefill, split - 1);
    if (!target || !previous)
      return prefill.emitError() << "ds-ced-split: @prefill has no layer " << split
                                 << (target ? " - 1" : "");
    if (previous.getNumResults() < 2)
      return previous.emitOpError() << "layer " << previous.getId()
                                    << " yields no stream and mix to replay";
    Value stream = previous.getResult(0), mix = previous.getResult(1);
    auto streamType = llvm::dyn_cast<RankedTensorType>(stream.getType());
    auto mixType = llvm::dyn_cast<RankedTensorType>(mix.getType());
    if (!streamType || !mixType || streamType.getRank() != 3 || mixType.getRank() != 2 ||
        !ShapedType::isDynamic(streamType.getDimSize(0)))
      return previous.emitOpError() << "ds-ced-split needs a [?, hc, D] stream and [?, hc] "
                                       "mix (a dynamic prompt length) out of layer "
                                    << previous.getId();

    OpBuilder b(target);
    // 1. The projection: layer L/2 reduced to its kv cache and index keys.
    LayerOp projection;
    if (target.getMode() == LayerMode::full) {
      auto yield = llvm::cast<YieldOp>(target.getBody().front().getTerminator());
      int kvIndex = -1, keysIndex = -1;
      for (auto [i, v] : llvm::enumerate(yield.getValues())) {
        if (llvm::isa<KvCacheType>(v.getType()))
          kvIndex = int(i);
        if (llvm::isa<IndexKeysType>(v.getType()))
          keysIndex = int(i);
      }
      if (kvIndex < 0 || keysIndex < 0)
        return target.emitOpError() << "Full layer " << split
                                    << " publishes no kv cache and index keys to project";
      Type kvType = yield.getValues()[kvIndex].getType();
      Type keysType = yield.getValues()[keysIndex].getType();
      projection = createLayerLike(b, target, TypeRange{kvType, keysType});
      projection.setDsparkTarget(false);
      projection.setCedProjection(true);
      IRMapping mapping;
      target.getBody().cloneInto(&projection.getBody(), mapping);
      auto projYield = llvm::cast<YieldOp>(projection.getBody().front().getTerminator());
      Value kv = projYield.getValues()[kvIndex], keys = projYield.getValues()[keysIndex];
      OpBuilder yb(projYield);
      YieldOp::create(yb, projYield.getLoc(), ValueRange{kv, keys});
      projYield.erase();
      eraseDeadOps(projection.getBody().front());
      bool hasGate = false;
      projection.getBody().walk([&](EngramGateOp) { hasGate = true; });
      projection.setEngram(hasGate);

      // 2. The replayed layer L/2 reads the projected kv and keys.
      Value ownKv = yield.getValues()[kvIndex], ownKeys = yield.getValues()[keysIndex];
      SmallVector<Value> keep;
      SmallVector<Type> keepTypes;
      SmallVector<int> oldIndex;
      for (auto [i, v] : llvm::enumerate(yield.getValues()))
        if (int(i) != kvIndex && int(i) != keysIndex) {
          keep.push_back(v);
          keepTypes.push_back(v.getType());
          oldIndex.push_back(int(i));
        }
      OpBuilder rb(yield);
      YieldOp::create(rb, yield.getLoc(), keep);
      yield.erase();
      ownKv.replaceAllUsesWith(projection.getResult(0));
      ownKeys.replaceAllUsesWith(projection.getResult(1));
      eraseDeadOps(target.getBody().front());

      b.setInsertionPoint(target);
      LayerOp replayed = createLayerLike(b, target, keepTypes);
      replayed.getBody().takeBody(target.getBody());
      target.getResult(kvIndex).replaceAllUsesWith(projection.getResult(0));
      target.getResult(keysIndex).replaceAllUsesWith(projection.getResult(1));
      for (auto [newIndex, old] : llvm::enumerate(oldIndex))
        target.getResult(old).replaceAllUsesWith(replayed.getResult(newIndex));
      target.erase();
      target = replayed;
    }

    // 3. The slice, between the projection and the replayed layer.
    b.setInsertionPoint(target);
    auto dynamicRows = [](RankedTensorType t) {
      SmallVector<int64_t> shape(t.getShape());
      shape[0] = ShapedType::kDynamic;
      return RankedTensorType::get(shape, t.getElementType());
    };
    auto slice = ReplaySliceOp::create(b, target.getLoc(), dynamicRows(streamType),
                                       dynamicRows(mixType), stream, mix,
                                       b.getI64IntegerAttr(tokens));
    auto onSlice = [&](OpOperand &use) {
      Operation *owner = use.getOwner();
      return owner != slice && !(projection && projection->isAncestor(owner)) &&
             slice->isBeforeInBlock(prefill.getBody().front().findAncestorOpInBlock(*owner));
    };
    stream.replaceUsesWithIf(slice.getStreamSlice(), onSlice);
    mix.replaceUsesWithIf(slice.getMixSlice(), onSlice);
    return success();
  }
};

} // namespace
