//===- DeepSeekOps.td - Ops of the ds dialect ------------------------------===//
//
// One op per step of the reference forward pass. Sizes come from the types;
// constants of the model (eps, ratios, k, RoPE) are attributes. Every op but
// `ds.parameter` and `ds.engram_hash` sits inside a `ds.layer` region or at
// the top of a phase function (embedding, head).
// Section numbers refer to ../shared/spec/reference-spec.md.
//===----------------------------------------------------------------------===//
#ifndef DSC_DIALECT_DEEPSEEK_OPS_TD
#define DSC_DIALECT_DEEPSEEK_OPS_TD

include "dialects/DeepSeek/IR/DeepSeekBase.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/IR/OpAsmInterface.td"
include "mlir/IR/RegionKindInterface.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/Interfaces/ControlFlowInterfaces.td"

// Every tensor of the graph level has rank 1 to 3 ([tokens, ...] activations,
// weights, stacked experts).
defvar Tensor = TensorRankOf<[AnyType], [1, 2, 3]>;

//===----------------------------------------------------------------------===//
// Structure: checkpoint parameters, layers
//===----------------------------------------------------------------------===//

def DS_ParameterOp : DS_Op<"parameter", [Symbol]> {
  let isKernel = 0;
  let summary = "A checkpoint tensor the model binds (name, dtype, shape)";
  let description = [{
    Declares one tensor of the official checkpoint layout; the symbol name is
    the checkpoint name (spec §4). Stacked routed experts use a `{e}`
    placeholder and a leading expert dimension:
    `ds.parameter @"layers.3.ffn.experts.{e}.w1" fp4_packed : tensor<384x2304x2560xi8>`.
    `kind` tells weights from their scales and marks packed FP4 (two values
    per byte), so parameter counts can be read off the module.
  }];
  let arguments = (ins SymbolNameAttr:$sym_name, DS_ParameterKindAttr:$kind,
                       TypeAttrOf<Tensor>:$type);
  let assemblyFormat = "$sym_name $kind attr-dict `:` $type";
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// Number of model parameters this tensor holds (0 for scales; two per
    /// byte for packed FP4).
    int64_t getParameterCount();
    /// Bytes the tensor occupies in the checkpoint.
    int64_t getByteSize();
  }];
}

def DS_WeightOp : DS_Op<"weight", [Pure,
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let isKernel = 0;
  let summary = "Reads a checkpoint tensor declared by ds.parameter";
  let arguments = (ins FlatSymbolRefAttr:$parameter);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$parameter attr-dict `:` type($result)";
}

def DS_LayerOp : DS_Op<"layer", [
    SingleBlockImplicitTerminator<"::dsc::ds::YieldOp">,
    DeclareOpInterfaceMethods<OpAsmOpInterface, ["getAsmResultNames"]>]> {
  let isKernel = 0;
  let summary = "One transformer block (or DSpark stage) with its identity";
  let description = [{
    Groups the ops of layer `id`. `csa2` states the layer's role and the
    sources it reads; `decoder` marks layers at or above the CED split (L/2).
    Results, in order: the residual stream `tensor<Sx4xDxbf16>`, the mix
    handed to the next block `tensor<Sx4xf32>`, then the shared values the
    layer publishes (`!ds.kv_cache`, `!ds.index_keys` for a Full layer,
    `!ds.topk` for an index source, `!ds.candidates` for the candidate
    source) and, for a DSpark target, the captured copy mean `tensor<SxDxbf16>`.

    The verifier checks the schedule locally: a layer may only read shared
    values published by the layers its `csa2` names, of its own ratio, and
    only the candidate source (a decoder Full layer) may publish candidates.

    `ced_projection` (written by `ds-ced-split`, docs/passes.md) marks the
    projection part of the Full layer L/2 that CED prefill runs on every
    prompt token: pre-collapse, attn norm, compressor, `ds.compress_kv` and
    `ds.index_keys` (plus the Engram gate if the layer has one). It has no
    attention and no MoE, yields no stream or mix, and publishes exactly its
    `!ds.kv_cache` and `!ds.index_keys`. The replayed layer with the same id
    that follows it (on the `ds.replay_slice` rows) reads that kv cache and
    those keys instead of computing them; later layers read them from the
    projection as from any KV source.
  }];
  let arguments = (ins I64Attr:$id, DS_CSA2Attr:$csa2, UnitAttr:$decoder,
                       UnitAttr:$engram, UnitAttr:$dspark_target,
                       UnitAttr:$ced_projection);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$id qualified($csa2) (`->` type($results)^)? attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    ::dsc::ds::LayerMode getMode() { return getCsa2().getMode(); }
    int64_t getRatio() { return getCsa2().getRatio(); }
    /// The enclosing layer of `op`, or null.
    static LayerOp of(::mlir::Operation *op) {
      return op->getParentOfType<LayerOp>();
    }
  }];
}

def DS_YieldOp : DS_Op<"yield", [Pure, Terminator, ReturnLike,
                                 HasParent<"::dsc::ds::LayerOp">]> {
  let isKernel = 0;
  let summary = "Results of a ds.layer";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
  let hasVerifier = 1;
}

def DS_FusedOp : DS_Op<"fused", [
    SingleBlockImplicitTerminator<"::dsc::ds::FusedYieldOp">,
    HasParent<"::dsc::ds::LayerOp">]> {
  let isKernel = 0;
  let summary = "A fused kernel: the ops of its body run as one kernel launch";
  let description = [{
    Written by `ds-fuse-kernels` (docs/passes.md). `kernel` names the fused
    kernel template the group specialises (e.g. "mhc_entry",
    "attention_projections"); the body holds the ops it computes, in
    dataflow order, and `ds.fused_yield` returns the values used after the
    group. Values from the enclosing layer are read directly (the region is
    not isolated); weights stay `ds.weight` ops of the layer. Lowering
    (passes/LowerToPlan.cpp) emits the body's ops as the steps of one plan
    launch (`Program::fusions`), so a launch count is a property of the
    plan: one per `ds.fused` plus one per op outside them.

    `tile_rows` > 0 marks a row-tiled kernel (the `indexer`): its ops are
    row-independent, so it runs on `tile_rows` token rows at a time and the
    values it does not yield exist one tile at a time (the [S, T] indexer
    scores never whole; runtime/MemoryPlan.h).

    `executable`, set by `ds-select-executables`, names the native kernel
    that runs the whole group (runtime/include/dsc/abi/NativeExecutables.def);
    absent, a backend runs the steps one by one. Values the body computes but
    does not yield are internal: a native executable may never write them.

    Invariants (verifier): the body holds at least two ops besides the
    terminator and no `ds.layer`, `ds.fused` or `ds.weight`; the yielded
    types are the results' types; `kernel` and `executable` are
    lower_snake_case names; `tile_rows` >= 0.
  }];
  let arguments = (ins StrAttr:$kernel, DefaultValuedAttr<I64Attr, "0">:$tile_rows,
                       OptionalAttr<StrAttr>:$executable);
  let results = (outs Variadic<AnyType>:$results);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$kernel (`->` type($results)^)? attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
}

def DS_FusedYieldOp : DS_Op<"fused_yield", [Pure, Terminator, ReturnLike,
                                            HasParent<"::dsc::ds::FusedOp">]> {
  let isKernel = 0;
  let summary = "Results of a ds.fused group";
  let arguments = (ins Variadic<AnyType>:$values);
  let assemblyFormat = "($values^ `:` type($values))? attr-dict";
  let builders = [OpBuilder<(ins), [{ build($_builder, $_state, ::mlir::ValueRange()); }]>];
}

def DS_ReplaySliceOp : DS_Op<"replay_slice", [Pure]> {
  let summary = "The last R' = min(R, S) rows of the stream and mix (CED replay)";
  let description = [{
    Written by `ds-ced-split` between the projection of layer L/2 and the
    replayed layers: CED prefill runs layer L/2's attention and MoE and every
    later decoder layer only on the last `tokens` = R prompt rows (all rows
    when the prompt is shorter). Operands are the residual stream
    `[S, hc, D]` and the mix `[S, hc]` leaving layer L/2-1; results are the
    same rows' suffix, `[R', hc, D]` and `[R', hc]`, whose row dimension is
    dynamic (R' depends on the prompt length). Rows keep their absolute
    positions: a replayed row r is prompt position S - R' + r.
    Example: `ds.replay_slice %h, %mix {tokens = 2560}`.
  }];
  let arguments = (ins Tensor:$stream, Tensor:$mix, I64Attr:$tokens);
  let results = (outs Tensor:$stream_slice, Tensor:$mix_slice);
  let assemblyFormat = "$stream `,` $mix attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Embedding, head
//===----------------------------------------------------------------------===//

def DS_EmbedOp : DS_Op<"embed", [Pure]> {
  let summary = "Token embedding lookup (bf16 table), spec §5.3";
  let arguments = (ins Tensor:$ids, Tensor:$table);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$ids `,` $table attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_HeadOp : DS_Op<"head", [Pure]> {
  let summary = "Vocabulary head: fp32 GEMM on the normed stream, spec §5.8";
  let description = [{
    `logits = x.f32 · W.f32ᵀ`. With `last_only` only the last position is
    computed (prefill returns the last token's logits).
  }];
  let arguments = (ins Tensor:$input, Tensor:$weight, UnitAttr:$last_only);
  let results = (outs Tensor:$logits);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// mHC (hyper-connections), norms, linear layers, RoPE
//===----------------------------------------------------------------------===//

def DS_HcExpandOp : DS_Op<"hc_expand", [Pure]> {
  let summary = "Repeats the embedding into hc_mult identical copies, spec §5.4";
  let arguments = (ins Tensor:$input, I64Attr:$copies);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_HcIdentityMixOp : DS_Op<"hc_identity_mix", [Pure]> {
  let summary = "The one-hot pre-mix of block 0 (copy 0 = 1.0, no eps), spec §5.5";
  let arguments = (ins Tensor:$stream);
  let results = (outs Tensor:$mix);
  let assemblyFormat = "$stream attr-dict `:` functional-type(operands, results)";
}

def DS_HcMixesOp : DS_Op<"hc_mixes", [Pure]> {
  let summary = "mHC mixes with Sinkhorn: (pre, post, comb), spec §8.1";
  let description = [{
    fp32 GEMM of the flattened copies with `fn`, scaled by
    `rsqrt(mean(x²) + norm_eps)`; then pre = sigmoid(..)+eps, post =
    2·sigmoid(..), comb = Sinkhorn(`sinkhorn_iters`, `eps`).
  }];
  let arguments = (ins Tensor:$stream, Tensor:$fn, Tensor:$scale, Tensor:$base,
                       I64Attr:$sinkhorn_iters, F64Attr:$eps, F64Attr:$norm_eps);
  let results = (outs Tensor:$pre, Tensor:$post, Tensor:$comb);
  let assemblyFormat = "$stream `,` $fn `,` $scale `,` $base attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_HcPreOp : DS_Op<"hc_pre", [Pure]> {
  let summary = "Collapse the copies with a pre mix: bf16(Σ_c pre[c]·x[c]), spec §8.2";
  let arguments = (ins Tensor:$stream, Tensor:$pre);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$stream `,` $pre attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_HcPostOp : DS_Op<"hc_post", [Pure]> {
  let summary = "Expand a sublayer output: bf16(post[j]·x + Σ_i comb[i][j]·res[i]), spec §8.2";
  let arguments = (ins Tensor:$input, Tensor:$residual, Tensor:$post, Tensor:$comb);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$input `,` $residual `,` $post `,` $comb attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_RmsNormOp : DS_Op<"rms_norm", [Pure]> {
  let summary = "RMSNorm: bf16(w · x·rsqrt(mean(x²)+eps)) in fp32, spec §6";
  let arguments = (ins Tensor:$input, Tensor:$weight, F64Attr:$eps);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$input `,` $weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_LinearOp : DS_Op<"linear", [Pure]> {
  let summary = "y = x·Wᵀ, plain or quantised, spec §3.4";
  let description = [{
    `fp8`: act_quant(x, 32, ue8m0) then a block-scaled GEMM with e4m3 weights
    and one ue8m0 scale per 32×32 block; `fp4`: the same with e2m1 weights
    (i8-packed, two per byte) and one scale per row × 32 K. Partials are
    reduced in fp32 per 32-wide K block and summed in K order; the output is
    bf16. `bf16` / `fp32` are plain linears in that dtype.
  }];
  let arguments = (ins Tensor:$input, Tensor:$weight, Optional<Tensor>:$scale,
                       DS_LinearQuantAttr:$quant);
  let results = (outs Tensor:$result);
  let assemblyFormat = [{
    $quant $input `,` $weight (`scale` $scale^)? attr-dict `:`
    type($input) `,` type($weight) (`,` type($scale)^)? `->` type($result)
  }];
  let hasVerifier = 1;
}

def DS_RopeOp : DS_Op<"rope", [Pure]> {
  let summary = "Interleaved RoPE (or its inverse) on the last rope channels, spec §9.2";
  let description = [{
    Rotates pairs (2k, 2k+1) of the last `rope.dim` channels by θ = pos·f_k in
    fp32 and rounds to bf16. Positions are those of the phase's tokens,
    multiplied by `position_stride` (compressed latent j sits at j·ratio).
  }];
  let arguments = (ins Tensor:$input, DS_RopeAttr:$rope,
                       DefaultValuedAttr<I64Attr, "1">:$position_stride,
                       UnitAttr:$inverse);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$input attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Attention: window KV, compressor, indexer, sparse attention
//===----------------------------------------------------------------------===//

def DS_WindowKvOp : DS_Op<"window_kv"> {
  let kernelParams = [DS_KernelParam<"window", "I64", [{ $_op.getWindow().getType().getSize() }],
                                     "ring slots W (the window)">];
  let summary = "FP8-quantise window KV and write it into the layer's ring, spec §9.3";
  let description = [{
    act_quant QDQ over all channels (rope included; 32-value tiles, ue8m0
    scales, amax floor 1e-4), then ring slot `pos % size`. The result is the
    ring as the attention of this forward sees it. With a `draft` operand
    (DSpark decode) the draft entries follow the ring and are never stored.
  }];
  let arguments = (ins Tensor:$kv, Optional<Tensor>:$draft);
  let results = (outs DS_WindowType:$window);
  let assemblyFormat = "$kv (`draft` $draft^)? attr-dict `:` type($kv) (`,` type($draft)^)? `->` qualified(type($window))";
  let hasVerifier = 1;
}

def DS_CompressorOp : DS_Op<"compressor"> {
  let summary = "Pool `ratio` tokens into one pre-RoPE latent, spec §9.4";
  let description = [{
    Ratio 2: fp32 `wkv` and `wgate` projections, per-channel softmax over the
    group, bf16 cast, RMSNorm. Ratio 1: bf16 `wkv` and RMSNorm, no gate. A
    partial group carries into the next forward (compressor state).
  }];
  let arguments = (ins Tensor:$input, Tensor:$wkv, Optional<Tensor>:$wgate,
                       Tensor:$norm, I64Attr:$ratio, F64Attr:$eps);
  let results = (outs Tensor:$latent);
  let assemblyFormat = [{
    $input `,` $wkv `,` $norm (`gate` $wgate^ `:` type($wgate))? attr-dict `:`
    type($input) `,` type($wkv) `,` type($norm) `->` type($latent)
  }];
  let hasVerifier = 1;
}

def DS_CompressKvOp : DS_Op<"compress_kv"> {
  let kernelParams = [DS_KernelParam<"ratio", "I64", [{ $_op.getCache().getType().getRatio() }],
                                     "compress ratio of the KV it appends to">];
  let summary = "RoPE + FP4 (16-value tiles, e4m3 scales) + append to the KV cache, spec §9.4";
  let arguments = (ins Tensor:$latent, DS_RopeAttr:$rope);
  let results = (outs DS_KvCacheType:$cache);
  let assemblyFormat = "$latent attr-dict `:` type($latent) `->` qualified(type($cache))";
  let hasVerifier = 1;
}

def DS_IndexKeysOp : DS_Op<"index_keys"> {
  let kernelParams = [DS_KernelParam<"ratio", "I64", [{ $_op.getKeys().getType().getRatio() }],
                                     "compress ratio of the keys it appends to">];
  let summary = "k_norm(wk(latent)) + RoPE + FP4 (32-value tiles, ue8m0), spec §9.5.1";
  let arguments = (ins Tensor:$latent, Tensor:$wk, Tensor:$norm, DS_RopeAttr:$rope,
                       F64Attr:$eps);
  let results = (outs DS_IndexKeysType:$keys);
  let assemblyFormat = "$latent `,` $wk `,` $norm attr-dict `:` type($latent) `,` type($wk) `,` type($norm) `->` qualified(type($keys))";
  let hasVerifier = 1;
}

def DS_IndexQueriesOp : DS_Op<"index_queries", [Pure]> {
  let summary = "wq_b(qr) per index head + RoPE + FP4 (32-value tiles), spec §9.5.2";
  let arguments = (ins Tensor:$qr, Tensor:$weight, Tensor:$scale, DS_RopeAttr:$rope);
  let results = (outs Tensor:$queries);
  let assemblyFormat = "$qr `,` $weight `,` $scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_IndexerScoreOp : DS_Op<"indexer_score", [Pure]> {
  let summary = "Σ_h relu(q_h·k)·w_h in bf16 tensor math, masked by visibility, spec §9.5.3";
  let description = [{
    `head_weights` is `weights_proj(x)` (bf16); it is multiplied by
    `weight_scale` (index_head_dim^-½ · index_n_heads^-½) and rounded to bf16.
    Query t sees compressed j iff j < (t+1)/ratio. Result [S, T] bf16.
  }];
  let arguments = (ins Tensor:$queries, Tensor:$head_weights, DS_IndexKeysType:$keys,
                       F64Attr:$weight_scale);
  let results = (outs Tensor:$scores);
  let assemblyFormat = "$queries `,` $head_weights `,` $keys attr-dict `:` type($queries) `,` type($head_weights) `,` qualified(type($keys)) `->` type($scores)";
  let hasVerifier = 1;
}

def DS_CandidateBlocksOp : DS_Op<"candidate_blocks", [Pure]> {
  let kernelParams = [
    DS_KernelParam<"blocks", "I64", [{ $_op.getCandidates().getType().getBlocks() }],
                   "candidate block ids per row">,
    DS_KernelParam<"block_size", "I64", [{ $_op.getCandidates().getType().getBlockSize() }],
                   "compressed entries per block">,
    DS_KernelParam<"ratio", "I64", [{ $_op.getCandidates().getType().getRatio() }],
                   "compress ratio of the scores">];
  let summary = "Top blocks of max scores, newest block pinned, spec §9.6";
  let arguments = (ins Tensor:$scores);
  let results = (outs DS_CandidatesType:$candidates);
  let assemblyFormat = "$scores attr-dict `:` type($scores) `->` qualified(type($candidates))";
  let hasVerifier = 1;
}

def DS_IndexerTopKOp : DS_Op<"indexer_topk", [Pure]> {
  let kernelParams = [
    DS_KernelParam<"topk", "I64", [{ $_op.getTopk().getType().getK() }],
                   "entries selected per row">,
    DS_KernelParam<"ratio", "I64", [{ $_op.getTopk().getType().getRatio() }],
                   "compress ratio of the scores">,
    DS_KernelParam<"block_size", "I64",
                   [{ $_op.getCandidates() ? $_op.getCandidates().getType().getBlockSize() : 0 }],
                   "block size of the candidate pool (0: no pool)">];
  let summary = "Top-k visible compressed positions, sorted ascending, spec §9.5.6";
  let description = [{
    Level two of the hierarchical indexer: with `candidates`, positions
    outside the candidate pool score -inf first.
  }];
  let arguments = (ins Tensor:$scores, Optional<DS_CandidatesType>:$candidates);
  let results = (outs DS_TopKType:$topk);
  let assemblyFormat = "$scores (`within` $candidates^)? attr-dict `:` type($scores) (`,` qualified(type($candidates))^)? `->` qualified(type($topk))";
  let hasVerifier = 1;
}

def DS_SparseAttentionOp : DS_Op<"sparse_attention", [Pure, AttrSizedOperandSegments]> {
  let summary = "Attention over window ∪ top-k compressed entries with a sink, spec §9.7";
  let description = [{
    One KV head, K = V = the full head_dim vector; logits scaled by `scale`,
    online softmax over blocks of 64 indices with P rounded to bf16, the sink
    added unscaled to the denominator. SWA-only and DSpark layers have no
    `kv_cache` / `topk` operands.
  }];
  let arguments = (ins Tensor:$queries, DS_WindowType:$window,
                       Optional<DS_KvCacheType>:$kv_cache, Optional<DS_TopKType>:$topk,
                       Tensor:$sink, F64Attr:$scale);
  let results = (outs Tensor:$result);
  let assemblyFormat = [{
    $queries `,` $window `,` $sink (`kv` $kv_cache^ `:` qualified(type($kv_cache)))?
    (`topk` $topk^ `:` qualified(type($topk)))? attr-dict `:`
    type($queries) `,` qualified(type($window)) `,` type($sink) `->` type($result)
  }];
  let hasVerifier = 1;
}

def DS_GroupedOutputOp : DS_Op<"grouped_output", [Pure]> {
  let summary = "Grouped low-rank output projection: wo_b(einsum(o, wo_a)), spec §9.8";
  let arguments = (ins Tensor:$input, Tensor:$wo_a, Tensor:$wo_b, Tensor:$wo_b_scale,
                       I64Attr:$groups);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$input `,` $wo_a `,` $wo_b `,` $wo_b_scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// MoE
//===----------------------------------------------------------------------===//

def DS_MoeGateOp : DS_Op<"moe_gate", [Pure]> {
  let summary = "sqrt-softplus scores, bias-picked top-k, normalised route weights, spec §10.2–3";
  let arguments = (ins Tensor:$input, Tensor:$weight, Tensor:$bias, I64Attr:$topk,
                       F64Attr:$route_scale, F64Attr:$temperature, BoolAttr:$normalize);
  let results = (outs Tensor:$route_weights, Tensor:$expert_ids);
  let assemblyFormat = "$input `,` $weight `,` $bias attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_MoeExpertsOp : DS_Op<"moe_experts", [Pure]> {
  let summary = "Routed FP4 experts + shared FP8 expert with clamped SwiGLU, spec §10.4–5";
  let description = [{
    Per expert: g = w1(x), u = w3(x) in fp32, u clamped to ±limit, g ≤ limit,
    y = silu(g)·u·route_weight, out = w2(bf16(y)). Outputs accumulate in fp32
    in ascending expert id, then the shared expert; the sum is rounded to bf16.
    Routed weights are stacked along a leading expert dimension.
  }];
  let arguments = (ins Tensor:$input, Tensor:$route_weights, Tensor:$expert_ids,
                       Tensor:$w1, Tensor:$w1_scale, Tensor:$w3, Tensor:$w3_scale,
                       Tensor:$w2, Tensor:$w2_scale,
                       Tensor:$shared_w1, Tensor:$shared_w1_scale,
                       Tensor:$shared_w3, Tensor:$shared_w3_scale,
                       Tensor:$shared_w2, Tensor:$shared_w2_scale,
                       F64Attr:$swiglu_limit);
  let results = (outs Tensor:$result);
  let assemblyFormat = "operands attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// Engram
//===----------------------------------------------------------------------===//

def DS_EngramHashOp : DS_Op<"engram_hash", [Pure]> {
  let summary = "N-gram hash rows of every Engram layer, spec §7.4";
  let description = [{
    Compressed token ids (`token_map`, carried with the plan) are hashed with
    look-back blocked at the sequence start and at image tokens; state is
    carried across prefill and decode. Layout per Engram layer (flattened,
    layer-major): `multipliers` [max_ngram], `primes` and `offsets`
    [(max_ngram-1)·heads]. Result [S, layers, columns] i64.
  }];
  let arguments = (ins Tensor:$ids, DenseI64ArrayAttr:$layers, I64Attr:$max_ngram,
                       I64Attr:$heads, I64Attr:$pad_id, I64Attr:$compressed_vocab_size,
                       DenseI64ArrayAttr:$multipliers, DenseI64ArrayAttr:$primes,
                       DenseI64ArrayAttr:$offsets);
  let results = (outs Tensor:$hashes);
  let assemblyFormat = "$ids attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_EngramLookupOp : DS_Op<"engram_lookup", [Pure]> {
  let summary = "Gather FP8 table rows and dequantise them to bf16, spec §7.5.1";
  let arguments = (ins Tensor:$hashes, Tensor:$table, Tensor:$table_scale, I64Attr:$slot);
  let results = (outs Tensor:$rows);
  let assemblyFormat = "$hashes `,` $table `,` $table_scale attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_EngramGateOp : DS_Op<"engram_gate", [Pure]> {
  let summary = "Per-copy signed-sqrt sigmoid gate adding the Engram value, spec §7.5.2–3";
  let description = [{
    `eps` is the norm epsilon of the two rsqrt factors (norm_eps, 1e-20).
  }];
  let arguments = (ins Tensor:$stream, Tensor:$kv, Tensor:$q_weight, Tensor:$k_weight,
                       F64Attr:$eps);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$stream `,` $kv `,` $q_weight `,` $k_weight attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

//===----------------------------------------------------------------------===//
// DSpark
//===----------------------------------------------------------------------===//

def DS_ConcatOp : DS_Op<"concat", [Pure]> {
  let summary = "Concatenates tensors along the last axis (DSpark main_hidden, spec §5.10)";
  let arguments = (ins Variadic<Tensor>:$inputs);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$inputs attr-dict `:` functional-type(operands, results)";
  let hasVerifier = 1;
}

def DS_CopyMeanOp : DS_Op<"copy_mean", [Pure]> {
  let summary = "Mean of the mHC copies of the stream entering a DSpark target, spec §5.6.2";
  let arguments = (ins Tensor:$stream);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$stream attr-dict `:` functional-type(operands, results)";
}

def DS_DSparkDraftOp : DS_Op<"dspark_draft", [Pure]> {
  let summary = "Draft block embedding: the anchor followed by noise tokens, spec §11.1";
  let arguments = (ins Tensor:$anchor, Tensor:$table, I64Attr:$block_size,
                       I64Attr:$noise_token);
  let results = (outs Tensor:$result);
  let assemblyFormat = "$anchor `,` $table attr-dict `:` functional-type(operands, results)";
}

def DS_DSparkMarkovHeadOp : DS_Op<"dspark_markov_head", [Pure]> {
  let summary = "Logits + per-step Markov bias keyed on the previous token, greedy chain, spec §11.4";
  let arguments = (ins Tensor:$logits, Tensor:$anchor, Tensor:$embed, Tensor:$head);
  let results = (outs Tensor:$output_ids, Tensor:$biased_logits, Tensor:$markov_embeds);
  let assemblyFormat = "$logits `,` $anchor `,` $embed `,` $head attr-dict `:` functional-type(operands, results)";
}

def DS_DSparkConfidenceOp : DS_Op<"dspark_confidence", [Pure]> {
  let summary = "Confidence per draft position from the un-normed stream and Markov embeds, spec §11.4.4";
  let arguments = (ins Tensor:$stream, Tensor:$markov_embeds, Tensor:$proj);
  let results = (outs Tensor:$confidence);
  let assemblyFormat = "$stream `,` $markov_embeds `,` $proj attr-dict `:` functional-type(operands, results)";
}

#endif // DSC_DIALECT_DEEPSEEK_OPS_TD
