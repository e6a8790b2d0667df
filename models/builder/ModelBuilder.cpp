//===- ModelBuilder.cpp - ModelSpec -> ds module --------------------------===//
//
// Builds the phase functions from the reference's top-level forward
// (reference-spec §5) and DSpark's forward_spec (§11). Layers are emitted by
// LayerEmitter.cpp; this file wires embedding, Engram hashing, the layer
// chain, the final collapse and the heads.
//===----------------------------------------------------------------------===//
#include "models/builder/ModelBuilder.h"
#include "models/builder/LayerEmitter.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Verifier.h"

using namespace mlir;
using namespace dsc;
using namespace dsc::models;

namespace {
constexpr int64_t kDyn = ShapedType::kDynamic;

/// Engram hash op over the phase's token ids (spec §7.4).
Value emitEngramHash(ModelEmitter &m, Value ids, int64_t tokens) {
  const ModelSpec &spec = m.spec();
  OpBuilder &b = m.builder();
  SmallVector<int64_t> multipliers, primes, offsets;
  for (const EngramLayerLayout &layout : spec.engram) {
    multipliers.append(layout.multipliers.begin(), layout.multipliers.end());
    for (const auto &perNgram : layout.primes)
      primes.append(perNgram.begin(), perNgram.end());
    offsets.append(layout.offsets.begin(), layout.offsets.end());
  }
  int64_t cols = (spec.engramMaxNgramSize - 1) * spec.engramNHeads;
  return ds::EngramHashOp::create(
      b, m.loc(), m.tensor({tokens, int64_t(spec.engram.size()), cols}, m.i64()), ids,
      b.getDenseI64ArrayAttr(spec.engramLayerIds), b.getI64IntegerAttr(spec.engramMaxNgramSize),
      b.getI64IntegerAttr(spec.engramNHeads), b.getI64IntegerAttr(spec.engramPadId),
      b.getI64IntegerAttr(spec.engramCompressedVocabSize), b.getDenseI64ArrayAttr(multipliers),
      b.getDenseI64ArrayAttr(primes), b.getDenseI64ArrayAttr(offsets));
}

/// Final collapse, norm and head (spec §5.7–5.8).
Value emitHead(ModelEmitter &m, StreamState s, int64_t tokens, StringRef normName,
               bool lastOnly) {
  const ModelSpec &spec = m.spec();
  OpBuilder &b = m.builder();
  Value x = ds::HcPreOp::create(b, m.loc(), m.tensor({tokens, spec.dim}, m.bf16()), s.stream, s.mix);
  x = m.rmsNorm(x, normName, spec.dim);
  Value head = m.weight("head.weight", {spec.vocabSize, spec.dim}, m.bf16());
  int64_t rows = lastOnly ? 1 : tokens;
  return ds::HeadOp::create(b, m.loc(), m.tensor({rows, spec.vocabSize}, m.f32()), x, head,
                            lastOnly ? b.getUnitAttr() : UnitAttr());
}

/// @prefill / @decode: the backbone on `tokens` tokens.
void buildBackbone(ModelEmitter &m, ModuleOp module, StringRef name, int64_t tokens,
                   bool allLogits) {
  const ModelSpec &spec = m.spec();
  OpBuilder &b = m.builder();
  int64_t d = spec.dim;
  int64_t captureWidth = d * int64_t(spec.dsparkTargetLayerIds.size());
  bool prefill = ShapedType::isDynamic(tokens);

  SmallVector<Type> results{m.tensor({allLogits ? tokens : 1, spec.vocabSize}, m.f32())};
  if (captureWidth > 0)
    results.push_back(m.tensor({tokens, captureWidth}, m.bf16()));
  auto fnType = b.getFunctionType({m.tensor({tokens}, m.i32())}, results);
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, m.loc(), name, fnType);
  fn->setAttr("ds.phase", b.getStringAttr(prefill ? "prefill" : "decode"));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value ids = entry->getArgument(0);

  Value hashes = spec.hasEngram() ? emitEngramHash(m, ids, tokens) : Value();
  Value table = m.weight("embed.weight", {spec.vocabSize, d}, m.bf16());
  Value emb = ds::EmbedOp::create(b, m.loc(), m.tensor({tokens, d}, m.bf16()), ids, table);
  StreamState s;
  s.stream = ds::HcExpandOp::create(b, m.loc(), m.tensor({tokens, spec.hcMult, d}, m.bf16()), emb,
                                    b.getI64IntegerAttr(spec.hcMult));
  s.mix = ds::HcIdentityMixOp::create(b, m.loc(), m.tensor({tokens, spec.hcMult}, m.f32()), s.stream);

  SharedValues shared;
  std::vector<Value> captures;
  for (const LayerSpec &layer : spec.layers)
    if (layer.role != LayerRole::DSpark)
      s = m.emitLayer(layer, tokens, s, hashes, shared, captures);

  SmallVector<Value> returns{emitHead(m, s, tokens, "norm.weight", /*lastOnly=*/!allLogits)};
  if (captureWidth > 0)
    returns.push_back(ds::ConcatOp::create(b, m.loc(), m.tensor({tokens, captureWidth}, m.bf16()),
                                           captures));
  func::ReturnOp::create(b, m.loc(), returns);
}

/// main_x = main_norm(main_proj(main_hidden)) of DSpark stage 0 (spec §11.1).
Value emitMainX(ModelEmitter &m, Value mainHidden, int64_t tokens, int64_t width) {
  const ModelSpec &spec = m.spec();
  Value x = m.linearFp8(mainHidden, "mtp.0.main_proj", spec.dim, width, {tokens, spec.dim});
  return m.rmsNorm(x, "mtp.0.main_norm.weight", spec.dim);
}

/// @dspark_prefill: seed every stage's ring from the prompt (spec §11.2).
void buildDSparkPrefill(ModelEmitter &m, ModuleOp module) {
  const ModelSpec &spec = m.spec();
  OpBuilder &b = m.builder();
  int64_t width = spec.dim * int64_t(spec.dsparkTargetLayerIds.size());
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(b, m.loc(), "dspark_prefill",
                                 b.getFunctionType({m.tensor({kDyn, width}, m.bf16())}, {}));
  fn->setAttr("ds.phase", b.getStringAttr("dspark_prefill"));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value mainX = emitMainX(m, entry->getArgument(0), kDyn, width);
  for (const LayerSpec &layer : spec.layers)
    if (layer.role == LayerRole::DSpark)
      m.emitDSparkSeed(layer, mainX, kDyn);
  func::ReturnOp::create(b, m.loc(), ValueRange{});
}

/// @dspark_draft: one drafting step after a decode step (spec §11.3–11.4).
void buildDSparkDraft(ModelEmitter &m, ModuleOp module) {
  const ModelSpec &spec = m.spec();
  OpBuilder &b = m.builder();
  int64_t width = spec.dim * int64_t(spec.dsparkTargetLayerIds.size());
  int64_t n = spec.dsparkBlockSize, v = spec.vocabSize, d = spec.dim;
  b.setInsertionPointToEnd(module.getBody());
  auto fn = func::FuncOp::create(
      b, m.loc(), "dspark_draft",
      b.getFunctionType({m.tensor({1}, m.i32()), m.tensor({1, width}, m.bf16())},
                        {m.tensor({n + 1}, m.i32()), m.tensor({n, v}, m.f32()), m.tensor({n}, m.f32())}));
  fn->setAttr("ds.phase", b.getStringAttr("dspark_draft"));
  Block *entry = fn.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value anchor = entry->getArgument(0);
  Value mainX = emitMainX(m, entry->getArgument(1), 1, width);
  Value table = m.weight("embed.weight", {v, d}, m.bf16());
  Value draft = ds::DSparkDraftOp::create(b, m.loc(), m.tensor({n, d}, m.bf16()), anchor, table,
                                          b.getI64IntegerAttr(n),
                                          b.getI64IntegerAttr(spec.dsparkNoiseTokenId));
  StreamState s;
  s.stream = ds::HcExpandOp::create(b, m.loc(), m.tensor({n, spec.hcMult, d}, m.bf16()), draft,
                                    b.getI64IntegerAttr(spec.hcMult));
  s.mix = ds::HcIdentityMixOp::create(b, m.loc(), m.tensor({n, spec.hcMult}, m.f32()), s.stream);
  std::string last;
  for (const LayerSpec &layer : spec.layers)
    if (layer.role == LayerRole::DSpark) {
      s = m.emitDSparkStage(layer, s, mainX, n);
      last = m.prefixOf(layer);
    }
  // Head on every draft position; the confidence head reads the un-normed xc.
  Value xc = ds::HcPreOp::create(b, m.loc(), m.tensor({n, d}, m.bf16()), s.stream, s.mix);
  Value normed = m.rmsNorm(xc, last + ".norm.weight", d);
  Value head = m.weight("head.weight", {v, d}, m.bf16());
  Value logits = ds::HeadOp::create(b, m.loc(), m.tensor({n, v}, m.f32()), normed, head, UnitAttr());
  int64_t rank = spec.dsparkMarkovRank;
  Value markovEmbed = m.weight(last + ".markov_head.embed.weight", {v, rank}, m.bf16());
  Value markovHead = m.weight(last + ".markov_head.head.weight", {v, rank}, m.bf16());
  auto markov = ds::DSparkMarkovHeadOp::create(
      b, m.loc(), m.tensor({n + 1}, m.i32()), m.tensor({n, v}, m.f32()),
      m.tensor({n, rank}, m.bf16()), logits, anchor, markovEmbed, markovHead);
  Value proj = m.weight(last + ".confidence_head.proj.weight", {1, d + rank}, m.bf16());
  Value confidence = ds::DSparkConfidenceOp::create(b, m.loc(), m.tensor({n}, m.f32()), xc,
                                                    markov.getMarkovEmbeds(), proj);
  func::ReturnOp::create(b, m.loc(),
                         ValueRange{markov.getOutputIds(), markov.getBiasedLogits(), confidence});
}

} // namespace

OwningOpRef<ModuleOp> dsc::models::buildModule(const ModelSpec &spec, MLIRContext &context,
                                               const BuildOptions &options) {
  context.loadDialect<ds::DSDialect, func::FuncDialect>();
  OpBuilder b(&context);
  OwningOpRef<ModuleOp> module = ModuleOp::create(b.getUnknownLoc());
  module->getOperation()->setAttr("ds.n_layers", b.getI64IntegerAttr(spec.nLayers));
  module->getOperation()->setAttr("ds.ced_split", b.getI64IntegerAttr(spec.cedSplitLayer));
  module->getOperation()->setAttr("ds.vocab_size", b.getI64IntegerAttr(spec.vocabSize));

  ModelEmitter emitter(spec, *module);
  buildBackbone(emitter, *module, "prefill", kDyn, options.allPrefillLogits);
  buildBackbone(emitter, *module, "decode", 1, /*allLogits=*/false);
  if (spec.hasDSpark() && !spec.dsparkTargetLayerIds.empty()) {
    buildDSparkPrefill(emitter, *module);
    buildDSparkDraft(emitter, *module);
  }
  if (failed(verify(*module)))
    return nullptr;
  return module;
}
