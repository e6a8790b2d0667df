//===- DeepSeekOps.cpp - Local verifiers of ds ops ------------------------===//
//
// Each verifier checks what one op can see: ranks, matching sizes, element
// types of quantised weights and their scale shapes. Cross-layer schedule
// checks live in LayerVerifier.cpp.
//===----------------------------------------------------------------------===//
#include "dialects/DeepSeek/IR/DeepSeekDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;
using namespace dsc::ds;

#define GET_OP_CLASSES
#include "dialects/DeepSeek/IR/DeepSeekOps.cpp.inc"

namespace {

RankedTensorType tensorOf(Value v) {
  return llvm::dyn_cast<RankedTensorType>(v.getType());
}

bool sameDim(int64_t a, int64_t b) {
  return ShapedType::isDynamic(a) || ShapedType::isDynamic(b) || a == b;
}

/// Emits "<what> must have rank N, got M" unless `v` has rank `rank`.
LogicalResult expectRank(Operation *op, Value v, int64_t rank, StringRef what) {
  auto t = tensorOf(v);
  if (t && t.getRank() == rank)
    return success();
  return op->emitOpError() << what << " must be a rank-" << rank
                           << " tensor, got " << v.getType();
}

LogicalResult expectDim(Operation *op, int64_t got, int64_t expected,
                        StringRef what) {
  if (sameDim(got, expected))
    return success();
  return op->emitOpError() << what << " is " << got << ", expected " << expected;
}

int64_t lastDim(Value v) { return tensorOf(v).getShape().back(); }

bool hasElement(Value v, bool (Type::*pred)() const) {
  return (getElementTypeOrSelf(v.getType()).*pred)();
}

} // namespace

//===----------------------------------------------------------------------===//
// Structure
//===----------------------------------------------------------------------===//

LogicalResult ParameterOp::verify() {
  auto type = llvm::dyn_cast<RankedTensorType>(getType());
  if (!type || !type.hasStaticShape())
    return emitOpError() << "checkpoint tensors have static shapes, got " << getType();
  Type element = type.getElementType();
  switch (getKind()) {
  case ParameterKind::scale:
    if (!llvm::isa<Float8E8M0FNUType>(element))
      return emitOpError() << "scale tensors are f8E8M0FNU, got " << element;
    break;
  case ParameterKind::fp4_packed:
    if (!element.isInteger(8))
      return emitOpError() << "packed FP4 tensors are stored as i8, got " << element;
    break;
  case ParameterKind::weight:
    break;
  }
  return success();
}

int64_t ParameterOp::getParameterCount() {
  auto type = llvm::cast<RankedTensorType>(getType());
  switch (getKind()) {
  case ParameterKind::scale:
    return 0;
  case ParameterKind::fp4_packed:
    return 2 * type.getNumElements();
  case ParameterKind::weight:
    return type.getNumElements();
  }
  return 0;
}

int64_t ParameterOp::getByteSize() {
  auto type = llvm::cast<RankedTensorType>(getType());
  int64_t bits = type.getElementType().getIntOrFloatBitWidth();
  return type.getNumElements() * bits / 8;
}

LogicalResult WeightOp::verifySymbolUses(SymbolTableCollection &symbols) {
  auto param = symbols.lookupNearestSymbolFrom<ParameterOp>(*this, getParameterAttr());
  if (!param)
    return emitOpError() << "refers to " << getParameterAttr()
                         << ", which is not a ds.parameter";
  if (param.getType() != getType())
    return emitOpError() << "type " << getType() << " differs from parameter "
                         << getParameterAttr() << " of type " << param.getType();
  return success();
}

void LayerOp::getAsmResultNames(OpAsmSetValueNameFn setName) {
  std::string id = std::to_string(getId());
  for (Value result : getResults()) {
    Type type = result.getType();
    std::string name;
    if (llvm::isa<KvCacheType>(type))
      name = "kv";
    else if (llvm::isa<IndexKeysType>(type))
      name = "keys";
    else if (llvm::isa<TopKType>(type))
      name = "topk";
    else if (llvm::isa<CandidatesType>(type))
      name = "candidates";
    else if (auto t = llvm::dyn_cast<RankedTensorType>(type))
      name = t.getRank() == 3 ? "h" : t.getElementType().isF32() ? "mix" : "capture";
    else
      name = "r";
    setName(result, name + id);
  }
}

LogicalResult YieldOp::verify() {
  auto layer = (*this)->getParentOfType<LayerOp>();
  if (layer.getNumResults() != getNumOperands())
    return emitOpError() << "yields " << getNumOperands() << " values but layer "
                         << layer.getId() << " has " << layer.getNumResults()
                         << " results";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(getOperandTypes(), layer.getResultTypes())))
    if (std::get<0>(pair) != std::get<1>(pair))
      return emitOpError() << "value " << i << " has type " << std::get<0>(pair)
                           << " but layer result " << i << " is " << std::get<1>(pair);
  return success();
}

static bool isLowerSnakeCase(StringRef name) {
  return !name.empty() && llvm::all_of(name, [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_';
  });
}

LogicalResult FusedOp::verifyRegions() {
  StringRef kernel = getKernel();
  if (!isLowerSnakeCase(kernel))
    return emitOpError() << "kernel name '" << kernel
                         << "' must be lower_snake_case (letters, digits, '_')";
  if (std::optional<StringRef> executable = getExecutable(); executable && !isLowerSnakeCase(*executable))
    return emitOpError() << "executable name '" << *executable
                         << "' must be lower_snake_case (letters, digits, '_')";
  if (getTileRows() < 0)
    return emitOpError() << "tile_rows is " << getTileRows() << ", must not be negative";
  Block &body = getBody().front();
  int64_t ops = 0;
  for (Operation &op : body.without_terminator()) {
    if (llvm::isa<LayerOp, FusedOp, WeightOp>(op))
      return op.emitOpError() << "cannot sit in the fused kernel '" << kernel
                              << "' (weights stay in the layer, groups do not nest)";
    ++ops;
  }
  if (ops < 2)
    return emitOpError() << "fused kernel '" << kernel << "' holds " << ops
                         << " op; a fusion groups at least two";
  auto yield = llvm::cast<FusedYieldOp>(body.getTerminator());
  if (yield.getNumOperands() != getNumResults())
    return yield.emitOpError() << "yields " << yield.getNumOperands()
                               << " values but the fused kernel '" << kernel << "' has "
                               << getNumResults() << " results";
  for (auto [i, pair] : llvm::enumerate(llvm::zip(yield.getOperandTypes(), getResultTypes())))
    if (std::get<0>(pair) != std::get<1>(pair))
      return yield.emitOpError() << "value " << i << " has type " << std::get<0>(pair)
                                 << " but result " << i << " is " << std::get<1>(pair);
  return success();
}

LogicalResult ReplaySliceOp::verify() {
  if (getTokens() < 1)
    return emitOpError() << "replays at least one token, got tokens = " << getTokens();
  if (failed(expectRank(*this, getStream(), 3, "stream")) ||
      failed(expectRank(*this, getMix(), 2, "mix")) ||
      failed(expectRank(*this, getStreamSlice(), 3, "stream slice")) ||
      failed(expectRank(*this, getMixSlice(), 2, "mix slice")))
    return failure();
  auto stream = tensorOf(getStream()), mix = tensorOf(getMix());
  auto streamSlice = tensorOf(getStreamSlice()), mixSlice = tensorOf(getMixSlice());
  if (failed(expectDim(*this, mix.getShape()[0], stream.getShape()[0], "mix rows")) ||
      failed(expectDim(*this, mix.getShape()[1], stream.getShape()[1], "mix width (hc_mult)")))
    return failure();
  for (auto [from, to, what] : {std::tuple{stream, streamSlice, "stream"}, {mix, mixSlice, "mix"}}) {
    if (!ShapedType::isDynamic(to.getShape()[0]))
      return emitOpError() << what << " slice rows must be dynamic (min(tokens, S)), got "
                           << to;
    if (from.getElementType() != to.getElementType() ||
        from.getShape().drop_front() != to.getShape().drop_front())
      return emitOpError() << what << " slice must keep the " << what
                           << "'s element type and trailing dims: " << from << " vs " << to;
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Embedding, head, mHC, norm, linear, RoPE
//===----------------------------------------------------------------------===//

LogicalResult EmbedOp::verify() {
  if (failed(expectRank(*this, getIds(), 1, "ids")) ||
      failed(expectRank(*this, getTable(), 2, "table")) ||
      failed(expectRank(*this, getResult(), 2, "result")))
    return failure();
  if (!hasElement(getIds(), &Type::isSignlessInteger))
    return emitOpError() << "ids must be integers";
  return expectDim(*this, lastDim(getResult()), lastDim(getTable()), "embedding width");
}

LogicalResult HeadOp::verify() {
  if (failed(expectRank(*this, getWeight(), 2, "weight")) ||
      failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getLogits(), 2, "logits")))
    return failure();
  auto w = tensorOf(getWeight()).getShape();
  if (failed(expectDim(*this, lastDim(getInput()), w[1], "input width")))
    return failure();
  if (!hasElement(getLogits(), &Type::isF32))
    return emitOpError() << "logits are f32";
  return expectDim(*this, lastDim(getLogits()), w[0], "vocabulary size");
}

LogicalResult HcExpandOp::verify() {
  if (failed(expectRank(*this, getInput(), 2, "input")) ||
      failed(expectRank(*this, getResult(), 3, "result")))
    return failure();
  return expectDim(*this, tensorOf(getResult()).getShape()[1], getCopies(), "copies");
}

LogicalResult HcMixesOp::verify() {
  if (failed(expectRank(*this, getStream(), 3, "stream")) ||
      failed(expectRank(*this, getFn(), 2, "fn")))
    return failure();
  auto s = tensorOf(getStream()).getShape();
  int64_t copies = s[1];
  int64_t mixes = (2 + copies) * copies;
  auto fn = tensorOf(getFn()).getShape();
  if (failed(expectDim(*this, fn[0], mixes, "fn rows ((2+hc_mult)·hc_mult)")) ||
      failed(expectDim(*this, fn[1], copies * s[2], "fn columns (hc_mult·dim)")) ||
      failed(expectDim(*this, tensorOf(getScale()).getNumElements(), 3, "scale size")) ||
      failed(expectDim(*this, tensorOf(getBase()).getNumElements(), mixes, "base size")))
    return failure();
  if (getSinkhornIters() < 1)
    return emitOpError() << "sinkhorn_iters must be >= 1";
  return success();
}

LogicalResult HcPreOp::verify() {
  if (failed(expectRank(*this, getStream(), 3, "stream")) ||
      failed(expectRank(*this, getPre(), 2, "pre")))
    return failure();
  return expectDim(*this, tensorOf(getPre()).getShape()[1],
                   tensorOf(getStream()).getShape()[1], "pre mix width");
}

LogicalResult HcPostOp::verify() {
  if (failed(expectRank(*this, getResidual(), 3, "residual")) ||
      failed(expectRank(*this, getComb(), 3, "comb")))
    return failure();
  int64_t copies = tensorOf(getResidual()).getShape()[1];
  auto comb = tensorOf(getComb()).getShape();
  if (failed(expectDim(*this, comb[1], copies, "comb rows")) ||
      failed(expectDim(*this, comb[2], copies, "comb columns")))
    return failure();
  return expectDim(*this, lastDim(getInput()), lastDim(getResidual()), "input width");
}

LogicalResult RmsNormOp::verify() {
  if (failed(expectRank(*this, getWeight(), 1, "weight")))
    return failure();
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result type must equal the input type";
  return expectDim(*this, lastDim(getWeight()), lastDim(getInput()), "weight size");
}

LogicalResult LinearOp::verify() {
  if (failed(expectRank(*this, getWeight(), 2, "weight")))
    return failure();
  auto w = tensorOf(getWeight()).getShape();
  int64_t n = w[0], k = w[1];
  switch (getQuant()) {
  case LinearQuant::fp8: {
    if (!llvm::isa<Float8E4M3FNType>(getElementTypeOrSelf(getWeight().getType())))
      return emitOpError() << "fp8 linear needs an f8E4M3FN weight";
    if (!getScale())
      return emitOpError() << "fp8 linear needs a scale operand";
    if (k % 32 != 0)
      return emitOpError() << "fp8 linear needs K divisible by 32, got " << k;
    auto sc = tensorOf(getScale()).getShape();
    if (sc.size() != 2 || sc[0] != (n + 31) / 32 || sc[1] != k / 32)
      return emitOpError() << "fp8 scale must be [" << (n + 31) / 32 << ", "
                           << k / 32 << "] (32x32 blocks), got " << getScale().getType();
    break;
  }
  case LinearQuant::fp4: {
    if (!hasElement(getWeight(), &Type::isSignlessInteger))
      return emitOpError() << "fp4 linear needs an i8-packed weight";
    k *= 2;
    if (!getScale())
      return emitOpError() << "fp4 linear needs a scale operand";
    auto sc = tensorOf(getScale()).getShape();
    if (sc.size() != 2 || sc[0] != n || sc[1] != k / 32)
      return emitOpError() << "fp4 scale must be [" << n << ", " << k / 32
                           << "] (row x 32), got " << getScale().getType();
    break;
  }
  case LinearQuant::bf16:
  case LinearQuant::fp32:
    if (getScale())
      return emitOpError() << "a plain linear takes no scale";
    break;
  }
  if (failed(expectDim(*this, lastDim(getInput()), k, "input width")))
    return failure();
  // A rank-3 result splits N into [heads, head_dim].
  auto out = tensorOf(getResult()).getShape();
  int64_t width = 1;
  for (int64_t d : out.drop_front())
    width = ShapedType::isDynamic(d) || ShapedType::isDynamic(width) ? ShapedType::kDynamic : width * d;
  return expectDim(*this, width, n, "output width");
}

LogicalResult RopeOp::verify() {
  if (getInput().getType() != getResult().getType())
    return emitOpError() << "result type must equal the input type";
  if (getRope().getDim() > lastDim(getInput()))
    return emitOpError() << "rope dim " << getRope().getDim()
                         << " exceeds the channel count " << lastDim(getInput());
  if (getPositionStride() < 1)
    return emitOpError() << "position_stride must be >= 1";
  return success();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

LogicalResult WindowKvOp::verify() {
  if (Value draft = getDraft())
    if (failed(expectDim(*this, lastDim(draft), getWindow().getType().getDim(), "draft width")))
      return failure();
  return expectDim(*this, lastDim(getKv()), getWindow().getType().getDim(), "kv width");
}

LogicalResult ConcatOp::verify() {
  if (getInputs().empty())
    return emitOpError() << "needs at least one input";
  int64_t width = 0;
  for (Value input : getInputs()) {
    if (ShapedType::isDynamic(lastDim(input)))
      return emitOpError() << "inputs need a static last dimension";
    width += lastDim(input);
  }
  return expectDim(*this, lastDim(getResult()), width, "result width");
}

LogicalResult CompressorOp::verify() {
  int64_t ratio = getRatio();
  if (ratio != 1 && ratio != 2)
    return emitOpError() << "compress ratio must be 1 or 2, got " << ratio;
  if (ratio == 2 && !getWgate())
    return emitOpError() << "a ratio-2 compressor needs wgate";
  if (ratio == 1 && getWgate())
    return emitOpError() << "a ratio-1 compressor has no wgate";
  if (failed(expectRank(*this, getWkv(), 2, "wkv")))
    return failure();
  return expectDim(*this, lastDim(getLatent()), tensorOf(getWkv()).getShape()[0],
                   "latent width");
}

LogicalResult CompressKvOp::verify() {
  KvCacheType cache = getCache().getType();
  if (failed(expectDim(*this, lastDim(getLatent()), cache.getDim(), "latent width")))
    return failure();
  if (getRope().getDim() > cache.getDim())
    return emitOpError() << "rope dim exceeds the latent width";
  return success();
}

LogicalResult IndexKeysOp::verify() {
  if (failed(expectRank(*this, getWk(), 2, "wk")))
    return failure();
  auto wk = tensorOf(getWk()).getShape();
  if (failed(expectDim(*this, wk[1], lastDim(getLatent()), "wk columns")))
    return failure();
  return expectDim(*this, getKeys().getType().getDim(), wk[0], "index key width");
}

LogicalResult IndexQueriesOp::verify() {
  if (failed(expectRank(*this, getQueries(), 3, "queries")))
    return failure();
  auto q = tensorOf(getQueries()).getShape();
  if (q[2] % 32 != 0)
    return emitOpError() << "index_head_dim must be a multiple of 32 (FP4 tiles), got " << q[2];
  return expectDim(*this, tensorOf(getWeight()).getShape()[0], q[1] * q[2],
                   "wq_b rows (index heads · index_head_dim)");
}

LogicalResult IndexerScoreOp::verify() {
  if (failed(expectRank(*this, getQueries(), 3, "queries")) ||
      failed(expectRank(*this, getScores(), 2, "scores")))
    return failure();
  auto q = tensorOf(getQueries()).getShape();
  if (failed(expectDim(*this, q[2], getKeys().getType().getDim(), "query width")))
    return failure();
  return expectDim(*this, lastDim(getHeadWeights()), q[1], "head weight count");
}

LogicalResult CandidateBlocksOp::verify() {
  return expectRank(*this, getScores(), 2, "scores");
}

LogicalResult IndexerTopKOp::verify() {
  if (failed(expectRank(*this, getScores(), 2, "scores")))
    return failure();
  if (auto c = getCandidates())
    if (c.getType().getRatio() != getTopk().getType().getRatio())
      return emitOpError() << "candidates of ratio " << c.getType().getRatio()
                           << " cannot restrict a top-k of ratio "
                           << getTopk().getType().getRatio();
  return success();
}

LogicalResult SparseAttentionOp::verify() {
  if (failed(expectRank(*this, getQueries(), 3, "queries")))
    return failure();
  if (bool(getKvCache()) != bool(getTopk()))
    return emitOpError() << "kv_cache and topk come together";
  int64_t width = lastDim(getQueries());
  if (failed(expectDim(*this, getWindow().getType().getDim(), width, "window width")))
    return failure();
  if (auto kv = getKvCache()) {
    if (failed(expectDim(*this, kv.getType().getDim(), width, "kv cache width")))
      return failure();
    if (kv.getType().getRatio() != getTopk().getType().getRatio())
      return emitOpError() << "kv cache of ratio " << kv.getType().getRatio()
                           << " read with a top-k of ratio "
                           << getTopk().getType().getRatio();
  }
  return expectDim(*this, tensorOf(getSink()).getNumElements(),
                   tensorOf(getQueries()).getShape()[1], "sink size (heads)");
}

LogicalResult GroupedOutputOp::verify() {
  if (failed(expectRank(*this, getInput(), 3, "input")))
    return failure();
  int64_t heads = tensorOf(getInput()).getShape()[1];
  if (getGroups() <= 0 || heads % getGroups() != 0)
    return emitOpError() << "groups (" << getGroups() << ") must divide the head count ("
                         << heads << ")";
  return success();
}

//===----------------------------------------------------------------------===//
// MoE, Engram
//===----------------------------------------------------------------------===//

LogicalResult MoeGateOp::verify() {
  if (failed(expectRank(*this, getWeight(), 2, "weight")))
    return failure();
  int64_t experts = tensorOf(getWeight()).getShape()[0];
  if (getTopk() < 1 || getTopk() > experts)
    return emitOpError() << "topk must be in [1, " << experts << "], got " << getTopk();
  return expectDim(*this, lastDim(getExpertIds()), getTopk(), "expert id count");
}

LogicalResult MoeExpertsOp::verify() {
  for (auto [value, what] : {std::pair{getW1(), "w1"}, {getW3(), "w3"}, {getW2(), "w2"}})
    if (failed(expectRank(*this, value, 3, what)))
      return failure();
  auto w1 = tensorOf(getW1()).getShape();
  auto w2 = tensorOf(getW2()).getShape();
  if (failed(expectDim(*this, w1[2] * 2, lastDim(getInput()), "w1 K (packed FP4)")) ||
      failed(expectDim(*this, w2[2] * 2, w1[1], "w2 K (packed FP4)")))
    return failure();
  return expectDim(*this, lastDim(getResult()), w2[1], "output width");
}

LogicalResult EngramHashOp::verify() {
  int64_t layers = getLayers().size();
  int64_t cols = (getMaxNgram() - 1) * getHeads();
  if (getMaxNgram() < 2 || getHeads() < 1)
    return emitOpError() << "needs max_ngram >= 2 and heads >= 1";
  if ((int64_t)getMultipliers().size() != layers * getMaxNgram())
    return emitOpError() << "needs " << layers * getMaxNgram() << " multipliers, got "
                         << getMultipliers().size();
  if ((int64_t)getPrimes().size() != layers * cols ||
      (int64_t)getOffsets().size() != layers * cols)
    return emitOpError() << "needs " << layers * cols << " primes and offsets";
  for (int64_t m : getMultipliers())
    if (m % 2 == 0)
      return emitOpError() << "hash multipliers are odd, got " << m;
  if (failed(expectRank(*this, getHashes(), 3, "hashes")))
    return failure();
  auto shape = tensorOf(getHashes()).getShape();
  if (failed(expectDim(*this, shape[1], layers, "hash layers")))
    return failure();
  return expectDim(*this, shape[2], cols, "hash columns");
}

LogicalResult EngramLookupOp::verify() {
  if (failed(expectRank(*this, getHashes(), 3, "hashes")))
    return failure();
  int64_t layers = tensorOf(getHashes()).getShape()[1];
  if (getSlot() < 0 || (!ShapedType::isDynamic(layers) && getSlot() >= layers))
    return emitOpError() << "slot " << getSlot() << " is outside the " << layers
                         << " hashed Engram layers";
  return expectRank(*this, getTable(), 2, "table");
}

LogicalResult EngramGateOp::verify() {
  if (failed(expectRank(*this, getStream(), 3, "stream")))
    return failure();
  if (getStream().getType() != getResult().getType())
    return emitOpError() << "result type must equal the stream type";
  int64_t dim = lastDim(getStream());
  int64_t copies = tensorOf(getStream()).getShape()[1];
  return expectDim(*this, lastDim(getKv()), (copies + 1) * dim,
                   "kv width ((hc_mult+1)·dim: keys, then the shared value)");
}
