// RUN: dsc-opt %s --split-input-file --verify-diagnostics

// One case per diagnostic of the ds dialect: type and attribute verifiers
// (DeepSeekDialect.cpp), op verifiers (DeepSeekOps.cpp) and the per-layer
// CSA2 schedule (LayerVerifier.cpp). Module-wide schedule checks are in
// test/passes/verify-schedule.mlir.

//===----------------------------------------------------------------------===//
// Attributes and types (DeepSeekDialect.cpp)
//===----------------------------------------------------------------------===//

// An SWA layer has no compress ratio.
// expected-error @+1 {{a swa layer has ratio 0 and no kv or index source}}
func.func private @csa2_swa_ratio() attributes {csa2 = #ds.csa2<mode = swa, ratio = 2>}

// -----

// A DSpark stage reads no compressed state.
// expected-error @+1 {{a dspark layer has ratio 0 and no kv or index source}}
func.func private @csa2_dspark_source() attributes {csa2 = #ds.csa2<mode = dspark, kv_source = 3>}

// -----

// A compressed layer needs a positive ratio.
// expected-error @+1 {{a reuse layer needs a compress ratio > 0, got 0}}
func.func private @csa2_reuse_no_ratio() attributes {csa2 = #ds.csa2<mode = reuse, kv_source = 1, index_source = 1>}

// -----

// A compressed layer names its kv and index sources.
// expected-error @+1 {{a full layer needs kv_source and index_source}}
func.func private @csa2_full_no_sources() attributes {csa2 = #ds.csa2<mode = full, ratio = 2>}

// -----

// RoPE rotates pairs: its dim is even.
// expected-error @+1 {{rope dim must be positive and even, got 15}}
func.func private @rope_odd_dim() attributes {rope = #ds.rope<dim = 15, theta = 1.0e4 : f64>}

// -----

// RoPE theta is positive.
// expected-error @+1 {{rope theta must be positive}}
func.func private @rope_zero_theta() attributes {rope = #ds.rope<dim = 16, theta = 0.0 : f64>}

// -----

// A negative original_seq_len is rejected.
// expected-error @+1 {{original_seq_len must be >= 0}}
func.func private @rope_negative_seq_len() attributes {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64, original_seq_len = -1>}

// -----

// YaRN needs all three of its parameters.
// expected-error @+1 {{YaRN (original_seq_len > 0) needs factor, beta_fast and beta_slow}}
func.func private @rope_yarn_incomplete() attributes {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64, original_seq_len = 64, factor = 16.0 : f64>}

// -----

// kv_cache ratio is positive.
// expected-error @+1 {{kv_cache ratio must be > 0, got 0}}
func.func private @kv_cache_ratio(!ds.kv_cache<ratio = 0, dim = 64>)

// -----

// Main KV records are FP4 in 16-value tiles.
// expected-error @+1 {{kv_cache dim must be a multiple of 16 (FP4 tiles with e4m3 scales), got 40}}
func.func private @kv_cache_dim(!ds.kv_cache<ratio = 2, dim = 40>)

// -----

// index_keys ratio is positive.
// expected-error @+1 {{index_keys ratio must be > 0, got -1}}
func.func private @index_keys_ratio(!ds.index_keys<ratio = -1, dim = 64>)

// -----

// Index keys are FP4 in 32-value tiles.
// expected-error @+1 {{index_keys dim must be a multiple of 32 (FP4 tiles with ue8m0 scales), got 48}}
func.func private @index_keys_dim(!ds.index_keys<ratio = 2, dim = 48>)

// -----

// A top-k has a ratio and at least one position.
// expected-error @+1 {{topk needs ratio > 0 and k > 0, got ratio 2 and k 0}}
func.func private @topk_k(!ds.topk<ratio = 2, k = 0>)

// -----

// A candidate pool is not empty.
// expected-error @+1 {{candidates need ratio, blocks and block_size > 0}}
func.func private @candidates_blocks(!ds.candidates<ratio = 1, blocks = 0, block_size = 4>)

// -----

// A window ring has slots.
// expected-error @+1 {{window size must be > 0, got 0}}
func.func private @window_size(!ds.window<size = 0, dim = 64>)

// -----

// Window records are FP8 in 32-value tiles.
// expected-error @+1 {{window dim must be a multiple of 32 (FP8 tiles with ue8m0 scales), got 48}}
func.func private @window_dim(!ds.window<size = 8, dim = 48>)

// -----

//===----------------------------------------------------------------------===//
// Structure: ds.parameter, ds.weight, ds.yield (DeepSeekOps.cpp)
//===----------------------------------------------------------------------===//

// Checkpoint tensors have static shapes.
// expected-error @+1 {{'ds.parameter' op checkpoint tensors have static shapes, got 'tensor<?x64xbf16>'}}
ds.parameter @dynamic weight : tensor<?x64xbf16>

// -----

// Block scales are ue8m0.
// expected-error @+1 {{'ds.parameter' op scale tensors are f8E8M0FNU, got 'f32'}}
ds.parameter @scale_f32 scale : tensor<4x2xf32>

// -----

// Packed FP4 is stored as i8.
// expected-error @+1 {{'ds.parameter' op packed FP4 tensors are stored as i8, got 'f8E4M3FN'}}
ds.parameter @fp4_as_fp8 fp4_packed : tensor<32x32xf8E4M3FN>

// -----

// ds.weight reads a declared ds.parameter.
func.func @weight_missing() {
  // expected-error @+1 {{'ds.weight' op refers to @missing, which is not a ds.parameter}}
  %0 = ds.weight @missing : tensor<4x64xbf16>
  return
}

// -----

// ds.weight has the type of its parameter.
ds.parameter @p weight : tensor<4x64xbf16>
func.func @weight_type() {
  // expected-error @+1 {{'ds.weight' op type 'tensor<4x32xbf16>' differs from parameter @p of type 'tensor<4x64xbf16>'}}
  %0 = ds.weight @p : tensor<4x32xbf16>
  return
}

// -----

// ds.yield yields one value per layer result.
func.func @yield_count(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.yield' op yields 1 values but layer 0 has 2 results}}
    ds.yield %s : tensor<4x2x64xbf16>
  }
  return
}

// -----

// ds.yield yields the types of the layer results.
func.func @yield_type(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.yield' op value 1 has type 'tensor<4x2xbf16>' but layer result 1 is 'tensor<4x2xf32>'}}
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xbf16>
  }
  return
}

// -----

//===----------------------------------------------------------------------===//
// Embedding, head
//===----------------------------------------------------------------------===//

// Token ids are a vector.
func.func @embed_ids_rank(%ids: tensor<4x1xi32>, %t: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.embed' op ids must be a rank-1 tensor, got 'tensor<4x1xi32>'}}
  %0 = ds.embed %ids, %t : (tensor<4x1xi32>, tensor<128x64xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

// The embedding table is a matrix.
func.func @embed_table_rank(%ids: tensor<4xi32>, %t: tensor<128x64x1xbf16>) {
  // expected-error @+1 {{'ds.embed' op table must be a rank-2 tensor, got 'tensor<128x64x1xbf16>'}}
  %0 = ds.embed %ids, %t : (tensor<4xi32>, tensor<128x64x1xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

// Embeddings are [tokens, dim].
func.func @embed_result_rank(%ids: tensor<4xi32>, %t: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.embed' op result must be a rank-2 tensor, got 'tensor<4x1x64xbf16>'}}
  %0 = ds.embed %ids, %t : (tensor<4xi32>, tensor<128x64xbf16>) -> tensor<4x1x64xbf16>
  return
}

// -----

// Token ids are integers.
func.func @embed_ids_float(%ids: tensor<4xf32>, %t: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.embed' op ids must be integers}}
  %0 = ds.embed %ids, %t : (tensor<4xf32>, tensor<128x64xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

// The embedding has the table's width.
func.func @embed_width(%ids: tensor<4xi32>, %t: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.embed' op embedding width is 32, expected 64}}
  %0 = ds.embed %ids, %t : (tensor<4xi32>, tensor<128x64xbf16>) -> tensor<4x32xbf16>
  return
}

// -----

// The head weight is a matrix.
func.func @head_weight_rank(%x: tensor<4x64xbf16>, %w: tensor<128xbf16>) {
  // expected-error @+1 {{'ds.head' op weight must be a rank-2 tensor, got 'tensor<128xbf16>'}}
  %0 = ds.head %x, %w : (tensor<4x64xbf16>, tensor<128xbf16>) -> tensor<4x128xf32>
  return
}

// -----

// The head reads the collapsed stream [tokens, dim].
func.func @head_input_rank(%x: tensor<4x2x64xbf16>, %w: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.head' op input must be a rank-2 tensor, got 'tensor<4x2x64xbf16>'}}
  %0 = ds.head %x, %w : (tensor<4x2x64xbf16>, tensor<128x64xbf16>) -> tensor<4x128xf32>
  return
}

// -----

// Logits are [tokens, vocab].
func.func @head_logits_rank(%x: tensor<4x64xbf16>, %w: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.head' op logits must be a rank-2 tensor, got 'tensor<128xf32>'}}
  %0 = ds.head %x, %w {last_only} : (tensor<4x64xbf16>, tensor<128x64xbf16>) -> tensor<128xf32>
  return
}

// -----

// The head weight has dim columns.
func.func @head_input_width(%x: tensor<4x32xbf16>, %w: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.head' op input width is 32, expected 64}}
  %0 = ds.head %x, %w : (tensor<4x32xbf16>, tensor<128x64xbf16>) -> tensor<4x128xf32>
  return
}

// -----

// The head computes in fp32.
func.func @head_logits_bf16(%x: tensor<4x64xbf16>, %w: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.head' op logits are f32}}
  %0 = ds.head %x, %w : (tensor<4x64xbf16>, tensor<128x64xbf16>) -> tensor<4x128xbf16>
  return
}

// -----

// The logits have one column per vocabulary row.
func.func @head_vocab(%x: tensor<4x64xbf16>, %w: tensor<128x64xbf16>) {
  // expected-error @+1 {{'ds.head' op vocabulary size is 100, expected 128}}
  %0 = ds.head %x, %w : (tensor<4x64xbf16>, tensor<128x64xbf16>) -> tensor<4x100xf32>
  return
}

// -----

//===----------------------------------------------------------------------===//
// mHC, RMSNorm
//===----------------------------------------------------------------------===//

// hc_expand takes the embedding [tokens, dim].
func.func @hc_expand_input_rank(%x: tensor<4x1x64xbf16>) {
  // expected-error @+1 {{'ds.hc_expand' op input must be a rank-2 tensor, got 'tensor<4x1x64xbf16>'}}
  %0 = ds.hc_expand %x {copies = 2 : i64} : (tensor<4x1x64xbf16>) -> tensor<4x2x64xbf16>
  return
}

// -----

// hc_expand makes the stream [tokens, copies, dim].
func.func @hc_expand_result_rank(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'ds.hc_expand' op result must be a rank-3 tensor, got 'tensor<4x128xbf16>'}}
  %0 = ds.hc_expand %x {copies = 2 : i64} : (tensor<4x64xbf16>) -> tensor<4x128xbf16>
  return
}

// -----

// The stream holds `copies` copies.
func.func @hc_expand_copies(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'ds.hc_expand' op copies is 2, expected 4}}
  %0 = ds.hc_expand %x {copies = 4 : i64} : (tensor<4x64xbf16>) -> tensor<4x2x64xbf16>
  return
}

// -----

// hc_mixes reads the stream [tokens, copies, dim].
func.func @hc_mixes_stream_rank(%s: tensor<4x128xbf16>, %fn: tensor<8x128xf32>, %scale: tensor<3xf32>, %base: tensor<8xf32>) {
  // expected-error @+1 {{'ds.hc_mixes' op stream must be a rank-3 tensor, got 'tensor<4x128xbf16>'}}
  %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x128xbf16>, tensor<8x128xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  return
}

// -----

// hc_mixes' fn is a matrix.
func.func @hc_mixes_fn_rank(%s: tensor<4x2x64xbf16>, %fn: tensor<1024xf32>, %scale: tensor<3xf32>, %base: tensor<8xf32>) {
  // expected-error @+1 {{'ds.hc_mixes' op fn must be a rank-2 tensor, got 'tensor<1024xf32>'}}
  %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x2x64xbf16>, tensor<1024xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  return
}

// -----

// fn has (2+hc_mult)·hc_mult rows: 8 for 2 copies.
func.func @hc_mixes_fn_rows(%s: tensor<4x2x64xbf16>, %fn: tensor<6x128xf32>, %scale: tensor<3xf32>, %base: tensor<8xf32>) {
  // expected-error @+1 {{'ds.hc_mixes' op fn rows ((2+hc_mult)·hc_mult) is 6, expected 8}}
  %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x2x64xbf16>, tensor<6x128xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  return
}

// -----

// fn has hc_mult·dim columns.
func.func @hc_mixes_fn_columns(%s: tensor<4x2x64xbf16>, %fn: tensor<8x64xf32>, %scale: tensor<3xf32>, %base: tensor<8xf32>) {
  // expected-error @+1 {{'ds.hc_mixes' op fn columns (hc_mult·dim) is 64, expected 128}}
  %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x2x64xbf16>, tensor<8x64xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  return
}

// -----

// One scale per mix kind (pre, post, comb).
func.func @hc_mixes_scale(%s: tensor<4x2x64xbf16>, %fn: tensor<8x128xf32>, %scale: tensor<2xf32>, %base: tensor<8xf32>) {
  // expected-error @+1 {{'ds.hc_mixes' op scale size is 2, expected 3}}
  %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x2x64xbf16>, tensor<8x128xf32>, tensor<2xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  return
}

// -----

// One base per mix.
func.func @hc_mixes_base(%s: tensor<4x2x64xbf16>, %fn: tensor<8x128xf32>, %scale: tensor<3xf32>, %base: tensor<6xf32>) {
  // expected-error @+1 {{'ds.hc_mixes' op base size is 6, expected 8}}
  %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x2x64xbf16>, tensor<8x128xf32>, tensor<3xf32>, tensor<6xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  return
}

// -----

// Sinkhorn runs at least once.
func.func @hc_mixes_sinkhorn(%s: tensor<4x2x64xbf16>, %fn: tensor<8x128xf32>, %scale: tensor<3xf32>, %base: tensor<8xf32>) {
  // expected-error @+1 {{'ds.hc_mixes' op sinkhorn_iters must be >= 1}}
  %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 0 : i64} : (tensor<4x2x64xbf16>, tensor<8x128xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  return
}

// -----

// hc_pre collapses a rank-3 stream.
func.func @hc_pre_stream_rank(%s: tensor<4x128xbf16>, %pre: tensor<4x2xf32>) {
  // expected-error @+1 {{'ds.hc_pre' op stream must be a rank-3 tensor, got 'tensor<4x128xbf16>'}}
  %0 = ds.hc_pre %s, %pre : (tensor<4x128xbf16>, tensor<4x2xf32>) -> tensor<4x64xbf16>
  return
}

// -----

// The pre mix is [tokens, copies].
func.func @hc_pre_mix_rank(%s: tensor<4x2x64xbf16>, %pre: tensor<4x2x1xf32>) {
  // expected-error @+1 {{'ds.hc_pre' op pre must be a rank-2 tensor, got 'tensor<4x2x1xf32>'}}
  %0 = ds.hc_pre %s, %pre : (tensor<4x2x64xbf16>, tensor<4x2x1xf32>) -> tensor<4x64xbf16>
  return
}

// -----

// One pre weight per copy.
func.func @hc_pre_mix_width(%s: tensor<4x2x64xbf16>, %pre: tensor<4x4xf32>) {
  // expected-error @+1 {{'ds.hc_pre' op pre mix width is 4, expected 2}}
  %0 = ds.hc_pre %s, %pre : (tensor<4x2x64xbf16>, tensor<4x4xf32>) -> tensor<4x64xbf16>
  return
}

// -----

// hc_post expands into a rank-3 residual stream.
func.func @hc_post_residual_rank(%x: tensor<4x64xbf16>, %r: tensor<4x128xbf16>, %post: tensor<4x2xf32>, %comb: tensor<4x2x2xf32>) {
  // expected-error @+1 {{'ds.hc_post' op residual must be a rank-3 tensor, got 'tensor<4x128xbf16>'}}
  %0 = ds.hc_post %x, %r, %post, %comb : (tensor<4x64xbf16>, tensor<4x128xbf16>, tensor<4x2xf32>, tensor<4x2x2xf32>) -> tensor<4x2x64xbf16>
  return
}

// -----

// comb is [tokens, copies, copies].
func.func @hc_post_comb_rank(%x: tensor<4x64xbf16>, %r: tensor<4x2x64xbf16>, %post: tensor<4x2xf32>, %comb: tensor<4x4xf32>) {
  // expected-error @+1 {{'ds.hc_post' op comb must be a rank-3 tensor, got 'tensor<4x4xf32>'}}
  %0 = ds.hc_post %x, %r, %post, %comb : (tensor<4x64xbf16>, tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x4xf32>) -> tensor<4x2x64xbf16>
  return
}

// -----

// comb has one row per copy.
func.func @hc_post_comb_rows(%x: tensor<4x64xbf16>, %r: tensor<4x2x64xbf16>, %post: tensor<4x2xf32>, %comb: tensor<4x4x2xf32>) {
  // expected-error @+1 {{'ds.hc_post' op comb rows is 4, expected 2}}
  %0 = ds.hc_post %x, %r, %post, %comb : (tensor<4x64xbf16>, tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x4x2xf32>) -> tensor<4x2x64xbf16>
  return
}

// -----

// comb has one column per copy.
func.func @hc_post_comb_columns(%x: tensor<4x64xbf16>, %r: tensor<4x2x64xbf16>, %post: tensor<4x2xf32>, %comb: tensor<4x2x4xf32>) {
  // expected-error @+1 {{'ds.hc_post' op comb columns is 4, expected 2}}
  %0 = ds.hc_post %x, %r, %post, %comb : (tensor<4x64xbf16>, tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x2x4xf32>) -> tensor<4x2x64xbf16>
  return
}

// -----

// The sublayer output has the stream's width.
func.func @hc_post_input_width(%x: tensor<4x32xbf16>, %r: tensor<4x2x64xbf16>, %post: tensor<4x2xf32>, %comb: tensor<4x2x2xf32>) {
  // expected-error @+1 {{'ds.hc_post' op input width is 32, expected 64}}
  %0 = ds.hc_post %x, %r, %post, %comb : (tensor<4x32xbf16>, tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x2x2xf32>) -> tensor<4x2x64xbf16>
  return
}

// -----

// The norm weight is a vector.
func.func @rms_norm_weight_rank(%x: tensor<4x64xbf16>, %w: tensor<1x64xbf16>) {
  // expected-error @+1 {{'ds.rms_norm' op weight must be a rank-1 tensor, got 'tensor<1x64xbf16>'}}
  %0 = ds.rms_norm %x, %w {eps = 1.0e-06 : f64} : (tensor<4x64xbf16>, tensor<1x64xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

// RMSNorm keeps its input type.
func.func @rms_norm_result(%x: tensor<4x64xbf16>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.rms_norm' op result type must equal the input type}}
  %0 = ds.rms_norm %x, %w {eps = 1.0e-06 : f64} : (tensor<4x64xbf16>, tensor<64xbf16>) -> tensor<4x64xf32>
  return
}

// -----

// One norm weight per channel.
func.func @rms_norm_weight_size(%x: tensor<4x64xbf16>, %w: tensor<32xbf16>) {
  // expected-error @+1 {{'ds.rms_norm' op weight size is 32, expected 64}}
  %0 = ds.rms_norm %x, %w {eps = 1.0e-06 : f64} : (tensor<4x64xbf16>, tensor<32xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Linear, RoPE
//===----------------------------------------------------------------------===//

// The weight is [N, K].
func.func @linear_weight_rank(%x: tensor<4x64xbf16>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.linear' op weight must be a rank-2 tensor, got 'tensor<64xbf16>'}}
  %0 = ds.linear bf16 %x, %w : tensor<4x64xbf16>, tensor<64xbf16> -> tensor<4x32xbf16>
  return
}

// -----

// An fp8 linear has e4m3 weights.
func.func @linear_fp8_weight(%x: tensor<4x64xbf16>, %w: tensor<32x64xbf16>, %s: tensor<1x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.linear' op fp8 linear needs an f8E4M3FN weight}}
  %0 = ds.linear fp8 %x, %w scale %s : tensor<4x64xbf16>, tensor<32x64xbf16>, tensor<1x2xf8E8M0FNU> -> tensor<4x32xbf16>
  return
}

// -----

// An fp8 linear has block scales.
func.func @linear_fp8_no_scale(%x: tensor<4x64xbf16>, %w: tensor<32x64xf8E4M3FN>) {
  // expected-error @+1 {{'ds.linear' op fp8 linear needs a scale operand}}
  %0 = ds.linear fp8 %x, %w : tensor<4x64xbf16>, tensor<32x64xf8E4M3FN> -> tensor<4x32xbf16>
  return
}

// -----

// act_quant works on 32-wide blocks of K.
func.func @linear_fp8_k(%x: tensor<4x48xbf16>, %w: tensor<32x48xf8E4M3FN>, %s: tensor<1x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.linear' op fp8 linear needs K divisible by 32, got 48}}
  %0 = ds.linear fp8 %x, %w scale %s : tensor<4x48xbf16>, tensor<32x48xf8E4M3FN>, tensor<1x1xf8E8M0FNU> -> tensor<4x32xbf16>
  return
}

// -----

// fp8 scales are one per 32x32 block: [ceil(N/32), K/32].
func.func @linear_fp8_scale_shape(%x: tensor<4x64xbf16>, %w: tensor<32x64xf8E4M3FN>, %s: tensor<2x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.linear' op fp8 scale must be [1, 2] (32x32 blocks), got 'tensor<2x2xf8E8M0FNU>'}}
  %0 = ds.linear fp8 %x, %w scale %s : tensor<4x64xbf16>, tensor<32x64xf8E4M3FN>, tensor<2x2xf8E8M0FNU> -> tensor<4x32xbf16>
  return
}

// -----

// An fp4 linear has i8-packed weights.
func.func @linear_fp4_weight(%x: tensor<4x64xbf16>, %w: tensor<32x32xbf16>, %s: tensor<32x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.linear' op fp4 linear needs an i8-packed weight}}
  %0 = ds.linear fp4 %x, %w scale %s : tensor<4x64xbf16>, tensor<32x32xbf16>, tensor<32x2xf8E8M0FNU> -> tensor<4x32xbf16>
  return
}

// -----

// An fp4 linear has scales.
func.func @linear_fp4_no_scale(%x: tensor<4x64xbf16>, %w: tensor<32x32xi8>) {
  // expected-error @+1 {{'ds.linear' op fp4 linear needs a scale operand}}
  %0 = ds.linear fp4 %x, %w : tensor<4x64xbf16>, tensor<32x32xi8> -> tensor<4x32xbf16>
  return
}

// -----

// fp4 scales are one per row and 32 values of K: [N, 2·K_packed/32].
func.func @linear_fp4_scale_shape(%x: tensor<4x64xbf16>, %w: tensor<32x32xi8>, %s: tensor<1x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.linear' op fp4 scale must be [32, 2] (row x 32), got 'tensor<1x2xf8E8M0FNU>'}}
  %0 = ds.linear fp4 %x, %w scale %s : tensor<4x64xbf16>, tensor<32x32xi8>, tensor<1x2xf8E8M0FNU> -> tensor<4x32xbf16>
  return
}

// -----

// bf16 / fp32 linears are unscaled.
func.func @linear_plain_scale(%x: tensor<4x64xbf16>, %w: tensor<32x64xbf16>, %s: tensor<1x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.linear' op a plain linear takes no scale}}
  %0 = ds.linear bf16 %x, %w scale %s : tensor<4x64xbf16>, tensor<32x64xbf16>, tensor<1x2xf8E8M0FNU> -> tensor<4x32xbf16>
  return
}

// -----

// The input has K channels (twice the packed width for fp4).
func.func @linear_input_width(%x: tensor<4x32xbf16>, %w: tensor<32x32xi8>, %s: tensor<32x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.linear' op input width is 32, expected 64}}
  %0 = ds.linear fp4 %x, %w scale %s : tensor<4x32xbf16>, tensor<32x32xi8>, tensor<32x2xf8E8M0FNU> -> tensor<4x32xbf16>
  return
}

// -----

// The output has N channels, here split as [heads, head_dim].
func.func @linear_output_width(%x: tensor<4x64xbf16>, %w: tensor<32x64xbf16>) {
  // expected-error @+1 {{'ds.linear' op output width is 64, expected 32}}
  %0 = ds.linear bf16 %x, %w : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x2x32xbf16>
  return
}

// -----

// RoPE keeps its input type.
func.func @rope_result(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'ds.rope' op result type must equal the input type}}
  %0 = ds.rope %x {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x64xbf16>) -> tensor<4x64xf32>
  return
}

// -----

// RoPE rotates at most all channels.
func.func @rope_dim(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'ds.rope' op rope dim 128 exceeds the channel count 64}}
  %0 = ds.rope %x {rope = #ds.rope<dim = 128, theta = 1.0e4 : f64>} : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

// Positions advance by at least one per entry.
func.func @rope_stride(%x: tensor<4x64xbf16>) {
  // expected-error @+1 {{'ds.rope' op position_stride must be >= 1}}
  %0 = ds.rope %x {position_stride = 0 : i64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Attention: window, compressor, indexer, sparse attention
//===----------------------------------------------------------------------===//

// Draft entries have the ring's width.
func.func @window_kv_draft_width(%kv: tensor<1x64xbf16>, %d: tensor<3x32xbf16>) {
  // expected-error @+1 {{'ds.window_kv' op draft width is 32, expected 64}}
  %0 = ds.window_kv %kv draft %d : tensor<1x64xbf16>, tensor<3x32xbf16> -> !ds.window<size = 8, dim = 64>
  return
}

// -----

// Window KV has the ring's width.
func.func @window_kv_width(%kv: tensor<4x32xbf16>) {
  // expected-error @+1 {{'ds.window_kv' op kv width is 32, expected 64}}
  %0 = ds.window_kv %kv : tensor<4x32xbf16> -> !ds.window<size = 8, dim = 64>
  return
}

// -----

// ds.concat needs an input.
func.func @concat_empty() {
  // expected-error @+1 {{'ds.concat' op needs at least one input}}
  %0 = ds.concat : () -> tensor<4x64xbf16>
  return
}

// -----

// Concatenated widths are static.
func.func @concat_dynamic(%a: tensor<4x?xbf16>, %b: tensor<4x64xbf16>) {
  // expected-error @+1 {{'ds.concat' op inputs need a static last dimension}}
  %0 = ds.concat %a, %b : (tensor<4x?xbf16>, tensor<4x64xbf16>) -> tensor<4x128xbf16>
  return
}

// -----

// The result width is the sum of the input widths.
func.func @concat_width(%a: tensor<4x64xbf16>, %b: tensor<4x64xbf16>) {
  // expected-error @+1 {{'ds.concat' op result width is 192, expected 128}}
  %0 = ds.concat %a, %b : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x192xbf16>
  return
}

// -----

// Only ratios 1 and 2 have a compressor.
func.func @compressor_ratio(%x: tensor<4x64xbf16>, %wkv: tensor<64x64xbf16>, %n: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.compressor' op compress ratio must be 1 or 2, got 4}}
  %0 = ds.compressor %x, %wkv, %n {eps = 1.0e-06 : f64, ratio = 4 : i64} : tensor<4x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<1x64xbf16>
  return
}

// -----

// The ratio-2 compressor gates its group with a softmax.
func.func @compressor_ratio2_gate(%x: tensor<4x64xbf16>, %wkv: tensor<64x64xf32>, %n: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.compressor' op a ratio-2 compressor needs wgate}}
  %0 = ds.compressor %x, %wkv, %n {eps = 1.0e-06 : f64, ratio = 2 : i64} : tensor<4x64xbf16>, tensor<64x64xf32>, tensor<64xbf16> -> tensor<2x64xbf16>
  return
}

// -----

// The ratio-1 compressor has no gate.
func.func @compressor_ratio1_gate(%x: tensor<4x64xbf16>, %wkv: tensor<64x64xbf16>, %g: tensor<64x64xbf16>, %n: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.compressor' op a ratio-1 compressor has no wgate}}
  %0 = ds.compressor %x, %wkv, %n gate %g : tensor<64x64xbf16> {eps = 1.0e-06 : f64, ratio = 1 : i64} : tensor<4x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<4x64xbf16>
  return
}

// -----

// wkv is a matrix.
func.func @compressor_wkv_rank(%x: tensor<4x64xbf16>, %wkv: tensor<4096xbf16>, %n: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.compressor' op wkv must be a rank-2 tensor, got 'tensor<4096xbf16>'}}
  %0 = ds.compressor %x, %wkv, %n {eps = 1.0e-06 : f64, ratio = 1 : i64} : tensor<4x64xbf16>, tensor<4096xbf16>, tensor<64xbf16> -> tensor<4x64xbf16>
  return
}

// -----

// The latent has wkv's row count.
func.func @compressor_latent_width(%x: tensor<4x64xbf16>, %wkv: tensor<64x64xbf16>, %n: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.compressor' op latent width is 32, expected 64}}
  %0 = ds.compressor %x, %wkv, %n {eps = 1.0e-06 : f64, ratio = 1 : i64} : tensor<4x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<4x32xbf16>
  return
}

// -----

// The cache records have the latent's width.
func.func @compress_kv_width(%lat: tensor<2x32xbf16>) {
  // expected-error @+1 {{'ds.compress_kv' op latent width is 32, expected 64}}
  %0 = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x32xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
  return
}

// -----

// RoPE of the compressed latent fits in the latent.
func.func @compress_kv_rope(%lat: tensor<2x64xbf16>) {
  // expected-error @+1 {{'ds.compress_kv' op rope dim exceeds the latent width}}
  %0 = ds.compress_kv %lat {rope = #ds.rope<dim = 128, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
  return
}

// -----

// The indexer's wk is a matrix.
func.func @index_keys_wk_rank(%lat: tensor<2x64xbf16>, %wk: tensor<2048xbf16>, %n: tensor<32xbf16>) {
  // expected-error @+1 {{'ds.index_keys' op wk must be a rank-2 tensor, got 'tensor<2048xbf16>'}}
  %0 = ds.index_keys %lat, %wk, %n {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<2048xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
  return
}

// -----

// wk reads the whole latent.
func.func @index_keys_wk_columns(%lat: tensor<2x64xbf16>, %wk: tensor<32x32xbf16>, %n: tensor<32xbf16>) {
  // expected-error @+1 {{'ds.index_keys' op wk columns is 32, expected 64}}
  %0 = ds.index_keys %lat, %wk, %n {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x32xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
  return
}

// -----

// Index keys have wk's row count.
func.func @index_keys_width(%lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %n: tensor<32xbf16>) {
  // expected-error @+1 {{'ds.index_keys' op index key width is 64, expected 32}}
  %0 = ds.index_keys %lat, %wk, %n {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 64>
  return
}

// -----

// Index queries are [tokens, index heads, index_head_dim].
func.func @index_queries_rank(%qr: tensor<4x32xbf16>, %w: tensor<64x32xf8E4M3FN>, %s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.index_queries' op queries must be a rank-3 tensor, got 'tensor<4x64xbf16>'}}
  %0 = ds.index_queries %qr, %w, %s {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// Index queries are FP4 in 32-value tiles.
func.func @index_queries_head_dim(%qr: tensor<4x32xbf16>, %w: tensor<64x32xf8E4M3FN>, %s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.index_queries' op index_head_dim must be a multiple of 32 (FP4 tiles), got 16}}
  %0 = ds.index_queries %qr, %w, %s {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x4x16xbf16>
  return
}

// -----

// wq_b has one row per index head and channel.
func.func @index_queries_rows(%qr: tensor<4x32xbf16>, %w: tensor<32x32xf8E4M3FN>, %s: tensor<1x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.index_queries' op wq_b rows (index heads · index_head_dim) is 32, expected 64}}
  %0 = ds.index_queries %qr, %w, %s {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x32xbf16>, tensor<32x32xf8E4M3FN>, tensor<1x1xf8E8M0FNU>) -> tensor<4x2x32xbf16>
  return
}

// -----

// indexer_score reads rank-3 queries.
func.func @indexer_score_queries_rank(%q: tensor<4x64xbf16>, %hw: tensor<4x2xbf16>, %k: !ds.index_keys<ratio = 2, dim = 32>) {
  // expected-error @+1 {{'ds.indexer_score' op queries must be a rank-3 tensor, got 'tensor<4x64xbf16>'}}
  %0 = ds.indexer_score %q, %hw, %k {weight_scale = 0.125 : f64} : tensor<4x64xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<4x2xbf16>
  return
}

// -----

// Scores are [queries, compressed positions].
func.func @indexer_score_scores_rank(%q: tensor<4x2x32xbf16>, %hw: tensor<4x2xbf16>, %k: !ds.index_keys<ratio = 2, dim = 32>) {
  // expected-error @+1 {{'ds.indexer_score' op scores must be a rank-2 tensor, got 'tensor<8xbf16>'}}
  %0 = ds.indexer_score %q, %hw, %k {weight_scale = 0.125 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<8xbf16>
  return
}

// -----

// Queries and keys have the same width.
func.func @indexer_score_query_width(%q: tensor<4x2x64xbf16>, %hw: tensor<4x2xbf16>, %k: !ds.index_keys<ratio = 2, dim = 32>) {
  // expected-error @+1 {{'ds.indexer_score' op query width is 64, expected 32}}
  %0 = ds.indexer_score %q, %hw, %k {weight_scale = 0.125 : f64} : tensor<4x2x64xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<4x2xbf16>
  return
}

// -----

// One head weight per index head.
func.func @indexer_score_head_weights(%q: tensor<4x2x32xbf16>, %hw: tensor<4x4xbf16>, %k: !ds.index_keys<ratio = 2, dim = 32>) {
  // expected-error @+1 {{'ds.indexer_score' op head weight count is 4, expected 2}}
  %0 = ds.indexer_score %q, %hw, %k {weight_scale = 0.125 : f64} : tensor<4x2x32xbf16>, tensor<4x4xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<4x2xbf16>
  return
}

// -----

// Candidate blocks are chosen from a score matrix.
func.func @candidate_blocks_rank(%s: tensor<16xbf16>) {
  // expected-error @+1 {{'ds.candidate_blocks' op scores must be a rank-2 tensor, got 'tensor<16xbf16>'}}
  %0 = ds.candidate_blocks %s : tensor<16xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
  return
}

// -----

// Top-k is chosen from a score matrix.
func.func @indexer_topk_rank(%s: tensor<16xbf16>) {
  // expected-error @+1 {{'ds.indexer_topk' op scores must be a rank-2 tensor, got 'tensor<16xbf16>'}}
  %0 = ds.indexer_topk %s : tensor<16xbf16> -> !ds.topk<ratio = 2, k = 4>
  return
}

// -----

// A candidate pool restricts a top-k of its own ratio.
func.func @indexer_topk_candidates_ratio(%s: tensor<4x2xbf16>, %c: !ds.candidates<ratio = 1, blocks = 2, block_size = 2>) {
  // expected-error @+1 {{'ds.indexer_topk' op candidates of ratio 1 cannot restrict a top-k of ratio 2}}
  %0 = ds.indexer_topk %s within %c : tensor<4x2xbf16>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> -> !ds.topk<ratio = 2, k = 4>
  return
}

// -----

// Attention queries are [tokens, heads, head_dim].
func.func @sparse_attention_queries_rank(%q: tensor<4x128xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>) {
  // expected-error @+1 {{'ds.sparse_attention' op queries must be a rank-3 tensor, got 'tensor<4x128xbf16>'}}
  %0 = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<4x128xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x128xbf16>
  return
}

// -----

// Compressed KV is read through a top-k, never alone.
func.func @sparse_attention_kv_without_topk(%q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>, %kv: !ds.kv_cache<ratio = 2, dim = 64>) {
  // expected-error @+1 {{'ds.sparse_attention' op kv_cache and topk come together}}
  %0 = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 2, dim = 64> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
  return
}

// -----

// The window has head_dim channels.
func.func @sparse_attention_window_width(%q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 32>, %sink: tensor<2xf32>) {
  // expected-error @+1 {{'ds.sparse_attention' op window width is 32, expected 64}}
  %0 = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 32>, tensor<2xf32> -> tensor<4x2x64xbf16>
  return
}

// -----

// The compressed KV has head_dim channels.
func.func @sparse_attention_kv_width(%q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>, %kv: !ds.kv_cache<ratio = 2, dim = 128>, %t: !ds.topk<ratio = 2, k = 4>) {
  // expected-error @+1 {{'ds.sparse_attention' op kv cache width is 128, expected 64}}
  %0 = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 2, dim = 128> topk %t : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
  return
}

// -----

// The top-k indexes a cache of its own ratio.
func.func @sparse_attention_ratio(%q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>, %kv: !ds.kv_cache<ratio = 2, dim = 64>, %t: !ds.topk<ratio = 1, k = 4>) {
  // expected-error @+1 {{'ds.sparse_attention' op kv cache of ratio 2 read with a top-k of ratio 1}}
  %0 = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 2, dim = 64> topk %t : !ds.topk<ratio = 1, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
  return
}

// -----

// One attention sink per head.
func.func @sparse_attention_sink(%q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<4xf32>) {
  // expected-error @+1 {{'ds.sparse_attention' op sink size (heads) is 4, expected 2}}
  %0 = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<4xf32> -> tensor<4x2x64xbf16>
  return
}

// -----

// The grouped output reads [tokens, heads, head_dim].
func.func @grouped_output_rank(%o: tensor<4x128xbf16>, %a: tensor<64x64xbf16>, %b: tensor<64x64xf8E4M3FN>, %s: tensor<2x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.grouped_output' op input must be a rank-3 tensor, got 'tensor<4x128xbf16>'}}
  %0 = ds.grouped_output %o, %a, %b, %s {groups = 2 : i64} : (tensor<4x128xbf16>, tensor<64x64xbf16>, tensor<64x64xf8E4M3FN>, tensor<2x2xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// Heads split evenly into groups.
func.func @grouped_output_groups(%o: tensor<4x2x64xbf16>, %a: tensor<64x64xbf16>, %b: tensor<64x64xf8E4M3FN>, %s: tensor<2x2xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.grouped_output' op groups (3) must divide the head count (2)}}
  %0 = ds.grouped_output %o, %a, %b, %s {groups = 3 : i64} : (tensor<4x2x64xbf16>, tensor<64x64xbf16>, tensor<64x64xf8E4M3FN>, tensor<2x2xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// MoE
//===----------------------------------------------------------------------===//

// The gate weight is [experts, dim].
func.func @moe_gate_weight_rank(%x: tensor<4x64xbf16>, %w: tensor<256xbf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'ds.moe_gate' op weight must be a rank-2 tensor, got 'tensor<256xbf16>'}}
  %rw, %ids = ds.moe_gate %x, %w, %b {normalize = true, route_scale = 1.5 : f64, temperature = 1.0 : f64, topk = 2 : i64} : (tensor<4x64xbf16>, tensor<256xbf16>, tensor<4xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>)
  return
}

// -----

// A token routes to between 1 and all experts.
func.func @moe_gate_topk(%x: tensor<4x64xbf16>, %w: tensor<4x64xbf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'ds.moe_gate' op topk must be in [1, 4], got 5}}
  %rw, %ids = ds.moe_gate %x, %w, %b {normalize = true, route_scale = 1.5 : f64, temperature = 1.0 : f64, topk = 5 : i64} : (tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<4xf32>) -> (tensor<4x5xf32>, tensor<4x5xi32>)
  return
}

// -----

// topk expert ids per token.
func.func @moe_gate_ids(%x: tensor<4x64xbf16>, %w: tensor<4x64xbf16>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'ds.moe_gate' op expert id count is 3, expected 2}}
  %rw, %ids = ds.moe_gate %x, %w, %b {normalize = true, route_scale = 1.5 : f64, temperature = 1.0 : f64, topk = 2 : i64} : (tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<4xf32>) -> (tensor<4x2xf32>, tensor<4x3xi32>)
  return
}

// -----

// Routed w1 is stacked [experts, inter, dim/2].
func.func @moe_experts_w1_rank(%x: tensor<4x64xbf16>, %rw: tensor<4x2xf32>, %ids: tensor<4x2xi32>,
    %w1: tensor<128x32xi8>, %w1s: tensor<4x32x2xf8E8M0FNU>, %w3: tensor<4x32x32xi8>, %w3s: tensor<4x32x2xf8E8M0FNU>,
    %w2: tensor<4x64x16xi8>, %w2s: tensor<4x64x1xf8E8M0FNU>, %sw1: tensor<32x64xf8E4M3FN>, %sw1s: tensor<1x2xf8E8M0FNU>,
    %sw3: tensor<32x64xf8E4M3FN>, %sw3s: tensor<1x2xf8E8M0FNU>, %sw2: tensor<64x32xf8E4M3FN>, %sw2s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.moe_experts' op w1 must be a rank-3 tensor, got 'tensor<128x32xi8>'}}
  %0 = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<4x64xbf16>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<128x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x64x16xi8>, tensor<4x64x1xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// Routed w3 is stacked like w1.
func.func @moe_experts_w3_rank(%x: tensor<4x64xbf16>, %rw: tensor<4x2xf32>, %ids: tensor<4x2xi32>,
    %w1: tensor<4x32x32xi8>, %w1s: tensor<4x32x2xf8E8M0FNU>, %w3: tensor<128x32xi8>, %w3s: tensor<4x32x2xf8E8M0FNU>,
    %w2: tensor<4x64x16xi8>, %w2s: tensor<4x64x1xf8E8M0FNU>, %sw1: tensor<32x64xf8E4M3FN>, %sw1s: tensor<1x2xf8E8M0FNU>,
    %sw3: tensor<32x64xf8E4M3FN>, %sw3s: tensor<1x2xf8E8M0FNU>, %sw2: tensor<64x32xf8E4M3FN>, %sw2s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.moe_experts' op w3 must be a rank-3 tensor, got 'tensor<128x32xi8>'}}
  %0 = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<4x64xbf16>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<128x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x64x16xi8>, tensor<4x64x1xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// Routed w2 is stacked [experts, dim, inter/2].
func.func @moe_experts_w2_rank(%x: tensor<4x64xbf16>, %rw: tensor<4x2xf32>, %ids: tensor<4x2xi32>,
    %w1: tensor<4x32x32xi8>, %w1s: tensor<4x32x2xf8E8M0FNU>, %w3: tensor<4x32x32xi8>, %w3s: tensor<4x32x2xf8E8M0FNU>,
    %w2: tensor<256x16xi8>, %w2s: tensor<4x64x1xf8E8M0FNU>, %sw1: tensor<32x64xf8E4M3FN>, %sw1s: tensor<1x2xf8E8M0FNU>,
    %sw3: tensor<32x64xf8E4M3FN>, %sw3s: tensor<1x2xf8E8M0FNU>, %sw2: tensor<64x32xf8E4M3FN>, %sw2s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.moe_experts' op w2 must be a rank-3 tensor, got 'tensor<256x16xi8>'}}
  %0 = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<4x64xbf16>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<256x16xi8>, tensor<4x64x1xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// w1 packs the input's dim channels two per byte.
func.func @moe_experts_w1_k(%x: tensor<4x64xbf16>, %rw: tensor<4x2xf32>, %ids: tensor<4x2xi32>,
    %w1: tensor<4x32x64xi8>, %w1s: tensor<4x32x4xf8E8M0FNU>, %w3: tensor<4x32x64xi8>, %w3s: tensor<4x32x4xf8E8M0FNU>,
    %w2: tensor<4x64x16xi8>, %w2s: tensor<4x64x1xf8E8M0FNU>, %sw1: tensor<32x64xf8E4M3FN>, %sw1s: tensor<1x2xf8E8M0FNU>,
    %sw3: tensor<32x64xf8E4M3FN>, %sw3s: tensor<1x2xf8E8M0FNU>, %sw2: tensor<64x32xf8E4M3FN>, %sw2s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.moe_experts' op w1 K (packed FP4) is 128, expected 64}}
  %0 = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<4x64xbf16>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<4x32x64xi8>, tensor<4x32x4xf8E8M0FNU>, tensor<4x32x64xi8>, tensor<4x32x4xf8E8M0FNU>, tensor<4x64x16xi8>, tensor<4x64x1xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// w2 packs w1's inter channels two per byte.
func.func @moe_experts_w2_k(%x: tensor<4x64xbf16>, %rw: tensor<4x2xf32>, %ids: tensor<4x2xi32>,
    %w1: tensor<4x32x32xi8>, %w1s: tensor<4x32x2xf8E8M0FNU>, %w3: tensor<4x32x32xi8>, %w3s: tensor<4x32x2xf8E8M0FNU>,
    %w2: tensor<4x64x32xi8>, %w2s: tensor<4x64x2xf8E8M0FNU>, %sw1: tensor<32x64xf8E4M3FN>, %sw1s: tensor<1x2xf8E8M0FNU>,
    %sw3: tensor<32x64xf8E4M3FN>, %sw3s: tensor<1x2xf8E8M0FNU>, %sw2: tensor<64x32xf8E4M3FN>, %sw2s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.moe_experts' op w2 K (packed FP4) is 64, expected 32}}
  %0 = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<4x64xbf16>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x64x32xi8>, tensor<4x64x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// The FFN output has w2's row count.
func.func @moe_experts_output(%x: tensor<4x64xbf16>, %rw: tensor<4x2xf32>, %ids: tensor<4x2xi32>,
    %w1: tensor<4x32x32xi8>, %w1s: tensor<4x32x2xf8E8M0FNU>, %w3: tensor<4x32x32xi8>, %w3s: tensor<4x32x2xf8E8M0FNU>,
    %w2: tensor<4x64x16xi8>, %w2s: tensor<4x64x1xf8E8M0FNU>, %sw1: tensor<32x64xf8E4M3FN>, %sw1s: tensor<1x2xf8E8M0FNU>,
    %sw3: tensor<32x64xf8E4M3FN>, %sw3s: tensor<1x2xf8E8M0FNU>, %sw2: tensor<64x32xf8E4M3FN>, %sw2s: tensor<2x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.moe_experts' op output width is 32, expected 64}}
  %0 = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<4x64xbf16>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x64x16xi8>, tensor<4x64x1xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x32xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// Engram
//===----------------------------------------------------------------------===//

// N-grams have at least two tokens, hashed by at least one head.
func.func @engram_hash_ngram(%ids: tensor<4xi32>) {
  // expected-error @+1 {{'ds.engram_hash' op needs max_ngram >= 2 and heads >= 1}}
  %0 = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 1 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3>, primes = array<i64>, offsets = array<i64>} : (tensor<4xi32>) -> tensor<4x1x0xi64>
  return
}

// -----

// max_ngram multipliers per Engram layer.
func.func @engram_hash_multipliers(%ids: tensor<4xi32>) {
  // expected-error @+1 {{'ds.engram_hash' op needs 6 multipliers, got 3}}
  %0 = ds.engram_hash %ids {layers = array<i64: 0, 1>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19, 23, 29, 31, 37>, offsets = array<i64: 0, 11, 24, 41, 60, 83, 112, 143>} : (tensor<4xi32>) -> tensor<4x2x4xi64>
  return
}

// -----

// (max_ngram-1)·heads primes and offsets per Engram layer.
func.func @engram_hash_primes(%ids: tensor<4xi32>) {
  // expected-error @+1 {{'ds.engram_hash' op needs 4 primes and offsets}}
  %0 = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24>} : (tensor<4xi32>) -> tensor<4x1x4xi64>
  return
}

// -----

// Hash multipliers are odd.
func.func @engram_hash_even(%ids: tensor<4xi32>) {
  // expected-error @+1 {{'ds.engram_hash' op hash multipliers are odd, got 4}}
  %0 = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 4, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x1x4xi64>
  return
}

// -----

// Hashes are [tokens, layers, columns].
func.func @engram_hash_rank(%ids: tensor<4xi32>) {
  // expected-error @+1 {{'ds.engram_hash' op hashes must be a rank-3 tensor, got 'tensor<4x4xi64>'}}
  %0 = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x4xi64>
  return
}

// -----

// One hash row per Engram layer.
func.func @engram_hash_layers(%ids: tensor<4xi32>) {
  // expected-error @+1 {{'ds.engram_hash' op hash layers is 2, expected 1}}
  %0 = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x2x4xi64>
  return
}

// -----

// (max_ngram-1)·heads hash columns.
func.func @engram_hash_columns(%ids: tensor<4xi32>) {
  // expected-error @+1 {{'ds.engram_hash' op hash columns is 8, expected 4}}
  %0 = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x1x8xi64>
  return
}

// -----

// engram_lookup reads rank-3 hashes.
func.func @engram_lookup_rank(%h: tensor<4x4xi64>, %t: tensor<64x16xf8E4M3FN>, %s: tensor<64x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.engram_lookup' op hashes must be a rank-3 tensor, got 'tensor<4x4xi64>'}}
  %0 = ds.engram_lookup %h, %t, %s {slot = 0 : i64} : (tensor<4x4xi64>, tensor<64x16xf8E4M3FN>, tensor<64x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// The slot indexes the hashed Engram layers.
func.func @engram_lookup_slot(%h: tensor<4x1x4xi64>, %t: tensor<64x16xf8E4M3FN>, %s: tensor<64x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.engram_lookup' op slot 1 is outside the 1 hashed Engram layers}}
  %0 = ds.engram_lookup %h, %t, %s {slot = 1 : i64} : (tensor<4x1x4xi64>, tensor<64x16xf8E4M3FN>, tensor<64x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// The Engram table is a matrix.
func.func @engram_lookup_table(%h: tensor<4x1x4xi64>, %t: tensor<1024xf8E4M3FN>, %s: tensor<64x1xf8E8M0FNU>) {
  // expected-error @+1 {{'ds.engram_lookup' op table must be a rank-2 tensor, got 'tensor<1024xf8E4M3FN>'}}
  %0 = ds.engram_lookup %h, %t, %s {slot = 0 : i64} : (tensor<4x1x4xi64>, tensor<1024xf8E4M3FN>, tensor<64x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  return
}

// -----

// The gate acts on the rank-3 stream.
func.func @engram_gate_rank(%s: tensor<4x128xbf16>, %kv: tensor<4x192xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
  // expected-error @+1 {{'ds.engram_gate' op stream must be a rank-3 tensor, got 'tensor<4x128xbf16>'}}
  %0 = ds.engram_gate %s, %kv, %q, %k {eps = 1.0e-20 : f64} : (tensor<4x128xbf16>, tensor<4x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x128xbf16>
  return
}

// -----

// The gate keeps the stream type.
func.func @engram_gate_result(%s: tensor<4x2x64xbf16>, %kv: tensor<4x192xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
  // expected-error @+1 {{'ds.engram_gate' op result type must equal the stream type}}
  %0 = ds.engram_gate %s, %kv, %q, %k {eps = 1.0e-20 : f64} : (tensor<4x2x64xbf16>, tensor<4x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x2x64xf32>
  return
}

// -----

// The Engram kv holds one key per copy and the shared value.
func.func @engram_gate_kv(%s: tensor<4x2x64xbf16>, %kv: tensor<4x128xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
  // expected-error @+1 {{'ds.engram_gate' op kv width ((hc_mult+1)·dim: keys, then the shared value) is 128, expected 192}}
  %0 = ds.engram_gate %s, %kv, %q, %k {eps = 1.0e-20 : f64} : (tensor<4x2x64xbf16>, tensor<4x128xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x2x64xbf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// The CSA2 schedule of one layer (LayerVerifier.cpp)
//===----------------------------------------------------------------------===//

// A Full layer is its own kv and index source.
func.func @full_sources(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  // expected-error @+1 {{'ds.layer' op layer 1 is full: its kv and index source must be itself (1), got kv_source 0 and index_source 1}}
  %h1, %mix1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 0, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A Reindex layer is its own index source.
func.func @reindex_index_source(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  // expected-error @+1 {{'ds.layer' op layer 2 is reindex: its index source must be itself, got 1}}
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reindex, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A Reindex layer reads the keys of a KV source below it.
func.func @reindex_kv_source(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  // expected-error @+1 {{'ds.layer' op layer 3 reads kv source layer 3, which is not below it}}
  %h3, %mix3 = ds.layer 3 #ds.csa2<mode = reindex, ratio = 2, kv_source = 3, index_source = 3> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A Reuse layer reads sources below it.
func.func @reuse_sources(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  // expected-error @+1 {{'ds.layer' op layer 2 is reuse: its sources must be below it, got kv_source 1 and index_source 2}}
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 2> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// DSpark stages are outside the CED split.
func.func @dspark_decoder() {
  // expected-error @+1 {{'ds.layer' op DSpark stage 6 is neither encoder nor decoder}}
  ds.layer 6 #ds.csa2<mode = dspark> attributes {decoder} {
  }
  return
}

// -----

// A backbone layer yields the residual stream and the next mix.
func.func @layer_results(%s: tensor<4x2x64xbf16>) {
  // expected-error @+1 {{'ds.layer' op layer 0 must yield at least the residual stream and the next mix}}
  %h0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16> {
    ds.yield %s : tensor<4x2x64xbf16>
  }
  return
}

// -----

// A layer computes shared values of its own compress ratio.
func.func @produce_ratio(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<4x64xbf16>) {
  %h1, %mix1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.compress_kv' op produces kv cache of ratio 1 in layer 1 of compress ratio 2}}
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<4x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// Only a Full layer compresses KV.
func.func @produce_kv_reuse(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>) {
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.compress_kv' op only a Full layer computes kv cache; layer 2 is reuse}}
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// Only a Full layer computes index keys (a Reindex layer scores its source's).
func.func @produce_keys_reindex(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>) {
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reindex, ratio = 2, kv_source = 1, index_source = 2> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.index_keys' op only a Full layer computes index keys; layer 2 is reindex}}
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A Reuse layer reads its top-k; it does not compute one.
func.func @produce_topk_reuse(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %sc: tensor<4x2xbf16>) {
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.indexer_topk' op only an index source (full or reindex) computes top-k; layer 2 is reuse}}
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// The candidate source is a decoder layer; an encoder Full layer cannot be it.
func.func @candidates_encoder(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %sc: tensor<4x4xbf16>) {
  %h1, %mix1 = ds.layer 1 #ds.csa2<mode = full, ratio = 1, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.candidate_blocks' op the candidate source must be a decoder Full layer; layer 1 is an encoder full layer}}
    %c = ds.candidate_blocks %sc : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// The candidate source is a Full layer; a decoder Reindex layer cannot be it.
func.func @candidates_reindex(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %sc: tensor<4x4xbf16>) {
  %h4, %mix4 = ds.layer 4 #ds.csa2<mode = reindex, ratio = 1, kv_source = 3, index_source = 4> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {decoder} {
    // expected-error @+1 {{'ds.candidate_blocks' op the candidate source must be a decoder Full layer; layer 4 is a decoder reindex layer}}
    %c = ds.candidate_blocks %sc : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// Shared values come from a ds.layer, not from a function argument.
func.func @consume_unpublished(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>,
                               %kv: !ds.kv_cache<ratio = 2, dim = 64>, %t: !ds.topk<ratio = 2, k = 4>) {
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.sparse_attention' op in layer 2 reads kv cache that no ds.layer published}}
    %o = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 2, dim = 64> topk %t : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A layer reads shared values of its own compress ratio.
func.func @consume_ratio(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>, %sc: tensor<4x2xbf16>,
                         %q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>) {
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 1, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.sparse_attention' op layer 2 has compress ratio 1 but reads the kv cache of layer 1 with ratio 2}}
    %o = ds.sparse_attention %q, %w, %sink kv %kv1 : !ds.kv_cache<ratio = 2, dim = 64> topk %topk1 : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h1, %mix1 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A layer reads the kv cache of its kv source only (layer 2 is a Full layer,
// but not layer 3's source).
func.func @consume_kv_not_source(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>, %sc: tensor<4x2xbf16>,
                                 %q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>) {
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h2, %mix2, %kv2, %keys2, %topk2 = ds.layer 2 #ds.csa2<mode = full, ratio = 2, kv_source = 2, index_source = 2>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %h1, %mix1, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h3, %mix3 = ds.layer 3 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 2> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.sparse_attention' op layer 3 reads the kv cache of layer 2, but its kv source is layer 1}}
    %o = ds.sparse_attention %q, %w, %sink kv %kv2 : !ds.kv_cache<ratio = 2, dim = 64> topk %topk2 : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h2, %mix2 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// Only a Reindex layer scores another layer's index keys.
func.func @consume_keys_reuse(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>, %sc: tensor<4x2xbf16>,
                              %iq: tensor<4x2x32xbf16>, %hw: tensor<4x2xbf16>) {
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.indexer_score' op only a reindex layer scores another layer's index keys; layer 2 is reuse}}
    %s2 = ds.indexer_score %iq, %hw, %keys1 {weight_scale = 0.125 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<4x2xbf16>
    ds.yield %h1, %mix1 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A Reindex layer scores the keys of its kv source only.
func.func @consume_keys_not_source(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>, %sc: tensor<4x2xbf16>,
                                   %iq: tensor<4x2x32xbf16>, %hw: tensor<4x2xbf16>) {
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h2, %mix2, %kv2, %keys2, %topk2 = ds.layer 2 #ds.csa2<mode = full, ratio = 2, kv_source = 2, index_source = 2>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %h1, %mix1, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h3, %mix3, %topk3 = ds.layer 3 #ds.csa2<mode = reindex, ratio = 2, kv_source = 1, index_source = 3> -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.topk<ratio = 2, k = 4> {
    // expected-error @+1 {{'ds.indexer_score' op layer 3 reads the index keys of layer 2, but its kv source is layer 1}}
    %s3 = ds.indexer_score %iq, %hw, %keys2 {weight_scale = 0.125 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<4x2xbf16>
    %t = ds.indexer_topk %s3 : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %h2, %mix2, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.topk<ratio = 2, k = 4>
  }
  return
}

// -----

// Only a Reuse layer attends with another layer's top-k (a Reindex layer
// computes its own).
func.func @consume_topk_reindex(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>, %sc: tensor<4x2xbf16>,
                                %q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>) {
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reindex, ratio = 2, kv_source = 1, index_source = 2> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.sparse_attention' op only a reuse layer reads another layer's top-k; layer 2 is reindex}}
    %o = ds.sparse_attention %q, %w, %sink kv %kv1 : !ds.kv_cache<ratio = 2, dim = 64> topk %topk1 : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h1, %mix1 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A Reuse layer attends with the top-k of its index source only.
func.func @consume_topk_not_source(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %lat: tensor<2x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>, %sc: tensor<4x2xbf16>,
                                   %q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>) {
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h2, %mix2, %kv2, %keys2, %topk2 = ds.layer 2 #ds.csa2<mode = full, ratio = 2, kv_source = 2, index_source = 2>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %h1, %mix1, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h3, %mix3 = ds.layer 3 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    // expected-error @+1 {{'ds.sparse_attention' op layer 3 reads the top-k of layer 2, but its index source is layer 1}}
    %o = ds.sparse_attention %q, %w, %sink kv %kv1 : !ds.kv_cache<ratio = 2, dim = 64> topk %topk2 : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h2, %mix2 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// Only an index source reads the candidate pool. No ds op of a Reuse layer
// can take candidates without failing an earlier check (ds.indexer_topk
// would compute a top-k), so the read here is a func.call.
func.func private @use_candidates(!ds.candidates<ratio = 1, blocks = 2, block_size = 2>)
func.func @consume_candidates_reuse(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %sc: tensor<4x4xbf16>) {
  %h3, %mix3, %candidates3 = ds.layer 3 #ds.csa2<mode = full, ratio = 1, kv_source = 3, index_source = 3>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> attributes {decoder} {
    %c = ds.candidate_blocks %sc : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
    ds.yield %s, %m, %c : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
  }
  %h4, %mix4 = ds.layer 4 #ds.csa2<mode = reuse, ratio = 1, kv_source = 3, index_source = 3> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {decoder} {
    // expected-error @+1 {{'func.call' op only an index source scores within candidates; layer 4 is reuse}}
    func.call @use_candidates(%candidates3) : (!ds.candidates<ratio = 1, blocks = 2, block_size = 2>) -> ()
    ds.yield %h3, %mix3 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A layer marked engram adds the Engram value with ds.engram_gate.
func.func @engram_without_gate(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  // expected-error @+1 {{'ds.layer' op layer 0 is marked engram but has no ds.engram_gate}}
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {engram} {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// Only a layer marked engram has a ds.engram_gate.
func.func @gate_without_engram(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %kv: tensor<4x192xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
  // expected-error @+1 {{'ds.layer' op layer 0 has a ds.engram_gate but is not marked engram}}
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    %g = ds.engram_gate %s, %kv, %q, %k {eps = 1.0e-20 : f64} : (tensor<4x2x64xbf16>, tensor<4x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x2x64xbf16>
    ds.yield %g, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A Reuse layer attends with its source's top-k, not over the window alone.
func.func @reuse_without_topk(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %q: tensor<4x2x64xbf16>, %w: !ds.window<size = 8, dim = 64>, %sink: tensor<2xf32>) {
  // expected-error @+1 {{'ds.layer' op reuse layer 2 must attend with the top-k of layer 1}}
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    %o = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A layer publishes only shared values it computed itself (an SWA layer cannot
// pass on a kv cache it was handed).
func.func @publish_foreign_kv(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %kv: !ds.kv_cache<ratio = 4, dim = 64>) {
  %h0, %mix0, %kv0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 4, dim = 64> {
    // expected-error @+1 {{'ds.yield' op layer 0 publishes kv cache it did not compute}}
    ds.yield %s, %m, %kv : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 4, dim = 64>
  }
  return
}

// -----

// Graph-level tensors have rank 1 to 3: a scalar is rejected before any
// size check looks at its last dimension.
func.func @rope_on_scalar(%x: tensor<bf16>) {
  // expected-error @+1 {{'ds.rope' op operand #0 must be 1D/2D/3D tensor of any type values, but got 'tensor<bf16>'}}
  %r = ds.rope %x {rope = #ds.rope<dim = 2, theta = 1.0e4 : f64>} : (tensor<bf16>) -> tensor<bf16>
  return
}

// -----

//===----------------------------------------------------------------------===//
// CED: ds.replay_slice and ced_projection layers (ds-ced-split)
//===----------------------------------------------------------------------===//

// A replay keeps at least one row.
func.func @replay_no_tokens(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  // expected-error @+1 {{'ds.replay_slice' op replays at least one token, got tokens = 0}}
  %hs, %ms = ds.replay_slice %s, %m {tokens = 0 : i64} : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> (tensor<?x2x64xbf16>, tensor<?x2xf32>)
  return
}

// -----

// The stream is [S, hc, D].
func.func @replay_stream_rank(%s: tensor<?x128xbf16>, %m: tensor<?x2xf32>) {
  // expected-error @+1 {{'ds.replay_slice' op stream must be a rank-3 tensor, got 'tensor<?x128xbf16>'}}
  %hs, %ms = ds.replay_slice %s, %m {tokens = 8 : i64} : (tensor<?x128xbf16>, tensor<?x2xf32>) -> (tensor<?x128xbf16>, tensor<?x2xf32>)
  return
}

// -----

// The mix has one weight per mHC copy.
func.func @replay_mix_width(%s: tensor<?x2x64xbf16>, %m: tensor<?x4xf32>) {
  // expected-error @+1 {{'ds.replay_slice' op mix width (hc_mult) is 4, expected 2}}
  %hs, %ms = ds.replay_slice %s, %m {tokens = 8 : i64} : (tensor<?x2x64xbf16>, tensor<?x4xf32>) -> (tensor<?x2x64xbf16>, tensor<?x4xf32>)
  return
}

// -----

// The number of replayed rows, min(tokens, S), is only known at run time.
func.func @replay_static_rows(%s: tensor<16x2x64xbf16>, %m: tensor<16x2xf32>) {
  // expected-error @+1 {{'ds.replay_slice' op stream slice rows must be dynamic (min(tokens, S)), got 'tensor<8x2x64xbf16>'}}
  %hs, %ms = ds.replay_slice %s, %m {tokens = 8 : i64} : (tensor<16x2x64xbf16>, tensor<16x2xf32>) -> (tensor<8x2x64xbf16>, tensor<?x2xf32>)
  return
}

// -----

// A slice keeps the element type and the copies.
func.func @replay_slice_type(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  // expected-error @+1 {{'ds.replay_slice' op mix slice must keep the mix's element type and trailing dims: 'tensor<?x2xf32>' vs 'tensor<?x2xbf16>'}}
  %hs, %ms = ds.replay_slice %s, %m {tokens = 8 : i64} : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> (tensor<?x2x64xbf16>, tensor<?x2xbf16>)
  return
}

// -----

// Only a Full layer computes kv and keys, so only a Full layer has a projection.
func.func @projection_not_full(%kv: !ds.kv_cache<ratio = 1, dim = 64>, %keys: !ds.index_keys<ratio = 1, dim = 32>) {
  // expected-error @+1 {{'ds.layer' op the CED projection of layer 2 must be a Full layer (it computes kv and keys), got reuse}}
  %a, %b = ds.layer 2 #ds.csa2<mode = reuse, ratio = 1, kv_source = 1, index_source = 1> -> !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32> attributes {ced_projection} {
    ds.yield %kv, %keys : !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>
  }
  return
}

// -----

// A projection yields its kv cache and index keys, and no stream or mix.
func.func @projection_yields_stream(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  // expected-error @+1 {{'ds.layer' op the CED projection of layer 2 publishes exactly its kv cache and index keys, and no stream}}
  %h, %mix = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2> -> tensor<?x2x64xbf16>, tensor<?x2xf32> attributes {ced_projection} {
    ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
  }
  return
}

// -----

// The projection stops before the attention: that runs on the replayed rows.
func.func @projection_attends(%x: tensor<?x64xbf16>, %wkv: tensor<64x64xbf16>, %n: tensor<64xbf16>, %wk: tensor<32x64xbf16>,
                              %kn: tensor<32xbf16>, %q: tensor<?x2x64xbf16>, %w: !ds.window<size = 4, dim = 64>, %sink: tensor<2xf32>) {
  %kv2, %keys2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2>
      -> !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32> attributes {ced_projection} {
    %lat = ds.compressor %x, %wkv, %n {eps = 1.0e-6 : f64, ratio = 1 : i64} : tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<?x64xbf16>
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-6 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 1, dim = 32>
    // expected-error @+1 {{'ds.sparse_attention' op in the CED projection of layer 2: a projection has no attention and no MoE}}
    %o = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<?x2x64xbf16>, !ds.window<size = 4, dim = 64>, tensor<2xf32> -> tensor<?x2x64xbf16>
    ds.yield %kv, %keys : !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>
  }
  return
}

// -----

// Only the replayed layer with the projection's id scores the projected keys
// as a Full layer; any other Full layer computes its own.
func.func @projected_keys_other_layer(%x: tensor<?x64xbf16>, %wkv: tensor<64x64xbf16>, %n: tensor<64xbf16>, %wk: tensor<32x64xbf16>,
                                      %kn: tensor<32xbf16>, %iq: tensor<?x2x32xbf16>, %hw: tensor<?x2xbf16>, %s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  %kv2, %keys2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2>
      -> !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32> attributes {ced_projection} {
    %lat = ds.compressor %x, %wkv, %n {eps = 1.0e-6 : f64, ratio = 1 : i64} : tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<?x64xbf16>
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-6 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 1, dim = 32>
    ds.yield %kv, %keys : !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>
  }
  %h3, %mix3 = ds.layer 3 #ds.csa2<mode = full, ratio = 1, kv_source = 3, index_source = 3> -> tensor<?x2x64xbf16>, tensor<?x2xf32> attributes {decoder} {
    // expected-error @+1 {{'ds.indexer_score' op only a reindex layer scores another layer's index keys; layer 3 is full}}
    %sc = ds.indexer_score %iq, %hw, %keys2 {weight_scale = 0.125 : f64} : tensor<?x2x32xbf16>, tensor<?x2xbf16>, !ds.index_keys<ratio = 1, dim = 32> -> tensor<?x?xbf16>
    ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
  }
  return
}

// -----

// A fused kernel groups at least two ops.
func.func @fused_one_op(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
    // expected-error @+1 {{'ds.fused' op fused kernel 'norm' holds 1 op; a fusion groups at least two}}
    %n = ds.fused "norm" -> tensor<?x64xbf16> {
      %y = ds.rms_norm %x, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      ds.fused_yield %y : tensor<?x64xbf16>
    }
    ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
  }
  return
}

// -----

func.func @fused_bad_name(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
    // expected-error @+1 {{'ds.fused' op kernel name 'Norm Twice' must be lower_snake_case (letters, digits, '_')}}
    %n = ds.fused "Norm Twice" -> tensor<?x64xbf16> {
      %y = ds.rms_norm %x, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      %z = ds.rms_norm %y, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      ds.fused_yield %z : tensor<?x64xbf16>
    }
    ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
  }
  return
}

// -----

func.func @fused_bad_executable(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
    // expected-error @+1 {{'ds.fused' op executable name 'Norm-Twice' must be lower_snake_case (letters, digits, '_')}}
    %n = ds.fused "norm_twice" -> tensor<?x64xbf16> attributes {executable = "Norm-Twice"} {
      %y = ds.rms_norm %x, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      %z = ds.rms_norm %y, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      ds.fused_yield %z : tensor<?x64xbf16>
    }
    ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
  }
  return
}

// -----

func.func @fused_yield_type(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>, %s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
    %n = ds.fused "norm_twice" -> tensor<?x64xf32> {
      %y = ds.rms_norm %x, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      %z = ds.rms_norm %y, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      // expected-error @+1 {{'ds.fused_yield' op value 0 has type 'tensor<?x64xbf16>' but result 0 is 'tensor<?x64xf32>'}}
      ds.fused_yield %z : tensor<?x64xbf16>
    }
    ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
  }
  return
}

// -----

// Weights stay ds.weight ops of the layer.
module {
  ds.parameter @w weight : tensor<64xbf16>
  func.func @fused_weight(%x: tensor<?x64xbf16>, %s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
      %n = ds.fused "norm_twice" -> tensor<?x64xbf16> {
        // expected-error @+1 {{'ds.weight' op cannot sit in the fused kernel 'norm_twice' (weights stay in the layer, groups do not nest)}}
        %w = ds.weight @w : tensor<64xbf16>
        %y = ds.rms_norm %x, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
        %z = ds.rms_norm %y, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
        ds.fused_yield %z : tensor<?x64xbf16>
      }
      ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    return
  }
}

// -----

// A fused kernel lives in a layer.
func.func @fused_outside_layer(%x: tensor<?x64xbf16>, %w: tensor<64xbf16>) {
  // expected-error @+1 {{'ds.fused' op expects parent op 'ds.layer'}}
  %n = ds.fused "norm_twice" -> tensor<?x64xbf16> {
    %y = ds.rms_norm %x, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
    %z = ds.rms_norm %y, %w {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
    ds.fused_yield %z : tensor<?x64xbf16>
  }
  return
}
