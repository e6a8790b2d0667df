//===- LayerEmitter.cpp - One ds.layer per reference block ----------------===//
//
// Block order (reference-spec §8.3): Engram (§7.5) before the block, the
// DSpark capture after Engram (§5.6), attention with mHC around it, then MoE
// with mHC around it; the block hands its FFN pre mix to the next block.
// Attention (§9): Q chain, window KV, compressor + index keys (Full layers),
// index queries + scores + top-k (index sources), candidates (candidate
// source), sparse attention, inverse RoPE, grouped output projection.
//===----------------------------------------------------------------------===//
#include "models/builder/LayerEmitter.h"

#include "mlir/IR/BuiltinOps.h"

#include <cmath>

using namespace mlir;
using namespace dsc;
using namespace dsc::models;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;
int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }
} // namespace

ModelEmitter::ModelEmitter(const ModelSpec &spec, ModuleOp module)
    : spec_(spec), module_(module), builder_(module.getContext()),
      loc_(builder_.getUnknownLoc()) {}

Type ModelEmitter::fp8() { return Float8E4M3FNType::get(builder_.getContext()); }
Type ModelEmitter::ue8m0() { return Float8E8M0FNUType::get(builder_.getContext()); }

std::string ModelEmitter::prefixOf(const LayerSpec &layer) const {
  if (layer.role == LayerRole::DSpark)
    return "mtp." + std::to_string(layer.id - spec_.nLayers);
  return "layers." + std::to_string(layer.id);
}

Value ModelEmitter::weight(StringRef name, ArrayRef<int64_t> shape, Type element,
                           ds::ParameterKind kind) {
  auto type = tensor(shape, element);
  if (!parameters_.count(name)) {
    // Parameters are declared at the top of the module, in first-use order.
    OpBuilder::InsertionGuard guard(builder_);
    if (lastParameter_)
      builder_.setInsertionPointAfter(lastParameter_);
    else
      builder_.setInsertionPointToStart(module_.getBody());
    lastParameter_ = ds::ParameterOp::create(
        builder_, loc_, builder_.getStringAttr(name), ds::ParameterKindAttr::get(builder_.getContext(), kind),
        TypeAttr::get(type));
    parameters_[name] = lastParameter_;
  }
  return ds::WeightOp::create(builder_, loc_, type,
                              FlatSymbolRefAttr::get(builder_.getContext(), name));
}

Value ModelEmitter::linearFp8(Value x, StringRef prefix, int64_t n, int64_t k,
                              ArrayRef<int64_t> resultShape) {
  Value w = weight((prefix + ".weight").str(), {n, k}, fp8());
  Value s = weight((prefix + ".scale").str(), {ceilDiv(n, 32), ceilDiv(k, 32)}, ue8m0(),
                   ds::ParameterKind::scale);
  return ds::LinearOp::create(builder_, loc_, tensor(resultShape, bf16()), x, w, s,
                              ds::LinearQuant::fp8);
}

Value ModelEmitter::linearPlain(Value x, StringRef name, int64_t n, int64_t k,
                                ArrayRef<int64_t> resultShape, ds::LinearQuant quant) {
  Value w = weight(name, {n, k}, bf16());
  Type out = quant == ds::LinearQuant::fp32 ? f32() : bf16();
  return ds::LinearOp::create(builder_, loc_, tensor(resultShape, out), x, w, Value(), quant);
}

Value ModelEmitter::rmsNorm(Value x, StringRef name, int64_t width) {
  Value w = weight(name, {width}, bf16());
  return ds::RmsNormOp::create(builder_, loc_, x.getType(), x, w,
                               builder_.getF64FloatAttr(spec_.normEps));
}

ds::RopeAttr ModelEmitter::ropeFor(int64_t ratio) {
  MLIRContext *ctx = builder_.getContext();
  if (ratio == 0 || spec_.originalSeqLen == 0)
    return ds::RopeAttr::get(ctx, spec_.ropeHeadDim,
                             builder_.getF64FloatAttr(ratio == 0 ? spec_.ropeTheta
                                                                 : spec_.compressRopeTheta),
                             0, FloatAttr(), FloatAttr(), FloatAttr());
  return ds::RopeAttr::get(ctx, spec_.ropeHeadDim, builder_.getF64FloatAttr(spec_.compressRopeTheta),
                           spec_.originalSeqLen, builder_.getF64FloatAttr(spec_.ropeFactor),
                           builder_.getF64FloatAttr(spec_.betaFast),
                           builder_.getF64FloatAttr(spec_.betaSlow));
}

std::tuple<Value, Value, Value> ModelEmitter::hcMixes(Value stream, StringRef prefix,
                                                      StringRef which, int64_t tokens) {
  int64_t hc = spec_.hcMult, mixes = (2 + hc) * hc;
  std::string base = (prefix + ".hc_" + which).str();
  Value fn = weight(base + "_fn", {mixes, hc * spec_.dim}, f32());
  Value scale = weight(base + "_scale", {3}, f32());
  Value bias = weight(base + "_base", {mixes}, f32());
  auto op = ds::HcMixesOp::create(
      builder_, loc_, tensor({tokens, hc}, f32()), tensor({tokens, hc}, f32()),
      tensor({tokens, hc, hc}, f32()), stream, fn, scale, bias,
      builder_.getI64IntegerAttr(spec_.hcSinkhornIters), builder_.getF64FloatAttr(spec_.hcEps),
      builder_.getF64FloatAttr(spec_.normEps));
  return {op.getPre(), op.getPost(), op.getComb()};
}

std::pair<Value, Value> ModelEmitter::queries(Value x, StringRef prefix, int64_t tokens,
                                              ds::RopeAttr rope) {
  int64_t d = spec_.dim, r = spec_.qLoraRank, h = spec_.nHeads, hd = spec_.headDim;
  Value qr = linearFp8(x, (prefix + ".attn.wq_a").str(), r, d, {tokens, r});
  qr = rmsNorm(qr, (prefix + ".attn.q_norm.weight").str(), r);
  Value q = linearFp8(qr, (prefix + ".attn.wq_b").str(), h * hd, r, {tokens, h, hd});
  q = ds::RopeOp::create(builder_, loc_, q.getType(), q, rope);
  return {qr, q};
}

Value ModelEmitter::windowKv(Value x, StringRef prefix, int64_t tokens, ds::RopeAttr rope) {
  int64_t hd = spec_.headDim;
  Value kv = linearFp8(x, (prefix + ".attn.wkv").str(), hd, spec_.dim, {tokens, hd});
  kv = rmsNorm(kv, (prefix + ".attn.kv_norm.weight").str(), hd);
  return ds::RopeOp::create(builder_, loc_, kv.getType(), kv, rope);
}

Value ModelEmitter::outputProjection(Value o, StringRef prefix, int64_t tokens,
                                     ds::RopeAttr rope) {
  int64_t g = spec_.oGroups, lr = spec_.oLoraRank;
  int64_t perGroup = spec_.nHeads * spec_.headDim / g;
  o = ds::RopeOp::create(builder_, loc_, o.getType(), o, rope, builder_.getI64IntegerAttr(1),
                         builder_.getUnitAttr());
  // wo_a is bf16 as the reference's converter leaves it (spec §4).
  Value woA = weight((prefix + ".attn.wo_a.weight").str(), {g * lr, perGroup}, bf16());
  Value woB = weight((prefix + ".attn.wo_b.weight").str(), {spec_.dim, g * lr}, fp8());
  Value woBs = weight((prefix + ".attn.wo_b.scale").str(),
                      {ceilDiv(spec_.dim, 32), ceilDiv(g * lr, 32)}, ue8m0(),
                      ds::ParameterKind::scale);
  return ds::GroupedOutputOp::create(builder_, loc_, tensor({tokens, spec_.dim}, bf16()), o, woA,
                                     woB, woBs, builder_.getI64IntegerAttr(g));
}

Value ModelEmitter::moe(Value x, StringRef prefix, int64_t tokens, int64_t experts,
                        int64_t activated) {
  int64_t d = spec_.dim, inter = spec_.moeInterDim;
  std::string ffn = (prefix + ".ffn").str();
  Value gateW = weight(ffn + ".gate.weight", {experts, d}, bf16());
  Value gateB = weight(ffn + ".gate.bias", {experts}, f32());
  auto gate = ds::MoeGateOp::create(
      builder_, loc_, tensor({tokens, activated}, f32()), tensor({tokens, activated}, i32()), x,
      gateW, gateB, builder_.getI64IntegerAttr(activated),
      builder_.getF64FloatAttr(spec_.routeScale), builder_.getF64FloatAttr(spec_.gateTemp),
      builder_.getBoolAttr(spec_.normTopkProb));
  auto routed = [&](StringRef w, int64_t n, int64_t k) {
    std::string name = ffn + ".experts.{e}." + w.str();
    Value weightValue = weight(name + ".weight", {experts, n, k / 2}, i8(),
                               ds::ParameterKind::fp4_packed);
    Value scale = weight(name + ".scale", {experts, n, k / 32}, ue8m0(), ds::ParameterKind::scale);
    return std::pair{weightValue, scale};
  };
  auto [w1, w1s] = routed("w1", inter, d);
  auto [w3, w3s] = routed("w3", inter, d);
  auto [w2, w2s] = routed("w2", d, inter);
  auto shared = [&](StringRef w, int64_t n, int64_t k) {
    std::string name = ffn + ".shared_experts." + w.str();
    Value weightValue = weight(name + ".weight", {n, k}, fp8());
    Value scale = weight(name + ".scale", {ceilDiv(n, 32), ceilDiv(k, 32)}, ue8m0(),
                         ds::ParameterKind::scale);
    return std::pair{weightValue, scale};
  };
  int64_t sharedInter = inter * spec_.nSharedExperts;
  auto [s1, s1s] = shared("w1", sharedInter, d);
  auto [s3, s3s] = shared("w3", sharedInter, d);
  auto [s2, s2s] = shared("w2", d, sharedInter);
  return ds::MoeExpertsOp::create(builder_, loc_, tensor({tokens, d}, bf16()), x,
                                  gate.getRouteWeights(), gate.getExpertIds(), w1, w1s, w3, w3s,
                                  w2, w2s, s1, s1s, s3, s3s, s2, s2s,
                                  builder_.getF64FloatAttr(spec_.swigluLimit));
}

StreamState ModelEmitter::ffnSubBlock(const LayerSpec &layer, Value h, Value attnPre,
                                      int64_t tokens) {
  // spec §8.3 steps 5-9: mixes on the post-attention stream, collapse with the
  // attention's pre mix, norm, MoE, expand; the FFN pre mix goes to the next block.
  const std::string prefix = prefixOf(layer);
  const int64_t d = spec_.dim;
  auto [fPre, fPost, fComb] = hcMixes(h, prefix, "ffn", tokens);
  Value x = ds::HcPreOp::create(builder_, loc_, tensor({tokens, d}, bf16()), h, attnPre);
  x = rmsNorm(x, prefix + ".ffn_norm.weight", d);
  Value ffnOut = moe(x, prefix, tokens, layer.nRoutedExperts, layer.nActivatedExperts);
  Value out = ds::HcPostOp::create(builder_, loc_, h.getType(), ffnOut, h, fPost, fComb);
  return {out, fPre};
}

StreamState ModelEmitter::emitLayer(const LayerSpec &layer, int64_t tokens, StreamState in,
                                    Value engramHashes, SharedValues &shared,
                                    std::vector<Value> &captures) {
  MLIRContext *ctx = builder_.getContext();
  const std::string prefix = prefixOf(layer);
  const int64_t d = spec_.dim, hc = spec_.hcMult, hd = spec_.headDim;
  const int64_t ratio = layer.compressRatio;

  ds::LayerMode mode = ds::LayerMode::swa;
  switch (layer.role) {
  case LayerRole::SwaOnly: mode = ds::LayerMode::swa; break;
  case LayerRole::Full: mode = ds::LayerMode::full; break;
  case LayerRole::Reindex: mode = ds::LayerMode::reindex; break;
  case LayerRole::Reuse: mode = ds::LayerMode::reuse; break;
  case LayerRole::DSpark: mode = ds::LayerMode::dspark; break;
  }
  auto csa2 = ds::CSA2Attr::get(ctx, mode, ratio, layer.kvSource.value_or(-1),
                                layer.indexSource.value_or(-1));

  auto streamType = tensor({tokens, hc, d}, bf16());
  auto mixType = tensor({tokens, hc}, f32());
  auto kvType = ds::KvCacheType::get(ctx, std::max<int64_t>(ratio, 1), hd);
  auto keysType = ds::IndexKeysType::get(ctx, std::max<int64_t>(ratio, 1), spec_.indexHeadDim);
  auto topkType = ds::TopKType::get(ctx, std::max<int64_t>(ratio, 1), spec_.indexTopk);
  auto candidatesType = ds::CandidatesType::get(ctx, std::max<int64_t>(ratio, 1),
                                                spec_.candidateTopkBlocks, spec_.candidateBlockSize);
  auto captureType = tensor({tokens, d}, bf16());

  SmallVector<Type> resultTypes{streamType, mixType};
  if (layer.role == LayerRole::Full)
    resultTypes.append({kvType, keysType});
  if (layer.ownsIndexQueries())
    resultTypes.push_back(topkType);
  if (layer.candidateSource)
    resultTypes.push_back(candidatesType);
  if (layer.dsparkTarget)
    resultTypes.push_back(captureType);

  auto op = ds::LayerOp::create(builder_, loc_, resultTypes, builder_.getI64IntegerAttr(layer.id),
                                csa2, layer.encoder ? UnitAttr() : builder_.getUnitAttr(),
                                layer.engram ? builder_.getUnitAttr() : UnitAttr(),
                                layer.dsparkTarget ? builder_.getUnitAttr() : UnitAttr());
  OpBuilder::InsertionGuard guard(builder_);
  builder_.createBlock(&op.getBody());

  Value h = in.stream;
  // Engram before the block (spec §7.5).
  if (layer.engram) {
    const std::string e = prefix + ".engram";
    int64_t cols = (spec_.engramMaxNgramSize - 1) * spec_.engramNHeads;
    int64_t rows = spec_.engram[layer.engramIndex].tableRows;
    int64_t ehd = spec_.engramHeadDim;
    Value table = weight(e + ".embed.weight", {rows, ehd}, fp8());
    Value tableScale = weight(e + ".embed.scale", {rows, ceilDiv(ehd, 32)}, ue8m0(),
                              ds::ParameterKind::scale);
    Value gathered = ds::EngramLookupOp::create(builder_, loc_, tensor({tokens, cols * ehd}, bf16()),
                                                engramHashes, table, tableScale,
                                                builder_.getI64IntegerAttr(layer.engramIndex));
    Value kv = linearFp8(gathered, e + ".wkv", (hc + 1) * d, cols * ehd, {tokens, (hc + 1) * d});
    Value q = weight(e + ".q_weight", {hc, d}, bf16());
    Value k = weight(e + ".k_weight", {hc, d}, bf16());
    h = ds::EngramGateOp::create(builder_, loc_, streamType, h, kv, q, k,
                                 builder_.getF64FloatAttr(spec_.normEps));
  }
  Value capture;
  if (layer.dsparkTarget)
    capture = ds::CopyMeanOp::create(builder_, loc_, captureType, h);

  // Attention sub-block.
  Value residual = h;
  auto [aPre, aPost, aComb] = hcMixes(h, prefix, "attn", tokens);
  Value x = ds::HcPreOp::create(builder_, loc_, tensor({tokens, d}, bf16()), h, in.mix);
  x = rmsNorm(x, prefix + ".attn_norm.weight", d);

  ds::RopeAttr rope = ropeFor(ratio);
  auto [qr, q] = queries(x, prefix, tokens, rope);
  Value kv = windowKv(x, prefix, tokens, rope);
  Value window = ds::WindowKvOp::create(builder_, loc_, ds::WindowType::get(ctx, spec_.windowSize, hd),
                                        kv, Value());

  Value kvCache, indexKeys, topk, candidates;
  const std::string attn = prefix + ".attn";
  if (layer.role == LayerRole::Full) {
    Value wkv = weight(attn + ".compressor.wkv.weight", {hd, d}, bf16());
    Value wgate = ratio > 1 ? weight(attn + ".compressor.wgate.weight", {hd, d}, bf16()) : Value();
    Value norm = weight(attn + ".compressor.norm.weight", {hd}, bf16());
    Value latent = ds::CompressorOp::create(builder_, loc_, tensor({kDyn, hd}, bf16()), x, wkv, wgate,
                                            norm, builder_.getI64IntegerAttr(ratio),
                                            builder_.getF64FloatAttr(spec_.normEps));
    kvCache = ds::CompressKvOp::create(builder_, loc_, kvType, latent, rope);
    Value wk = weight(attn + ".indexer.wk.weight", {spec_.indexHeadDim, hd}, bf16());
    Value kNorm = weight(attn + ".indexer.k_norm.weight", {spec_.indexHeadDim}, bf16());
    indexKeys = ds::IndexKeysOp::create(builder_, loc_, keysType, latent, wk, kNorm, rope,
                                        builder_.getF64FloatAttr(spec_.normEps));
  }
  if (layer.ownsIndexQueries()) {
    int64_t ih = spec_.indexNHeads, ihd = spec_.indexHeadDim;
    Value wqb = weight(attn + ".indexer.wq_b.weight", {ih * ihd, spec_.qLoraRank}, fp8());
    Value wqbs = weight(attn + ".indexer.wq_b.scale",
                        {ceilDiv(ih * ihd, 32), ceilDiv(spec_.qLoraRank, 32)}, ue8m0(),
                        ds::ParameterKind::scale);
    Value iq = ds::IndexQueriesOp::create(builder_, loc_, tensor({tokens, ih, ihd}, bf16()), qr,
                                          wqb, wqbs, rope);
    Value headWeights = linearPlain(x, attn + ".indexer.weights_proj.weight", ih, d, {tokens, ih},
                                    ds::LinearQuant::bf16);
    Value keys = layer.role == LayerRole::Full ? indexKeys : shared.indexKeys.at(*layer.kvSource);
    double weightScale = 1.0 / std::sqrt(double(ihd)) / std::sqrt(double(ih));
    Value scores = ds::IndexerScoreOp::create(builder_, loc_, tensor({tokens, kDyn}, bf16()), iq,
                                              headWeights, keys,
                                              builder_.getF64FloatAttr(weightScale));
    if (layer.candidateSource)
      candidates = ds::CandidateBlocksOp::create(builder_, loc_, candidatesType, scores);
    Value pool = layer.usesCandidates ? shared.candidates.at(spec_.candidateSourceLayer) : Value();
    topk = ds::IndexerTopKOp::create(builder_, loc_, topkType, scores, pool);
  }

  Value sink = weight(attn + ".attn_sink", {spec_.nHeads}, f32());
  Value attnKv, attnTopk;
  if (ratio > 0) {
    attnKv = layer.role == LayerRole::Full ? kvCache : shared.kvCache.at(*layer.kvSource);
    attnTopk = layer.ownsIndexQueries() ? topk : shared.topk.at(*layer.indexSource);
  }
  Value o = ds::SparseAttentionOp::create(builder_, loc_, q.getType(), q, window, attnKv, attnTopk,
                                          sink, builder_.getF64FloatAttr(1.0 / std::sqrt(double(hd))));
  Value attnOut = outputProjection(o, prefix, tokens, rope);
  h = ds::HcPostOp::create(builder_, loc_, streamType, attnOut, residual, aPost, aComb);
  StreamState out = ffnSubBlock(layer, h, aPre, tokens);

  SmallVector<Value> yields{out.stream, out.mix};
  if (layer.role == LayerRole::Full)
    yields.append({kvCache, indexKeys});
  if (layer.ownsIndexQueries())
    yields.push_back(topk);
  if (layer.candidateSource)
    yields.push_back(candidates);
  if (capture)
    yields.push_back(capture);
  ds::YieldOp::create(builder_, loc_, yields);

  // Publish.
  unsigned next = 2;
  if (layer.role == LayerRole::Full) {
    shared.kvCache[layer.id] = op.getResult(next++);
    shared.indexKeys[layer.id] = op.getResult(next++);
  }
  if (layer.ownsIndexQueries())
    shared.topk[layer.id] = op.getResult(next++);
  if (layer.candidateSource)
    shared.candidates[layer.id] = op.getResult(next++);
  if (layer.dsparkTarget)
    captures.push_back(op.getResult(next++));
  return {op.getResult(0), op.getResult(1)};
}

void ModelEmitter::emitDSparkSeed(const LayerSpec &layer, Value mainX, int64_t tokens) {
  MLIRContext *ctx = builder_.getContext();
  auto csa2 = ds::CSA2Attr::get(ctx, ds::LayerMode::dspark, 0, -1, -1);
  auto op = ds::LayerOp::create(builder_, loc_, TypeRange{}, builder_.getI64IntegerAttr(layer.id),
                                csa2, UnitAttr(), UnitAttr(), UnitAttr());
  OpBuilder::InsertionGuard guard(builder_);
  builder_.createBlock(&op.getBody());
  // Prefill stages only seed their rings from main_x (spec §11.2).
  Value kv = windowKv(mainX, prefixOf(layer), tokens, ropeFor(0));
  ds::WindowKvOp::create(builder_, loc_, ds::WindowType::get(ctx, spec_.windowSize, spec_.headDim),
                         kv, Value());
  ds::YieldOp::create(builder_, loc_, ValueRange{});
}

StreamState ModelEmitter::emitDSparkStage(const LayerSpec &layer, StreamState in, Value mainX,
                                          int64_t draftTokens) {
  MLIRContext *ctx = builder_.getContext();
  const std::string prefix = prefixOf(layer);
  const int64_t d = spec_.dim, hc = spec_.hcMult, hd = spec_.headDim;
  auto streamType = tensor({draftTokens, hc, d}, bf16());
  auto mixType = tensor({draftTokens, hc}, f32());
  auto csa2 = ds::CSA2Attr::get(ctx, ds::LayerMode::dspark, 0, -1, -1);
  auto op = ds::LayerOp::create(builder_, loc_, TypeRange{streamType, mixType},
                                builder_.getI64IntegerAttr(layer.id), csa2, UnitAttr(), UnitAttr(),
                                UnitAttr());
  OpBuilder::InsertionGuard guard(builder_);
  builder_.createBlock(&op.getBody());

  Value h = in.stream, residual = h;
  auto [aPre, aPost, aComb] = hcMixes(h, prefix, "attn", draftTokens);
  Value x = ds::HcPreOp::create(builder_, loc_, tensor({draftTokens, d}, bf16()), h, in.mix);
  x = rmsNorm(x, prefix + ".attn_norm.weight", d);
  ds::RopeAttr rope = ropeFor(0);
  auto [qr, q] = queries(x, prefix, draftTokens, rope);
  // Main KV at position p goes into the ring; the drafts (p+1..p+5) follow it
  // unstored, visible to every draft (spec §11.3).
  Value mainKv = windowKv(mainX, prefix, 1, rope);
  Value draftKv = windowKv(x, prefix, draftTokens, rope);
  Value window = ds::WindowKvOp::create(builder_, loc_, ds::WindowType::get(ctx, spec_.windowSize, hd),
                                        mainKv, draftKv);
  Value sink = weight(prefix + ".attn.attn_sink", {spec_.nHeads}, f32());
  Value o = ds::SparseAttentionOp::create(builder_, loc_, q.getType(), q, window, Value(), Value(),
                                          sink, builder_.getF64FloatAttr(1.0 / std::sqrt(double(hd))));
  Value attnOut = outputProjection(o, prefix, draftTokens, rope);
  h = ds::HcPostOp::create(builder_, loc_, streamType, attnOut, residual, aPost, aComb);
  StreamState out = ffnSubBlock(layer, h, aPre, draftTokens);
  ds::YieldOp::create(builder_, loc_, ValueRange{out.stream, out.mix});
  return {op.getResult(0), op.getResult(1)};
}
