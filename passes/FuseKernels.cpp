//===- FuseKernels.cpp - ds-fuse-kernels: group ops into fused kernels ----===//
//
// What: inside every `ds.layer`, finds the op groups below by their dataflow
// and wraps each into a `ds.fused` op (one kernel launch after lowering):
//
//   mhc_entry              [hc_post] + hc_pre + rms_norm [+ copy_mean]:
//                          the sublayer output folded into the residual
//                          copies, the pre-collapse and the norm (hc_post
//                          only when it writes the stream the pre-collapse
//                          reads, i.e. the FFN entry; copy_mean: a DSpark
//                          target's capture of the same stream). The
//                          stream's hc_mixes stays outside, moved just
//                          after the group: single-pass mHC collapses with
//                          the PREVIOUS sublayer's pre (reference-spec
//                          8.3), so nothing in the group waits for the
//                          mixes, and outside it they run beside the
//                          sublayer (a graph branch) instead of in front of
//                          it (session 16: five dependent kernels per
//                          decode entry, two of them the mixes' ~20 us);
//   attention_projections  the Q chain (wq_a, q_norm, wq_b, RoPE) and the
//                          window KV chain (wkv, kv_norm, RoPE, window_kv
//                          with its FP8 ring write) of one normed input; a
//                          layer without the Q chain gets
//                          window_kv_projection;
//   compressor             compressor + compress_kv + index_keys (the KV
//                          source's state writes);
//   indexer                index_queries + the head-weight linear +
//                          indexer_score [+ candidate_blocks] + indexer_topk
//                          (the [S, T] scores never leave the kernel), row
//                          tiled: tile_rows = indexer-tile-rows (128), so
//                          the scores exist one [128, T] tile at a time;
//   attention              sparse_attention + inverse RoPE;
//   moe                    moe_gate + moe_experts;
//   engram                 engram_lookup + its projection + engram_gate.
//
// Why: a Reuse layer of the released config is 21 op launches unfused and
// 9 fused (mhc_entry, hc_mixes, attention_projections, attention,
// grouped_output, mhc_entry, hc_mixes, moe, hc_post), under the tech
// report's 15 / 11; the executables issue's 7 held the mixes inside the
// entries, on the decode step's critical path (see mhc_entry above).
// dsc-compile --report prints the counts; test/passes/fuse-kernels*.{mlir,
// test} pin them.
//
// Invariants: groups never cross a layer (so `--layer-boundaries` plans keep
// every boundary, and CED replay marks are per layer); an op joins at most
// one group; a group is formed only if moving its ops next to its last op
// keeps every use dominated (no op outside the group between them reads a
// group value); fusion changes no value, only the launch grouping, so every
// golden comparison is unaffected.
//===----------------------------------------------------------------------===//
#include "passes/Passes.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringSet.h"

namespace dsc::ds {
#define GEN_PASS_DEF_FUSEKERNELS
#include "passes/Passes.h.inc"
} // namespace dsc::ds

using namespace mlir;
using namespace dsc::ds;

namespace {

/// The op defining `v` if it is an `OpT` in `block`.
template <typename OpT> OpT producedIn(Value v, Block &block) {
  auto op = v.getDefiningOp<OpT>();
  return op && op->getBlock() == &block ? op : OpT();
}

class LayerFuser {
public:
  LayerFuser(Block &block, const llvm::StringSet<> &enabled, int64_t indexerTileRows)
      : block_(block), enabled_(enabled), indexerTileRows_(indexerTileRows) {}

  void run() {
    // Collected first, wrapped after: matching sees the unfused block.
    SmallVector<std::pair<std::string, SmallVector<Operation *>>> groups;
    // Ops outside a group that sit between its members and read them, to
    // be moved just after the group's last member (the mhc_entry's mixes).
    SmallVector<std::pair<size_t, Operation *>> after;
    auto add = [&](StringRef kernel, SmallVector<Operation *> ops) {
      if (!enabled_.contains(kernel) && !enabled_.contains("all"))
        return false;
      ops.erase(llvm::remove_if(ops, [](Operation *op) { return op == nullptr; }), ops.end());
      if (ops.size() < 2 || llvm::any_of(ops, [&](Operation *op) { return taken_.contains(op); }))
        return false;
      for (Operation *op : ops)
        taken_.insert(op);
      groups.push_back({kernel.str(), std::move(ops)});
      return true;
    };
    for (Operation &op : block_) {
      if (auto norm = llvm::dyn_cast<RmsNormOp>(op)) {
        HcMixesOp mixes;
        if (add("mhc_entry", mhcEntry(norm, mixes)) && mixes)
          after.push_back({groups.size() - 1, mixes});
      }
      else if (auto window = llvm::dyn_cast<WindowKvOp>(op))
        projections(window, add);
      else if (auto compressor = llvm::dyn_cast<CompressorOp>(op))
        add("compressor", compressorGroup(compressor));
      else if (auto topk = llvm::dyn_cast<IndexerTopKOp>(op))
        add("indexer", indexerGroup(topk));
      else if (auto rope = llvm::dyn_cast<RopeOp>(op); rope && rope.getInverse())
        add("attention", {producedIn<SparseAttentionOp>(rope.getInput(), block_), rope});
      else if (auto experts = llvm::dyn_cast<MoeExpertsOp>(op))
        add("moe", {producedIn<MoeGateOp>(experts.getRouteWeights(), block_), experts});
      else if (auto gate = llvm::dyn_cast<EngramGateOp>(op))
        add("engram", engramGroup(gate));
    }
    for (auto [group, op] : after)
      moveAfter(op, groups[group].second);
    for (auto &[kernel, ops] : groups)
      wrap(kernel, ops);
  }

private:
  /// hc_pre + rms_norm of a stream that hc_mixes also reads (a sublayer
  /// entry), with the hc_post that wrote the stream when it is in this
  /// block; `mixes` is set to that hc_mixes (it stays outside the group).
  SmallVector<Operation *> mhcEntry(RmsNormOp norm, HcMixesOp &mixes) {
    auto pre = producedIn<HcPreOp>(norm.getInput(), block_);
    if (!pre)
      return {};
    for (Operation *user : pre.getStream().getUsers())
      if (auto m = llvm::dyn_cast<HcMixesOp>(user); m && m->getBlock() == &block_)
        mixes = m;
    if (!mixes)
      return {};
    SmallVector<Operation *> ops{producedIn<HcPostOp>(pre.getStream(), block_), pre, norm};
    // A DSpark target's capture: the copy mean of the same stream.
    for (Operation *user : pre.getStream().getUsers())
      if (llvm::isa<CopyMeanOp>(user) && user->getBlock() == &block_)
        ops.push_back(user);
    return ops;
  }

  /// The Q chain ending in a (forward) RoPE: wq_a, q_norm, wq_b, RoPE.
  SmallVector<Operation *> qChain(Value normed) {
    for (Operation *user : normed.getUsers()) {
      auto first = llvm::dyn_cast<LinearOp>(user);
      if (!first || first->getBlock() != &block_ || !first->hasOneUse())
        continue;
      for (Operation *u : first->getResult(0).getUsers()) {
        auto qNorm = llvm::dyn_cast<RmsNormOp>(u);
        if (!qNorm)
          continue;
        for (Operation *v : qNorm->getResult(0).getUsers()) {
          auto second = llvm::dyn_cast<LinearOp>(v);
          if (!second || !second->hasOneUse())
            continue;
          auto rope = llvm::dyn_cast<RopeOp>(*second->getUsers().begin());
          if (rope && !rope.getInverse())
            return {first, qNorm, second, rope};
        }
      }
    }
    return {};
  }

  /// window_kv <- RoPE <- kv_norm <- wkv, and the Q chain of the same input.
  template <typename Add> void projections(WindowKvOp window, Add &&add) {
    auto rope = producedIn<RopeOp>(window.getKv(), block_);
    auto kvNorm = rope ? producedIn<RmsNormOp>(rope.getInput(), block_) : RmsNormOp();
    auto wkv = kvNorm ? producedIn<LinearOp>(kvNorm.getInput(), block_) : LinearOp();
    SmallVector<Operation *> kv;
    if (wkv && wkv->hasOneUse() && kvNorm->hasOneUse() && rope->hasOneUse())
      kv = {wkv, kvNorm, rope, window};
    SmallVector<Operation *> q = wkv ? qChain(wkv.getInput()) : SmallVector<Operation *>();
    if (!q.empty() && !kv.empty()) {
      q.append(kv.begin(), kv.end());
      add("attention_projections", q);
    } else if (!kv.empty()) {
      add("window_kv_projection", kv);
    }
  }

  SmallVector<Operation *> compressorGroup(CompressorOp compressor) {
    SmallVector<Operation *> ops{compressor};
    for (Operation *user : compressor->getResult(0).getUsers())
      if (user->getBlock() == &block_ && llvm::isa<CompressKvOp, IndexKeysOp>(user))
        ops.push_back(user);
    return ops;
  }

  SmallVector<Operation *> indexerGroup(IndexerTopKOp topk) {
    auto score = producedIn<IndexerScoreOp>(topk.getScores(), block_);
    if (!score)
      return {};
    SmallVector<Operation *> ops{producedIn<IndexQueriesOp>(score.getQueries(), block_),
                                 producedIn<LinearOp>(score.getHeadWeights(), block_), score};
    for (Operation *user : score->getResult(0).getUsers())
      if (llvm::isa<CandidateBlocksOp>(user) && user->getBlock() == &block_)
        ops.push_back(user);
    ops.push_back(topk);
    return ops;
  }

  SmallVector<Operation *> engramGroup(EngramGateOp gate) {
    auto projection = producedIn<LinearOp>(gate.getKv(), block_);
    auto lookup = projection ? producedIn<EngramLookupOp>(projection.getInput(), block_)
                             : EngramLookupOp();
    return {lookup, projection, gate};
  }

  /// Moves `op` (outside the group `ops`) just after the group's last
  /// member when it sits between them, so the group can be wrapped: legal
  /// when nothing before that point uses its results (its operands already
  /// dominate it). Otherwise it stays, and wrap() declines the group.
  void moveAfter(Operation *op, ArrayRef<Operation *> ops) {
    Operation *last = ops.front();
    for (Operation *member : ops)
      if (last->isBeforeInBlock(member))
        last = member;
    if (!op->isBeforeInBlock(last))
      return;
    for (Operation *user : op->getUsers()) {
      Operation *inBlock = block_.findAncestorOpInBlock(*user);
      if (!inBlock || inBlock == last || inBlock->isBeforeInBlock(last))
        return;
    }
    op->moveAfter(last);
  }

  /// Moves `ops` (any order) into one ds.fused at the place of the last one.
  void wrap(StringRef kernel, SmallVector<Operation *> &ops) {
    llvm::sort(ops, [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
    llvm::SmallPtrSet<Operation *, 8> members(ops.begin(), ops.end());
    Operation *last = ops.back();
    // Legal only if no op outside the group between the members reads a
    // member's value (moving the members down would break its dominance).
    for (Operation *op : ops)
      for (Operation *user : op->getUsers()) {
        Operation *inBlock = block_.findAncestorOpInBlock(*user);
        if (inBlock && !members.contains(inBlock) && inBlock->isBeforeInBlock(last))
          return;
      }
    SmallVector<Value> escaping;
    for (Operation *op : ops)
      for (Value result : op->getResults())
        if (llvm::any_of(result.getUsers(), [&](Operation *user) {
              Operation *inBlock = block_.findAncestorOpInBlock(*user);
              return !inBlock || !members.contains(inBlock);
            }))
          escaping.push_back(result);

    OpBuilder builder(last);
    builder.setInsertionPointAfter(last);
    auto fused = builder.create<FusedOp>(last->getLoc(), ValueRange(escaping).getTypes(),
                                         builder.getStringAttr(kernel),
                                         builder.getI64IntegerAttr(kernel == "indexer" ? indexerTileRows_ : 0),
                                         /*executable=*/StringAttr());
    Block *body = builder.createBlock(&fused.getBody());
    builder.setInsertionPointToEnd(body);
    auto yield = builder.create<FusedYieldOp>(last->getLoc(), escaping);
    for (Operation *op : ops)
      op->moveBefore(yield);
    for (auto [value, result] : llvm::zip(escaping, fused.getResults()))
      value.replaceUsesWithIf(result, [&](OpOperand &use) {
        return !fused->isProperAncestor(use.getOwner());
      });
  }

  Block &block_;
  const llvm::StringSet<> &enabled_;
  int64_t indexerTileRows_;
  llvm::SmallPtrSet<Operation *, 32> taken_;
};

struct FuseKernelsPass : public dsc::ds::impl::FuseKernelsBase<FuseKernelsPass> {
  using FuseKernelsBase::FuseKernelsBase;

  void runOnOperation() override {
    static const char *const kKnown[] = {"all",       "mhc_entry", "attention_projections",
                                         "compressor", "indexer",   "attention",
                                         "moe",        "engram"};
    llvm::StringSet<> enabled;
    for (const std::string &kernel : kernels) {
      if (!llvm::is_contained(kKnown, llvm::StringRef(kernel))) {
        getOperation().emitError() << "ds-fuse-kernels: unknown group '" << kernel
                                   << "' (known: all, mhc_entry, attention_projections, "
                                      "compressor, indexer, attention, moe, engram)";
        return signalPassFailure();
      }
      enabled.insert(kernel);
    }
    if (kernels.empty())
      enabled.insert("all");
    // attention_projections also governs its one-chain forms.
    if (enabled.contains("attention_projections")) {
      enabled.insert("window_kv_projection");
    }
    if (indexerTileRows < 0) {
      getOperation().emitError() << "ds-fuse-kernels: indexer-tile-rows is "
                                 << static_cast<int64_t>(indexerTileRows)
                                 << ", expected >= 0 (0: untiled)";
      return signalPassFailure();
    }
    getOperation().walk([&](LayerOp layer) {
      LayerFuser(layer.getBody().front(), enabled, indexerTileRows).run();
    });
  }
};

} // namespace
