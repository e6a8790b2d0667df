// RUN: dsc-opt %s --split-input-file | dsc-opt --split-input-file | FileCheck %s
// RUN: dsc-opt %s --split-input-file --mlir-print-op-generic | dsc-opt --split-input-file | FileCheck %s

// Round trip of every op, type and attribute of the ds dialect on a toy model:
// dim 64, 2 mHC copies, 2 attention heads of head_dim 64 (RoPE on the last
// 16 channels), 2 index heads of index_head_dim 32, 4 routed experts, 4 tokens.

// Checkpoint structure: ds.parameter of every kind, ds.weight, embedding,
// mHC expansion, final norm and head.

// CHECK:       ds.parameter @embed.weight weight : tensor<128x64xbf16>
// CHECK-NEXT:  ds.parameter @"layers.0.ffn.experts.{e}.w1.weight" fp4_packed : tensor<4x32x32xi8>
// CHECK-NEXT:  ds.parameter @"layers.0.ffn.experts.{e}.w1.scale" scale : tensor<4x32x2xf8E8M0FNU>
// CHECK-NEXT:  ds.parameter @norm.weight weight : tensor<64xbf16>
// CHECK-NEXT:  ds.parameter @head.weight weight : tensor<128x64xbf16>
ds.parameter @embed.weight weight : tensor<128x64xbf16>
ds.parameter @"layers.0.ffn.experts.{e}.w1.weight" fp4_packed : tensor<4x32x32xi8>
ds.parameter @"layers.0.ffn.experts.{e}.w1.scale" scale : tensor<4x32x2xf8E8M0FNU>
ds.parameter @norm.weight weight : tensor<64xbf16>
ds.parameter @head.weight weight : tensor<128x64xbf16>

// CHECK-LABEL: func.func @checkpoint
func.func @checkpoint(%ids: tensor<4xi32>) -> (tensor<1x128xf32>, tensor<4x128xf32>) {
  // CHECK:      [[TABLE:%.*]] = ds.weight @embed.weight : tensor<128x64xbf16>
  // CHECK-NEXT: ds.weight @"layers.0.ffn.experts.{e}.w1.weight" : tensor<4x32x32xi8>
  // CHECK-NEXT: [[EMB:%.*]] = ds.embed %{{.*}}, [[TABLE]] : (tensor<4xi32>, tensor<128x64xbf16>) -> tensor<4x64xbf16>
  // CHECK-NEXT: [[S:%.*]] = ds.hc_expand [[EMB]] {copies = 2 : i64} : (tensor<4x64xbf16>) -> tensor<4x2x64xbf16>
  // CHECK-NEXT: [[M:%.*]] = ds.hc_identity_mix [[S]] : (tensor<4x2x64xbf16>) -> tensor<4x2xf32>
  // CHECK-NEXT: [[X:%.*]] = ds.hc_pre [[S]], [[M]] : (tensor<4x2x64xbf16>, tensor<4x2xf32>) -> tensor<4x64xbf16>
  // CHECK-NEXT: [[NW:%.*]] = ds.weight @norm.weight : tensor<64xbf16>
  // CHECK-NEXT: [[N:%.*]] = ds.rms_norm [[X]], [[NW]] {eps = 9.9999999999999995E-7 : f64} : (tensor<4x64xbf16>, tensor<64xbf16>) -> tensor<4x64xbf16>
  // CHECK-NEXT: [[HW:%.*]] = ds.weight @head.weight : tensor<128x64xbf16>
  // CHECK-NEXT: ds.head [[N]], [[HW]] {last_only} : (tensor<4x64xbf16>, tensor<128x64xbf16>) -> tensor<1x128xf32>
  // CHECK-NEXT: ds.head [[N]], [[HW]] : (tensor<4x64xbf16>, tensor<128x64xbf16>) -> tensor<4x128xf32>
  %table = ds.weight @embed.weight : tensor<128x64xbf16>
  %w1 = ds.weight @"layers.0.ffn.experts.{e}.w1.weight" : tensor<4x32x32xi8>
  %emb = ds.embed %ids, %table : (tensor<4xi32>, tensor<128x64xbf16>) -> tensor<4x64xbf16>
  %stream = ds.hc_expand %emb {copies = 2 : i64} : (tensor<4x64xbf16>) -> tensor<4x2x64xbf16>
  %mix = ds.hc_identity_mix %stream : (tensor<4x2x64xbf16>) -> tensor<4x2xf32>
  %x = ds.hc_pre %stream, %mix : (tensor<4x2x64xbf16>, tensor<4x2xf32>) -> tensor<4x64xbf16>
  %nw = ds.weight @norm.weight : tensor<64xbf16>
  %n = ds.rms_norm %x, %nw {eps = 1.0e-06 : f64} : (tensor<4x64xbf16>, tensor<64xbf16>) -> tensor<4x64xbf16>
  %hw = ds.weight @head.weight : tensor<128x64xbf16>
  %last = ds.head %n, %hw {last_only} : (tensor<4x64xbf16>, tensor<128x64xbf16>) -> tensor<1x128xf32>
  %all = ds.head %n, %hw : (tensor<4x64xbf16>, tensor<128x64xbf16>) -> tensor<4x128xf32>
  return %last, %all : tensor<1x128xf32>, tensor<4x128xf32>
}

// -----

// Linear layers in each quantisation (#ds.quant), a rank-3 (heads split)
// result, RoPE with and without YaRN, inverse and strided.

// CHECK-LABEL: func.func @linear_and_rope
func.func @linear_and_rope(%x: tensor<4x64xbf16>, %xf: tensor<4x64xf32>,
                           %wb: tensor<32x64xbf16>, %wf: tensor<32x64xf32>,
                           %w8: tensor<32x64xf8E4M3FN>, %s8: tensor<1x2xf8E8M0FNU>,
                           %w4: tensor<32x32xi8>, %s4: tensor<32x2xf8E8M0FNU>,
                           %wq: tensor<128x64xf8E4M3FN>, %sq: tensor<4x2xf8E8M0FNU>) {
  // CHECK: ds.linear bf16 %{{.*}}, %{{.*}} : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  // CHECK: ds.linear fp32 %{{.*}}, %{{.*}} : tensor<4x64xf32>, tensor<32x64xf32> -> tensor<4x32xf32>
  // CHECK: ds.linear fp8 %{{.*}}, %{{.*}} scale %{{.*}} : tensor<4x64xbf16>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU> -> tensor<4x32xbf16>
  // CHECK: ds.linear fp4 %{{.*}}, %{{.*}} scale %{{.*}} : tensor<4x64xbf16>, tensor<32x32xi8>, tensor<32x2xf8E8M0FNU> -> tensor<4x32xbf16>
  // CHECK: [[Q:%.*]] = ds.linear fp8 %{{.*}} : tensor<4x64xbf16>, tensor<128x64xf8E4M3FN>, tensor<4x2xf8E8M0FNU> -> tensor<4x2x64xbf16>
  %0 = ds.linear bf16 %x, %wb : tensor<4x64xbf16>, tensor<32x64xbf16> -> tensor<4x32xbf16>
  %1 = ds.linear fp32 %xf, %wf : tensor<4x64xf32>, tensor<32x64xf32> -> tensor<4x32xf32>
  %2 = ds.linear fp8 %x, %w8 scale %s8 : tensor<4x64xbf16>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU> -> tensor<4x32xbf16>
  %3 = ds.linear fp4 %x, %w4 scale %s4 : tensor<4x64xbf16>, tensor<32x32xi8>, tensor<32x2xf8E8M0FNU> -> tensor<4x32xbf16>
  %q = ds.linear fp8 %x, %wq scale %sq : tensor<4x64xbf16>, tensor<128x64xf8E4M3FN>, tensor<4x2xf8E8M0FNU> -> tensor<4x2x64xbf16>
  // CHECK: [[R:%.*]] = ds.rope [[Q]] {rope = #ds.rope<dim = 16, theta = 1.000000e+04 : f64>} : (tensor<4x2x64xbf16>) -> tensor<4x2x64xbf16>
  // CHECK: ds.rope [[R]] {inverse, rope = #ds.rope<dim = 16, theta = 1.000000e+04 : f64>} : (tensor<4x2x64xbf16>) -> tensor<4x2x64xbf16>
  // CHECK: ds.rope %{{.*}} {position_stride = 2 : i64, rope = #ds.rope<dim = 16, theta = 1.600000e+05 : f64, original_seq_len = 64, factor = 1.600000e+01 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>} : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %r = ds.rope %q {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x2x64xbf16>) -> tensor<4x2x64xbf16>
  %ri = ds.rope %r {inverse, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x2x64xbf16>) -> tensor<4x2x64xbf16>
  %ry = ds.rope %x {position_stride = 2 : i64, rope = #ds.rope<dim = 16, theta = 1.6e5 : f64, original_seq_len = 64, factor = 16.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64>} : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  // The default position_stride (1) is not printed.
  // CHECK: ds.rope %{{.*}} {rope = #ds.rope<dim = 16, theta = 1.000000e+04 : f64>} : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  %rd = ds.rope %x {position_stride = 1 : i64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x64xbf16>) -> tensor<4x64xbf16>
  return
}

// -----

// mHC mixes and the MoE FFN.

// CHECK-LABEL: func.func @mhc_moe
func.func @mhc_moe(%stream: tensor<4x2x64xbf16>, %fn: tensor<8x128xf32>, %scale: tensor<3xf32>, %base: tensor<8xf32>,
                   %gw: tensor<4x64xbf16>, %gb: tensor<4xf32>,
                   %w1: tensor<4x32x32xi8>, %w1s: tensor<4x32x2xf8E8M0FNU>,
                   %w3: tensor<4x32x32xi8>, %w3s: tensor<4x32x2xf8E8M0FNU>,
                   %w2: tensor<4x64x16xi8>, %w2s: tensor<4x64x1xf8E8M0FNU>,
                   %sw1: tensor<32x64xf8E4M3FN>, %sw1s: tensor<1x2xf8E8M0FNU>,
                   %sw3: tensor<32x64xf8E4M3FN>, %sw3s: tensor<1x2xf8E8M0FNU>,
                   %sw2: tensor<64x32xf8E4M3FN>, %sw2s: tensor<2x1xf8E8M0FNU>) -> tensor<4x2x64xbf16> {
  // CHECK: %pre, %post, %comb = ds.hc_mixes %{{.*}} {eps = 9.9999999999999995E-7 : f64, norm_eps = 9.9999999999999995E-21 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x2x64xbf16>, tensor<8x128xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  // CHECK: [[X:%.*]] = ds.hc_pre %{{.*}}, %pre : (tensor<4x2x64xbf16>, tensor<4x2xf32>) -> tensor<4x64xbf16>
  // CHECK: %route_weights, %expert_ids = ds.moe_gate [[X]], %{{.*}}, %{{.*}} {normalize = true, route_scale = 1.500000e+00 : f64, temperature = 1.000000e+00 : f64, topk = 2 : i64} : (tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<4xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>)
  // CHECK: [[Y:%.*]] = ds.moe_experts [[X]], %route_weights, %expert_ids, {{.*}} {swiglu_limit = 1.000000e+01 : f64} : ({{.*}}) -> tensor<4x64xbf16>
  // CHECK: ds.hc_post [[Y]], %{{.*}}, %post, %comb : (tensor<4x64xbf16>, tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x2x2xf32>) -> tensor<4x2x64xbf16>
  %pre, %post, %comb = ds.hc_mixes %stream, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64, sinkhorn_iters = 20 : i64} : (tensor<4x2x64xbf16>, tensor<8x128xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<4x2xf32>, tensor<4x2xf32>, tensor<4x2x2xf32>)
  %x = ds.hc_pre %stream, %pre : (tensor<4x2x64xbf16>, tensor<4x2xf32>) -> tensor<4x64xbf16>
  %rw, %ids = ds.moe_gate %x, %gw, %gb {normalize = true, route_scale = 1.5 : f64, temperature = 1.0 : f64, topk = 2 : i64} : (tensor<4x64xbf16>, tensor<4x64xbf16>, tensor<4xf32>) -> (tensor<4x2xf32>, tensor<4x2xi32>)
  %y = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<4x64xbf16>, tensor<4x2xf32>, tensor<4x2xi32>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x32x32xi8>, tensor<4x32x2xf8E8M0FNU>, tensor<4x64x16xi8>, tensor<4x64x1xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<32x64xf8E4M3FN>, tensor<1x2xf8E8M0FNU>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  %out = ds.hc_post %y, %stream, %post, %comb : (tensor<4x64xbf16>, tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x2x2xf32>) -> tensor<4x2x64xbf16>
  return %out : tensor<4x2x64xbf16>
}

// -----

// Engram: the hash at the top of the phase, lookup and gate in an SWA layer
// marked engram; the layer results are named after the layer (%h0, %mix0).

// CHECK-LABEL: func.func @engram
func.func @engram(%ids: tensor<4xi32>, %stream: tensor<4x2x64xbf16>, %mix: tensor<4x2xf32>,
                  %table: tensor<64x16xf8E4M3FN>, %tscale: tensor<64x1xf8E8M0FNU>,
                  %wkv: tensor<192x64xbf16>, %qw: tensor<2x64xbf16>, %kw: tensor<2x64xbf16>)
    -> (tensor<4x2x64xbf16>, tensor<4x2xf32>) {
  // CHECK: [[HASH:%.*]] = ds.engram_hash %{{.*}} {compressed_vocab_size = 100 : i64, heads = 2 : i64, layers = array<i64: 0>, max_ngram = 3 : i64, multipliers = array<i64: 3, 5, 7>, offsets = array<i64: 0, 11, 24, 41>, pad_id = 2 : i64, primes = array<i64: 11, 13, 17, 19>} : (tensor<4xi32>) -> tensor<4x1x4xi64>
  // CHECK: %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {engram} {
  // CHECK:   [[ROWS:%.*]] = ds.engram_lookup [[HASH]], %{{.*}}, %{{.*}} {slot = 0 : i64} : (tensor<4x1x4xi64>, tensor<64x16xf8E4M3FN>, tensor<64x1xf8E8M0FNU>) -> tensor<4x64xbf16>
  // CHECK:   [[KV:%.*]] = ds.linear bf16 [[ROWS]]
  // CHECK:   [[G:%.*]] = ds.engram_gate %{{.*}}, [[KV]], %{{.*}}, %{{.*}} {eps = 9.9999999999999995E-21 : f64} : (tensor<4x2x64xbf16>, tensor<4x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x2x64xbf16>
  // CHECK:   ds.yield [[G]], %{{.*}} : tensor<4x2x64xbf16>, tensor<4x2xf32>
  // CHECK: return %h0, %mix0
  %hash = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x1x4xi64>
  %h, %m = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {engram} {
    %rows = ds.engram_lookup %hash, %table, %tscale {slot = 0 : i64} : (tensor<4x1x4xi64>, tensor<64x16xf8E4M3FN>, tensor<64x1xf8E8M0FNU>) -> tensor<4x64xbf16>
    %kv = ds.linear bf16 %rows, %wkv : tensor<4x64xbf16>, tensor<192x64xbf16> -> tensor<4x192xbf16>
    %g = ds.engram_gate %stream, %kv, %qw, %kw {eps = 1.0e-20 : f64} : (tensor<4x2x64xbf16>, tensor<4x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x2x64xbf16>
    ds.yield %g, %mix : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return %h, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
}

// -----

// The CSA2 schedule: SWA layer 0; Full layer 1 (ratio 2) publishing kv,
// index keys and top-k; Reuse layer 2 reading them; decoder Full layer 3
// (ratio 1), the candidate source and a DSpark target; Reindex layer 4
// scoring layer 3's keys within its candidates; Reuse layer 5 reading layer
// 3's KV with layer 4's top-k.

// CHECK-LABEL: func.func @schedule
func.func @schedule(%stream: tensor<4x2x64xbf16>, %mix: tensor<4x2xf32>, %x: tensor<4x64xbf16>,
                    %q: tensor<4x2x64xbf16>, %sink: tensor<2xf32>,
                    %qr: tensor<4x32xbf16>, %iqw: tensor<64x32xf8E4M3FN>, %iqs: tensor<2x1xf8E8M0FNU>,
                    %hw: tensor<4x2xbf16>,
                    %wkv2: tensor<64x64xf32>, %wgate2: tensor<64x64xf32>, %wkv1: tensor<64x64xbf16>,
                    %cnorm: tensor<64xbf16>, %wk: tensor<32x64xbf16>, %knorm: tensor<32xbf16>,
                    %woa: tensor<64x64xbf16>, %wob: tensor<64x64xf8E4M3FN>, %wobs: tensor<2x2xf8E8M0FNU>)
    -> (tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x128xbf16>) {
  // CHECK: %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
  // CHECK:   [[W:%.*]] = ds.window_kv %{{.*}} : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
  // CHECK:   [[O:%.*]] = ds.sparse_attention %{{.*}}, [[W]], %{{.*}} {scale = 1.250000e-01 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
  // CHECK:   ds.grouped_output [[O]], %{{.*}}, %{{.*}}, %{{.*}} {groups = 2 : i64} : (tensor<4x2x64xbf16>, tensor<64x64xbf16>, tensor<64x64xf8E4M3FN>, tensor<2x2xf8E8M0FNU>) -> tensor<4x64xbf16>
  // CHECK:   ds.yield
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa, ratio = 0, kv_source = -1, index_source = -1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
    %o = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    %y = ds.grouped_output %o, %woa, %wob, %wobs {groups = 2 : i64} : (tensor<4x2x64xbf16>, tensor<64x64xbf16>, tensor<64x64xf8E4M3FN>, tensor<2x2xf8E8M0FNU>) -> tensor<4x64xbf16>
    ds.yield %stream, %mix : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }

  // CHECK: %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
  // CHECK:   [[W:%.*]] = ds.window_kv
  // CHECK:   [[LAT:%.*]] = ds.compressor %{{.*}}, %{{.*}}, %{{.*}} gate %{{.*}} : tensor<64x64xf32> {eps = 9.9999999999999995E-7 : f64, ratio = 2 : i64} : tensor<4x64xbf16>, tensor<64x64xf32>, tensor<64xbf16> -> tensor<2x64xbf16>
  // CHECK:   [[KV:%.*]] = ds.compress_kv [[LAT]] {rope = #ds.rope<dim = 16, theta = 1.600000e+05 : f64, original_seq_len = 64, factor = 1.600000e+01 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
  // CHECK:   [[KEYS:%.*]] = ds.index_keys [[LAT]], %{{.*}}, %{{.*}} {eps = 9.9999999999999995E-7 : f64, rope = #ds.rope<{{.*}}>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
  // CHECK:   [[IQ:%.*]] = ds.index_queries %{{.*}}, %{{.*}}, %{{.*}} {rope = #ds.rope<{{.*}}>} : (tensor<4x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x2x32xbf16>
  // CHECK:   [[SC:%.*]] = ds.indexer_score [[IQ]], %{{.*}}, [[KEYS]] {weight_scale = 1.250000e-01 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<4x2xbf16>
  // CHECK:   [[TK:%.*]] = ds.indexer_topk [[SC]] : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
  // CHECK:   ds.sparse_attention %{{.*}}, [[W]], %{{.*}} kv [[KV]] : !ds.kv_cache<ratio = 2, dim = 64> topk [[TK]] : !ds.topk<ratio = 2, k = 4> {scale = 1.250000e-01 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
  // CHECK:   ds.yield %{{.*}}, %{{.*}}, [[KV]], [[KEYS]], [[TK]] : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
    %lat = ds.compressor %x, %wkv2, %cnorm gate %wgate2 : tensor<64x64xf32> {eps = 1.0e-06 : f64, ratio = 2 : i64} : tensor<4x64xbf16>, tensor<64x64xf32>, tensor<64xbf16> -> tensor<2x64xbf16>
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.6e5 : f64, original_seq_len = 64, factor = 16.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64>} : tensor<2x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %knorm {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.6e5 : f64, original_seq_len = 64, factor = 16.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64>} : tensor<2x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %iq = ds.index_queries %qr, %iqw, %iqs {rope = #ds.rope<dim = 16, theta = 1.6e5 : f64, original_seq_len = 64, factor = 16.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64>} : (tensor<4x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x2x32xbf16>
    %s = ds.indexer_score %iq, %hw, %keys {weight_scale = 0.125 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<4x2xbf16>
    %t = ds.indexer_topk %s : tensor<4x2xbf16> -> !ds.topk<ratio = 2, k = 4>
    %o = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 2, dim = 64> topk %t : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h0, %mix0, %kv, %keys, %t : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }

  // CHECK: %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
  // CHECK:   ds.sparse_attention %{{.*}}, %{{.*}}, %{{.*}} kv %kv1 : !ds.kv_cache<ratio = 2, dim = 64> topk %topk1 : !ds.topk<ratio = 2, k = 4>
  // CHECK:   ds.yield %h1, %mix1
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
    %o = ds.sparse_attention %q, %w, %sink kv %kv1 : !ds.kv_cache<ratio = 2, dim = 64> topk %topk1 : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h1, %mix1 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }

  // CHECK: %h3, %mix3, %kv3, %keys3, %topk3, %candidates3, %capture3 = ds.layer 3 #ds.csa2<mode = full, ratio = 1, kv_source = 3, index_source = 3> -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>, !ds.topk<ratio = 1, k = 4>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2>, tensor<4x64xbf16> attributes {decoder, dspark_target} {
  // CHECK:   [[CAP:%.*]] = ds.copy_mean %h2 : (tensor<4x2x64xbf16>) -> tensor<4x64xbf16>
  // CHECK:   ds.compressor %{{.*}}, %{{.*}}, %{{.*}} {eps = 9.9999999999999995E-7 : f64, ratio = 1 : i64} : tensor<4x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<4x64xbf16>
  // CHECK:   [[SC:%.*]] = ds.indexer_score
  // CHECK:   [[C:%.*]] = ds.candidate_blocks [[SC]] : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
  // CHECK:   ds.indexer_topk [[SC]] within [[C]] : tensor<4x4xbf16>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> -> !ds.topk<ratio = 1, k = 4>
  // CHECK:   ds.yield {{.*}}, [[C]], [[CAP]] :
  %h3, %mix3, %kv3, %keys3, %topk3, %cand3, %cap3 = ds.layer 3 #ds.csa2<mode = full, ratio = 1, kv_source = 3, index_source = 3>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>, !ds.topk<ratio = 1, k = 4>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2>, tensor<4x64xbf16>
      attributes {decoder, dspark_target} {
    %cap = ds.copy_mean %h2 : (tensor<4x2x64xbf16>) -> tensor<4x64xbf16>
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
    %lat = ds.compressor %x, %wkv1, %cnorm {eps = 1.0e-06 : f64, ratio = 1 : i64} : tensor<4x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<4x64xbf16>
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<4x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
    %keys = ds.index_keys %lat, %wk, %knorm {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<4x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 1, dim = 32>
    %iq = ds.index_queries %qr, %iqw, %iqs {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x2x32xbf16>
    %s = ds.indexer_score %iq, %hw, %keys {weight_scale = 0.125 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 1, dim = 32> -> tensor<4x4xbf16>
    %c = ds.candidate_blocks %s : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
    %t = ds.indexer_topk %s within %c : tensor<4x4xbf16>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> -> !ds.topk<ratio = 1, k = 4>
    %o = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 1, dim = 64> topk %t : !ds.topk<ratio = 1, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h2, %mix2, %kv, %keys, %t, %c, %cap : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>, !ds.topk<ratio = 1, k = 4>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2>, tensor<4x64xbf16>
  }

  // CHECK: %h4, %mix4, %topk4, %capture4 = ds.layer 4 #ds.csa2<mode = reindex, ratio = 1, kv_source = 3, index_source = 4> -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.topk<ratio = 1, k = 4>, tensor<4x64xbf16> attributes {decoder, dspark_target} {
  // CHECK:   [[SC:%.*]] = ds.indexer_score %{{.*}}, %{{.*}}, %keys3 {weight_scale = 1.250000e-01 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 1, dim = 32> -> tensor<4x4xbf16>
  // CHECK:   [[TK:%.*]] = ds.indexer_topk [[SC]] within %candidates3 :
  // CHECK:   ds.sparse_attention %{{.*}}, %{{.*}}, %{{.*}} kv %kv3 : !ds.kv_cache<ratio = 1, dim = 64> topk [[TK]] :
  %h4, %mix4, %topk4, %cap4 = ds.layer 4 #ds.csa2<mode = reindex, ratio = 1, kv_source = 3, index_source = 4>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.topk<ratio = 1, k = 4>, tensor<4x64xbf16> attributes {decoder, dspark_target} {
    %cap = ds.copy_mean %h3 : (tensor<4x2x64xbf16>) -> tensor<4x64xbf16>
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
    %iq = ds.index_queries %qr, %iqw, %iqs {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<4x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<4x2x32xbf16>
    %s = ds.indexer_score %iq, %hw, %keys3 {weight_scale = 0.125 : f64} : tensor<4x2x32xbf16>, tensor<4x2xbf16>, !ds.index_keys<ratio = 1, dim = 32> -> tensor<4x4xbf16>
    %t = ds.indexer_topk %s within %cand3 : tensor<4x4xbf16>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> -> !ds.topk<ratio = 1, k = 4>
    %o = ds.sparse_attention %q, %w, %sink kv %kv3 : !ds.kv_cache<ratio = 1, dim = 64> topk %t : !ds.topk<ratio = 1, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h3, %mix3, %t, %cap : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.topk<ratio = 1, k = 4>, tensor<4x64xbf16>
  }

  // CHECK: %h5, %mix5 = ds.layer 5 #ds.csa2<mode = reuse, ratio = 1, kv_source = 3, index_source = 4> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {decoder} {
  // CHECK:   ds.sparse_attention %{{.*}}, %{{.*}}, %{{.*}} kv %kv3 : !ds.kv_cache<ratio = 1, dim = 64> topk %topk4 : !ds.topk<ratio = 1, k = 4>
  %h5, %mix5 = ds.layer 5 #ds.csa2<mode = reuse, ratio = 1, kv_source = 3, index_source = 4> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {decoder} {
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
    %o = ds.sparse_attention %q, %w, %sink kv %kv3 : !ds.kv_cache<ratio = 1, dim = 64> topk %topk4 : !ds.topk<ratio = 1, k = 4> {scale = 0.125 : f64} : tensor<4x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<4x2x64xbf16>
    ds.yield %h4, %mix4 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }

  // CHECK: [[CAT:%.*]] = ds.concat %capture3, %capture4 : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x128xbf16>
  // CHECK: return %h5, %mix5, [[CAT]]
  %cat = ds.concat %cap3, %cap4 : (tensor<4x64xbf16>, tensor<4x64xbf16>) -> tensor<4x128xbf16>
  return %h5, %mix5, %cat : tensor<4x2x64xbf16>, tensor<4x2xf32>, tensor<4x128xbf16>
}

// -----

// DSpark: the draft block, a stage whose window ring carries draft entries,
// the Markov head and the confidence head; a stage without results (the
// prefill stage only fills its ring).

// CHECK-LABEL: func.func @dspark_draft
func.func @dspark_draft(%anchor: tensor<1xi32>, %table: tensor<128x64xbf16>, %fn: tensor<8x128xf32>,
                        %scale: tensor<3xf32>, %base: tensor<8xf32>, %kv: tensor<1x64xbf16>,
                        %q: tensor<3x2x64xbf16>, %sink: tensor<2xf32>, %head: tensor<128x64xbf16>,
                        %membed: tensor<128x8xbf16>, %mhead: tensor<128x8xbf16>, %proj: tensor<1x72xbf16>)
    -> (tensor<4xi32>, tensor<3x128xf32>, tensor<3xf32>) {
  // CHECK: [[D:%.*]] = ds.dspark_draft %{{.*}}, %{{.*}} {block_size = 3 : i64, noise_token = 7 : i64} : (tensor<1xi32>, tensor<128x64xbf16>) -> tensor<3x64xbf16>
  // CHECK: %h6, %mix6 = ds.layer 6 #ds.csa2<mode = dspark> -> tensor<3x2x64xbf16>, tensor<3x2xf32> {
  // CHECK:   ds.window_kv %{{.*}} draft %{{.*}} : tensor<1x64xbf16>, tensor<3x64xbf16> -> !ds.window<size = 8, dim = 64>
  // CHECK: %output_ids, %biased_logits, %markov_embeds = ds.dspark_markov_head %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} : (tensor<3x128xf32>, tensor<1xi32>, tensor<128x8xbf16>, tensor<128x8xbf16>) -> (tensor<4xi32>, tensor<3x128xf32>, tensor<3x8xbf16>)
  // CHECK: ds.dspark_confidence %{{.*}}, %markov_embeds, %{{.*}} : (tensor<3x64xbf16>, tensor<3x8xbf16>, tensor<1x72xbf16>) -> tensor<3xf32>
  %d = ds.dspark_draft %anchor, %table {block_size = 3 : i64, noise_token = 7 : i64} : (tensor<1xi32>, tensor<128x64xbf16>) -> tensor<3x64xbf16>
  %s = ds.hc_expand %d {copies = 2 : i64} : (tensor<3x64xbf16>) -> tensor<3x2x64xbf16>
  %m = ds.hc_identity_mix %s : (tensor<3x2x64xbf16>) -> tensor<3x2xf32>
  %h, %mix = ds.layer 6 #ds.csa2<mode = dspark> -> tensor<3x2x64xbf16>, tensor<3x2xf32> {
    %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-06 : f64, sinkhorn_iters = 1 : i64} : (tensor<3x2x64xbf16>, tensor<8x128xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<3x2xf32>, tensor<3x2xf32>, tensor<3x2x2xf32>)
    %x = ds.hc_pre %s, %m : (tensor<3x2x64xbf16>, tensor<3x2xf32>) -> tensor<3x64xbf16>
    %w = ds.window_kv %kv draft %x : tensor<1x64xbf16>, tensor<3x64xbf16> -> !ds.window<size = 8, dim = 64>
    %o = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<3x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<3x2x64xbf16>
    ds.yield %s, %pre : tensor<3x2x64xbf16>, tensor<3x2xf32>
  }
  %x = ds.hc_pre %h, %mix : (tensor<3x2x64xbf16>, tensor<3x2xf32>) -> tensor<3x64xbf16>
  %logits = ds.head %x, %head : (tensor<3x64xbf16>, tensor<128x64xbf16>) -> tensor<3x128xf32>
  %ids, %biased, %embeds = ds.dspark_markov_head %logits, %anchor, %membed, %mhead : (tensor<3x128xf32>, tensor<1xi32>, tensor<128x8xbf16>, tensor<128x8xbf16>) -> (tensor<4xi32>, tensor<3x128xf32>, tensor<3x8xbf16>)
  %conf = ds.dspark_confidence %x, %embeds, %proj : (tensor<3x64xbf16>, tensor<3x8xbf16>, tensor<1x72xbf16>) -> tensor<3xf32>
  return %ids, %biased, %conf : tensor<4xi32>, tensor<3x128xf32>, tensor<3xf32>
}

// CHECK-LABEL: func.func @dspark_prefill
// CHECK:       ds.layer 7 #ds.csa2<mode = dspark> {
// CHECK-NEXT:    ds.window_kv
// CHECK-NEXT:  }
func.func @dspark_prefill(%kv: tensor<4x64xbf16>) {
  ds.layer 7 #ds.csa2<mode = dspark> {
    %w = ds.window_kv %kv : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
  }
  return
}

// -----

// Shared values as function arguments and results: every ds type prints
// back in its short form.

// CHECK-LABEL: func.func private @types
// CHECK-SAME: !ds.kv_cache<ratio = 4, dim = 512>
// CHECK-SAME: !ds.index_keys<ratio = 4, dim = 128>
// CHECK-SAME: !ds.topk<ratio = 4, k = 512>
// CHECK-SAME: !ds.candidates<ratio = 4, blocks = 64, block_size = 16>
// CHECK-SAME: -> !ds.window<size = 128, dim = 512>
func.func private @types(!ds.kv_cache<ratio = 4, dim = 512>, !ds.index_keys<ratio = 4, dim = 128>,
                         !ds.topk<ratio = 4, k = 512>,
                         !ds.candidates<ratio = 4, blocks = 64, block_size = 16>)
    -> !ds.window<size = 128, dim = 512>

// Attributes on their own (the enum attributes print in the #ds<...> form),
// struct parameters in any order.
// CHECK-LABEL: func.func private @attrs
// CHECK-SAME: csa2 = #ds.csa2<mode = reindex, ratio = 4, kv_source = 2, index_source = 7>
// CHECK-SAME: kind = #ds<parameter_kind fp4_packed>
// CHECK-SAME: mode = #ds<mode dspark>
// CHECK-SAME: quant = #ds<quant fp4>
// CHECK-SAME: rope = #ds.rope<dim = 64, theta = 1.000000e+04 : f64, original_seq_len = 4096, factor = 4.000000e+00 : f64, beta_fast = 3.200000e+01 : f64, beta_slow = 1.000000e+00 : f64>
func.func private @attrs() attributes {
  csa2 = #ds.csa2<index_source = 7, kv_source = 2, mode = reindex, ratio = 4>,
  quant = #ds<quant fp4>, kind = #ds<parameter_kind fp4_packed>, mode = #ds<mode dspark>,
  rope = #ds.rope<dim = 64, theta = 1.0e4 : f64, original_seq_len = 4096, factor = 4.0 : f64, beta_fast = 32.0 : f64, beta_slow = 1.0 : f64>}

// -----

// CED (ds-ced-split): the projection of Full layer 2 publishes its kv cache
// and index keys; ds.replay_slice keeps the last rows; the replayed layer 2
// reads the projected keys and kv.
// CHECK-LABEL: func.func @ced
// CHECK: %kv2, %keys2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2> -> !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32> attributes {ced_projection, decoder}
// CHECK: %stream_slice, %mix_slice = ds.replay_slice %arg0, %arg1 {tokens = 256 : i64} : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> (tensor<?x2x64xbf16>, tensor<?x2xf32>)
// CHECK: %h2, %mix2 = ds.layer 2 {{.*}} attributes {decoder}
// CHECK: ds.indexer_score {{.*}}, %keys2
func.func @ced(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>, %n: tensor<64xbf16>, %wkv: tensor<64x64xbf16>,
               %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>, %iq: tensor<?x2x32xbf16>, %hw: tensor<?x2xbf16>) {
  %kv2, %keys2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2>
      -> !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32> attributes {ced_projection, decoder} {
    %x = ds.hc_pre %s, %m : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> tensor<?x64xbf16>
    %xn = ds.rms_norm %x, %n {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
    %lat = ds.compressor %xn, %wkv, %n {eps = 1.0e-6 : f64, ratio = 1 : i64} : tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<?x64xbf16>
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-6 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 1, dim = 32>
    ds.yield %kv, %keys : !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>
  }
  %hs, %ms = ds.replay_slice %s, %m {tokens = 256 : i64} : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> (tensor<?x2x64xbf16>, tensor<?x2xf32>)
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2> -> tensor<?x2x64xbf16>, tensor<?x2xf32> attributes {decoder} {
    %sc = ds.indexer_score %iq, %hw, %keys2 {weight_scale = 0.125 : f64} : tensor<?x2x32xbf16>, tensor<?x2xbf16>, !ds.index_keys<ratio = 1, dim = 32> -> tensor<?x?xbf16>
    ds.yield %hs, %ms : tensor<?x2x64xbf16>, tensor<?x2xf32>
  }
  return
}
