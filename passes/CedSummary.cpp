//===- CedSummary.cpp - What CED prefill runs on how many tokens ----------===//
#include "passes/CedSummary.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <map>

using namespace mlir;

namespace dsc::ds {

namespace {

/// The share of a weight's parameters one token activates, from its users.
/// 0 when no user runs a GEMM per token on it.
double activeShare(WeightOp weight) {
  Value w = weight.getResult();
  double share = 0;
  for (Operation *user : w.getUsers()) {
    double s = 1.0;
    if (llvm::isa<EmbedOp>(user)) {
      s = 0; // a lookup, not a GEMM
    } else if (auto head = llvm::dyn_cast<HeadOp>(user)) {
      if (head.getLastOnly())
        s = 0; // one row per prompt, not per token
    } else if (auto experts = llvm::dyn_cast<MoeExpertsOp>(user)) {
      if (w == experts.getW1() || w == experts.getW3() || w == experts.getW2() ||
          w == experts.getW1Scale() || w == experts.getW3Scale() || w == experts.getW2Scale()) {
        auto ids = llvm::cast<RankedTensorType>(experts.getExpertIds().getType());
        auto w1 = llvm::cast<RankedTensorType>(experts.getW1().getType());
        s = double(ids.getShape().back()) / double(w1.getShape()[0]);
      }
    } else if (auto lookup = llvm::dyn_cast<EngramLookupOp>(user)) {
      if (w == lookup.getTable()) {
        auto hashes = llvm::cast<RankedTensorType>(lookup.getHashes().getType());
        auto table = llvm::cast<RankedTensorType>(lookup.getTable().getType());
        s = double(hashes.getShape()[2]) / double(table.getShape()[0]);
      }
    }
    share = std::max(share, s);
  }
  return share;
}

} // namespace

CedSummary summarizeCed(ModuleOp module) {
  CedSummary summary;
  auto modeAttr = module->getAttrOfType<StringAttr>("ds.ced_mode");
  summary.mode = modeAttr ? modeAttr.getValue().str() : "full";
  auto prefill = module.lookupSymbol<func::FuncOp>("prefill");
  if (!prefill)
    return summary;

  for (auto slice : prefill.getBody().front().getOps<ReplaySliceOp>())
    summary.replayTokens = slice.getTokens();
  std::map<int64_t, std::string> tokensOf;
  std::map<std::string, double> activated; // parameter -> activated count
  bool onSlice = false;
  for (Operation &op : prefill.getBody().front()) {
    if (llvm::isa<ReplaySliceOp>(op)) {
      onSlice = true;
      continue;
    }
    if (auto layer = llvm::dyn_cast<LayerOp>(op)) {
      if (layer.getMode() != LayerMode::dspark && !layer.getCedProjection())
        tokensOf[layer.getId()] = onSlice ? std::to_string(summary.replayTokens) : "all";
    }
    if (onSlice)
      continue;
    op.walk([&](WeightOp weight) {
      auto param =
          SymbolTable::lookupNearestSymbolFrom<ParameterOp>(weight, weight.getParameterAttr());
      if (!param)
        return;
      double n = activeShare(weight) * double(param.getParameterCount());
      double &slot = activated[param.getSymName().str()];
      slot = std::max(slot, n);
    });
  }
  for (auto &[id, tokens] : tokensOf)
    summary.prefillLayerTokens.push_back(tokens);
  for (auto &[name, n] : activated)
    summary.activatedPerPromptToken += n;
  return summary;
}

} // namespace dsc::ds
