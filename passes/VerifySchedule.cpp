//===- VerifySchedule.cpp - ds-verify-schedule -----------------------------===//
//
// Module-wide schedule checks (see Passes.td). Per-layer checks are in the
// ds.layer verifier (dialects/DeepSeek/IR/LayerVerifier.cpp) and have run
// before any pass; this pass adds what needs the whole function.
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <set>

namespace dsc::ds {
#define GEN_PASS_DEF_VERIFYSCHEDULE
#include "passes/Passes.h.inc"
} // namespace dsc::ds

using namespace mlir;
using namespace dsc::ds;

namespace {

int64_t moduleInt(ModuleOp module, StringRef name, int64_t fallback) {
  if (auto attr = module->getAttrOfType<IntegerAttr>(name))
    return attr.getInt();
  return fallback;
}

LogicalResult verifyFunction(func::FuncOp fn, int64_t nLayers, int64_t cedSplit) {
  std::set<int64_t> engramLayers;
  bool hasEngramHash = false;
  fn.walk([&](EngramHashOp hash) {
    hasEngramHash = true;
    engramLayers.insert(hash.getLayers().begin(), hash.getLayers().end());
  });
  for (int64_t id : engramLayers) {
    if (id < 0)
      return fn.emitError() << "Engram layer " << id << " is negative";
    if (nLayers >= 0 && id >= nLayers)
      return fn.emitError() << "Engram layer " << id << " is out of range [0, " << nLayers << ")";
  }

  int64_t expected = 0;
  int64_t candidateSource = -1;
  bool sawDSpark = false;
  LayerOp projection; // a CED projection waiting for its replayed layer
  for (Operation &op : fn.getBody().front()) {
    auto layer = llvm::dyn_cast<LayerOp>(op);
    if (!layer)
      continue;
    int64_t id = layer.getId();
    if (layer.getMode() == LayerMode::dspark) {
      sawDSpark = true;
      if (nLayers >= 0 && id < nLayers)
        return layer.emitOpError() << "DSpark stage " << id << " must follow the " << nLayers
                                   << " backbone layers";
      continue;
    }
    if (sawDSpark)
      return layer.emitOpError() << "backbone layer " << id << " follows a DSpark stage";
    if (projection && (id != int64_t(projection.getId()) || layer.getCedProjection()))
      return projection.emitOpError() << "the CED projection of layer " << projection.getId()
                                      << " must be followed by layer " << projection.getId();
    if (id != expected)
      return layer.emitOpError() << "layer " << id << " is out of order: expected layer "
                                 << expected;
    // A CED projection and its replayed layer share one id (ds-ced-split).
    projection = layer.getCedProjection() ? layer : LayerOp();
    if (!projection)
      ++expected;
    if (cedSplit >= 0 && layer.getDecoder() != (id >= cedSplit))
      return layer.emitOpError() << "layer " << id << " must be "
                                 << (id >= cedSplit ? "a decoder" : "an encoder")
                                 << " layer (CED split at layer " << cedSplit << ")";
    if (layer.getEngram() != (engramLayers.count(id) > 0))
      return layer.emitOpError() << "layer " << id
                                 << (layer.getEngram() ? " is marked engram but ds.engram_hash does not hash it"
                                                       : " is hashed by ds.engram_hash but not marked engram");
    bool publishesCandidates = llvm::any_of(
        layer.getResultTypes(), [](Type t) { return llvm::isa<CandidatesType>(t); });
    if (publishesCandidates) {
      if (candidateSource >= 0)
        return layer.emitOpError() << "layer " << id << " publishes candidates, but layer "
                                   << candidateSource << " already is the candidate source";
      candidateSource = id;
    }
  }
  if (projection)
    return projection.emitOpError() << "the CED projection of layer " << projection.getId()
                                    << " must be followed by layer " << projection.getId();
  if (nLayers >= 0 && expected != 0 && expected != nLayers)
    return fn.emitError() << "function @" << fn.getSymName() << " has " << expected
                          << " backbone layers, expected " << nLayers;
  (void)hasEngramHash;
  return success();
}

struct VerifySchedulePass : dsc::ds::impl::VerifyScheduleBase<VerifySchedulePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    int64_t nLayers = moduleInt(module, "ds.n_layers", -1);
    int64_t cedSplit = moduleInt(module, "ds.ced_split", -1);
    for (auto fn : module.getOps<func::FuncOp>())
      if (failed(verifyFunction(fn, nLayers, cedSplit)))
        return signalPassFailure();
  }
};

} // namespace
