//===- LayerEmitter.h - Emit the ops of one layer (builder internals) ----===//
//
// ModelEmitter owns the builder state shared by all functions of a module
// (parameter declarations, element types); emitLayer() writes one ds.layer
// following reference-spec §8.3 (block order) and §9 (attention).
//===----------------------------------------------------------------------===//
#ifndef DSC_MODELS_BUILDER_LAYEREMITTER_H
#define DSC_MODELS_BUILDER_LAYEREMITTER_H

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "models/ModelSpec.h"

#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

#include <map>
#include <optional>

namespace dsc::models {

/// Shared values published by layers, keyed by layer id.
struct SharedValues {
  std::map<int64_t, mlir::Value> kvCache, indexKeys, topk, candidates;
};

/// The stream between blocks.
struct StreamState {
  mlir::Value stream; ///< [S, hc, D] bf16
  mlir::Value mix;    ///< [S, hc] f32: the pre mix for the next block
};

class ModelEmitter {
public:
  ModelEmitter(const ModelSpec &spec, mlir::ModuleOp module);

  const ModelSpec &spec() const { return spec_; }
  mlir::OpBuilder &builder() { return builder_; }
  mlir::Location loc() const { return loc_; }

  // Element types.
  mlir::Type bf16() { return builder_.getBF16Type(); }
  mlir::Type f32() { return builder_.getF32Type(); }
  mlir::Type fp8();
  mlir::Type ue8m0();
  mlir::Type i8() { return builder_.getIntegerType(8); }
  mlir::Type i32() { return builder_.getIntegerType(32); }
  mlir::Type i64() { return builder_.getIntegerType(64); }
  mlir::RankedTensorType tensor(llvm::ArrayRef<int64_t> shape, mlir::Type element) {
    return mlir::RankedTensorType::get(shape, element);
  }

  /// Declares (once) and reads a checkpoint tensor.
  mlir::Value weight(llvm::StringRef name, llvm::ArrayRef<int64_t> shape,
                     mlir::Type element,
                     ds::ParameterKind kind = ds::ParameterKind::weight);

  /// `prefix.weight` e4m3 [n, k] with `prefix.scale` [ceil(n/32), k/32].
  mlir::Value linearFp8(mlir::Value x, llvm::StringRef prefix, int64_t n, int64_t k,
                        llvm::ArrayRef<int64_t> resultShape);
  /// `name` bf16 [n, k] as a plain linear in `quant` (bf16 or fp32).
  mlir::Value linearPlain(mlir::Value x, llvm::StringRef name, int64_t n, int64_t k,
                          llvm::ArrayRef<int64_t> resultShape, ds::LinearQuant quant);
  mlir::Value rmsNorm(mlir::Value x, llvm::StringRef name, int64_t width);

  /// RoPE attribute of a layer with compress ratio `ratio` (ratio 0: plain).
  ds::RopeAttr ropeFor(int64_t ratio);

  /// Emits layer `layer` for `tokens` tokens (ShapedType::kDynamic in
  /// prefill). Returns the next stream; publishes shared values.
  StreamState emitLayer(const LayerSpec &layer, int64_t tokens, StreamState in,
                        mlir::Value engramHashes, SharedValues &shared,
                        std::vector<mlir::Value> &captures);

  /// Attention + MoE sub-blocks of a DSpark stage (draft decode).
  StreamState emitDSparkStage(const LayerSpec &layer, StreamState in, mlir::Value mainX,
                              int64_t draftTokens);
  /// Window KV seeding of a DSpark stage (prefill).
  void emitDSparkSeed(const LayerSpec &layer, mlir::Value mainX, int64_t tokens);

  /// The MoE half of a block on the post-attention stream `h`; returns the
  /// block output and its FFN pre mix.
  StreamState ffnSubBlock(const LayerSpec &layer, mlir::Value h, mlir::Value attnPre,
                          int64_t tokens);
  /// hc_mixes for sub-block `which` ("attn" or "ffn") of `prefix`.
  std::tuple<mlir::Value, mlir::Value, mlir::Value>
  hcMixes(mlir::Value stream, llvm::StringRef prefix, llvm::StringRef which, int64_t tokens);

  /// The MoE sub-block on normed input x [S, D].
  mlir::Value moe(mlir::Value x, llvm::StringRef prefix, int64_t tokens, int64_t experts,
                  int64_t activated);

  /// Q path: returns (qr [S, q_lora], q [S, H, Dh] after RoPE).
  std::pair<mlir::Value, mlir::Value> queries(mlir::Value x, llvm::StringRef prefix,
                                              int64_t tokens, ds::RopeAttr rope);
  /// Window KV projection: kv_norm(wkv(x)) + RoPE, [S, Dh].
  mlir::Value windowKv(mlir::Value x, llvm::StringRef prefix, int64_t tokens, ds::RopeAttr rope);
  /// Inverse RoPE + grouped output projection.
  mlir::Value outputProjection(mlir::Value o, llvm::StringRef prefix, int64_t tokens,
                               ds::RopeAttr rope);

  /// "layers.N" or "mtp.K".
  std::string prefixOf(const LayerSpec &layer) const;

private:
  const ModelSpec &spec_;
  mlir::ModuleOp module_;
  mlir::OpBuilder builder_;
  mlir::Location loc_;
  llvm::StringMap<ds::ParameterOp> parameters_;
  ds::ParameterOp lastParameter_; // parameters stay in first-use order
};

} // namespace dsc::models

#endif // DSC_MODELS_BUILDER_LAYEREMITTER_H
