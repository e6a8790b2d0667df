//===- LayerVerifier.cpp - The CSA2 schedule, checked per ds.layer --------===//
//
// A layer may read shared values (compressed KV, index keys, top-k,
// candidates) only from the layers its #ds.csa2 names, of its own ratio, and
// may only publish what its role computes:
//   - full:    kv_source == index_source == id; computes kv_cache, index_keys
//              and topk; a decoder Full layer may publish candidates;
//   - reindex: index_source == id, kv_source < id; computes topk from the kv
//              source's index keys (within the candidate pool if it reads one);
//   - reuse:   kv_source, index_source < id; reads both, computes neither;
//   - swa, dspark: no compressed state at all.
// CED (ds-ced-split): a `ced_projection` layer is the projection part of a
// Full layer (no attention, no MoE); it yields no stream and publishes
// exactly its kv cache and index keys. The replayed Full layer with the same
// id reads them (as a reindex layer reads its kv source's keys).
// Every diagnostic names the layer and what was expected.
//===----------------------------------------------------------------------===//
#include "dialects/DeepSeek/IR/DeepSeekDialect.h"

using namespace mlir;
using namespace dsc::ds;

namespace {

bool isShared(Type type) {
  return llvm::isa<KvCacheType, IndexKeysType, TopKType, CandidatesType>(type);
}

StringRef sharedName(Type type) {
  if (llvm::isa<KvCacheType>(type)) return "kv cache";
  if (llvm::isa<IndexKeysType>(type)) return "index keys";
  if (llvm::isa<TopKType>(type)) return "top-k";
  return "candidates";
}

int64_t sharedRatio(Type type) {
  if (auto t = llvm::dyn_cast<KvCacheType>(type)) return t.getRatio();
  if (auto t = llvm::dyn_cast<IndexKeysType>(type)) return t.getRatio();
  if (auto t = llvm::dyn_cast<TopKType>(type)) return t.getRatio();
  return llvm::cast<CandidatesType>(type).getRatio();
}

/// Checks the header: the ids a role requires.
LogicalResult verifyRoleIds(LayerOp layer) {
  int64_t id = layer.getId();
  CSA2Attr csa2 = layer.getCsa2();
  int64_t kv = csa2.getKvSource(), index = csa2.getIndexSource();
  switch (csa2.getMode()) {
  case LayerMode::full:
    if (kv != id || index != id)
      return layer.emitOpError() << "layer " << id
                                 << " is full: its kv and index source must be itself (" << id
                                 << "), got kv_source " << kv << " and index_source " << index;
    break;
  case LayerMode::reindex:
    if (index != id)
      return layer.emitOpError() << "layer " << id
                                 << " is reindex: its index source must be itself, got " << index;
    if (kv >= id)
      return layer.emitOpError() << "layer " << id << " reads kv source layer " << kv
                                 << ", which is not below it";
    break;
  case LayerMode::reuse:
    if (kv >= id || index >= id)
      return layer.emitOpError() << "layer " << id << " is reuse: its sources must be below it, got kv_source "
                                 << kv << " and index_source " << index;
    break;
  case LayerMode::swa:
  case LayerMode::dspark:
    break;
  }
  if (layer.getMode() == LayerMode::dspark && layer.getDecoder())
    return layer.emitOpError() << "DSpark stage " << id << " is neither encoder nor decoder";
  return success();
}

/// Checks what the layer computes itself.
LogicalResult verifyProducer(LayerOp layer, Operation *op, Type type) {
  int64_t id = layer.getId();
  LayerMode mode = layer.getMode();
  if (sharedRatio(type) != layer.getRatio())
    return op->emitOpError() << "produces " << sharedName(type) << " of ratio "
                             << sharedRatio(type) << " in layer " << id
                             << " of compress ratio " << layer.getRatio();
  if (llvm::isa<KvCacheType, IndexKeysType>(type) && mode != LayerMode::full)
    return op->emitOpError() << "only a Full layer computes " << sharedName(type)
                             << "; layer " << id << " is " << stringifyLayerMode(mode);
  if (llvm::isa<TopKType>(type) && mode != LayerMode::full && mode != LayerMode::reindex)
    return op->emitOpError() << "only an index source (full or reindex) computes top-k; layer "
                             << id << " is " << stringifyLayerMode(mode);
  if (llvm::isa<CandidatesType>(type) && (mode != LayerMode::full || !layer.getDecoder()))
    return op->emitOpError() << "the candidate source must be a decoder Full layer; layer "
                             << id << " is " << (layer.getDecoder() ? "a decoder " : "an encoder ")
                             << stringifyLayerMode(mode) << " layer";
  return success();
}

/// Checks a shared value read from another layer.
LogicalResult verifyConsumer(LayerOp layer, Operation *user, Value value) {
  int64_t id = layer.getId();
  Type type = value.getType();
  CSA2Attr csa2 = layer.getCsa2();
  auto source = value.getDefiningOp<LayerOp>();
  if (!source)
    return user->emitOpError() << "in layer " << id << " reads " << sharedName(type)
                               << " that no ds.layer published";
  int64_t from = source.getId();
  if (sharedRatio(type) != layer.getRatio())
    return user->emitOpError() << "layer " << id << " has compress ratio " << layer.getRatio()
                               << " but reads the " << sharedName(type) << " of layer " << from
                               << " with ratio " << sharedRatio(type);
  LayerMode mode = layer.getMode();
  if (llvm::isa<KvCacheType>(type)) {
    if (from != csa2.getKvSource())
      return user->emitOpError() << "layer " << id << " reads the kv cache of layer " << from
                                 << ", but its kv source is layer " << csa2.getKvSource();
  } else if (llvm::isa<IndexKeysType>(type)) {
    // The replayed Full layer L/2 scores the keys its own projection computed.
    if (mode == LayerMode::full && source.getCedProjection() && from == id)
      return success();
    if (mode != LayerMode::reindex)
      return user->emitOpError() << "only a reindex layer scores another layer's index keys; layer "
                                 << id << " is " << stringifyLayerMode(mode);
    if (from != csa2.getKvSource())
      return user->emitOpError() << "layer " << id << " reads the index keys of layer " << from
                                 << ", but its kv source is layer " << csa2.getKvSource();
  } else if (llvm::isa<TopKType>(type)) {
    if (mode != LayerMode::reuse)
      return user->emitOpError() << "only a reuse layer reads another layer's top-k; layer " << id
                                 << " is " << stringifyLayerMode(mode);
    if (from != csa2.getIndexSource())
      return user->emitOpError() << "layer " << id << " reads the top-k of layer " << from
                                 << ", but its index source is layer " << csa2.getIndexSource();
  } else {
    if (mode != LayerMode::reindex && mode != LayerMode::full)
      return user->emitOpError() << "only an index source scores within candidates; layer " << id
                                 << " is " << stringifyLayerMode(mode);
  }
  return success();
}

} // namespace

LogicalResult LayerOp::verifyRegions() {
  if (failed(verifyRoleIds(*this)))
    return failure();

  if (getCedProjection()) {
    if (getMode() != LayerMode::full)
      return emitOpError() << "the CED projection of layer " << getId()
                           << " must be a Full layer (it computes kv and keys), got "
                           << stringifyLayerMode(getMode());
    if (getNumResults() != 2 || !llvm::isa<KvCacheType>(getResult(0).getType()) ||
        !llvm::isa<IndexKeysType>(getResult(1).getType()))
      return emitOpError() << "the CED projection of layer " << getId()
                           << " publishes exactly its kv cache and index keys, and no stream";
    Operation *forbidden = nullptr;
    getBody().walk([&](Operation *op) {
      if (llvm::isa<SparseAttentionOp, MoeGateOp, MoeExpertsOp>(op) && !forbidden)
        forbidden = op;
    });
    if (forbidden)
      return forbidden->emitOpError() << "in the CED projection of layer " << getId()
                                      << ": a projection has no attention and no MoE";
  }

  // Results: stream and mix first.
  if (getMode() != LayerMode::dspark && !getCedProjection() && getNumResults() < 2)
    return emitOpError() << "layer " << getId()
                         << " must yield at least the residual stream and the next mix";

  bool hasEngramGate = false, hasAttention = false, readsForeignTopK = false;
  WalkResult walk = getBody().walk([&](Operation *op) -> WalkResult {
    if (llvm::isa<EngramGateOp>(op))
      hasEngramGate = true;
    if (auto attention = llvm::dyn_cast<SparseAttentionOp>(op)) {
      hasAttention = true;
      if (attention.getTopk() && attention.getTopk().getDefiningOp<LayerOp>())
        readsForeignTopK = true;
    }
    if (auto yield = llvm::dyn_cast<YieldOp>(op)) {
      // What the layer publishes must be its own work, allowed for its role.
      for (Value value : yield.getValues()) {
        if (!isShared(value.getType()))
          continue;
        Operation *def = value.getDefiningOp();
        if (!def || !getBody().isAncestor(def->getParentRegion())) {
          yield.emitOpError() << "layer " << getId() << " publishes "
                              << sharedName(value.getType()) << " it did not compute";
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    }
    // A fused group forwards what its body ops produced (checked there).
    for (Value result : op->getResults())
      if (!llvm::isa<FusedOp>(op) && isShared(result.getType()) &&
          failed(verifyProducer(*this, op, result.getType())))
        return WalkResult::interrupt();
    for (Value operand : op->getOperands()) {
      if (!isShared(operand.getType()))
        continue;
      // Values computed inside this layer are its own.
      if (Operation *def = operand.getDefiningOp(); def && getBody().isAncestor(def->getParentRegion()))
        continue;
      if (failed(verifyConsumer(*this, op, operand)))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (walk.wasInterrupted())
    return failure();

  if (getEngram() != hasEngramGate)
    return emitOpError() << "layer " << getId()
                         << (getEngram() ? " is marked engram but has no ds.engram_gate"
                                         : " has a ds.engram_gate but is not marked engram");
  if (getMode() == LayerMode::reuse && hasAttention && !readsForeignTopK)
    return emitOpError() << "reuse layer " << getId() << " must attend with the top-k of layer "
                         << getCsa2().getIndexSource();
  return success();
}
