// RUN: dsc-opt %s --split-input-file --ds-plan-kv | FileCheck %s
// RUN: dsc-compile %shared/golden/tiny6/config.json --emit=mlir | FileCheck %s --check-prefix=TINY6

// ds-plan-kv: the KV state @decode keeps, attached as `ds.kv_plan`.
//
// Record sizes (passes/KvRecordSizes.h), for a width of n values:
//   main KV     n/2 + n/16   (FP4 + one e4m3 scale per 16)
//   index keys  n/2 + n/32   (FP4 + one ue8m0 scale per 32)
//   window      n   + n/32   (FP8 + one ue8m0 scale per 32)
//
// This module (head_dim 64, index_head_dim 32, window 8):
//   main entry   = 64/2 + 64/16 = 32 + 4 = 36 B
//   index entry  = 32/2 + 32/32 = 16 + 1 = 17 B
//   window entry = 64   + 64/32 = 64 + 2 = 66 B
// KV sources in @decode: layer 1 (ratio 2, read by Reuse layer 2) and
// layer 3 (ratio 1); layer 0 is SWA only.
//   main  B/token = 36/2 + 36/1 = 18 + 36   = 54
//   index B/token = 17/2 + 17/1 = 8.5 + 17  = 25.5
//   total B/token = 54 + 25.5               = 79.5
//   ring bytes    = 4 layers x 8 slots x 66 = 2112
// @prefill is not planned: its extra ratio-4 source and its 1024-slot ring
// would change every number above.

// CHECK: module attributes {ds.kv_plan = {
// CHECK-SAME: index_bytes_per_token = 2.550000e+01 : f64
// CHECK-SAME: main_bytes_per_token = 5.400000e+01 : f64
// CHECK-SAME: sources = [
// CHECK-SAME:   {index_bytes_per_entry = 17 : i64, layer = 1 : i64, main_bytes_per_entry = 36 : i64, ratio = 2 : i64, readers = array<i64: 1, 2>},
// CHECK-SAME:   {index_bytes_per_entry = 17 : i64, layer = 3 : i64, main_bytes_per_entry = 36 : i64, ratio = 1 : i64, readers = array<i64: 3>}]
// CHECK-SAME: total_bytes_per_token = 7.950000e+01 : f64
// CHECK-SAME: window_bytes_per_token_per_layer = 66 : i64
// CHECK-SAME: window_ring_bytes = 2112 : i64}
// CHECK-LABEL: func.func @prefill
// CHECK-LABEL: func.func @decode

func.func @prefill(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %x: tensor<4x64xbf16>, %lat: tensor<1x64xbf16>,
                   %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>) {
  %h0, %mix0, %kv0, %keys0 = ds.layer 0 #ds.csa2<mode = full, ratio = 4, kv_source = 0, index_source = 0>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 4, dim = 64>, !ds.index_keys<ratio = 4, dim = 32> {
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 1024, dim = 64>
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<1x64xbf16> -> !ds.kv_cache<ratio = 4, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<1x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 4, dim = 32>
    ds.yield %s, %m, %kv, %keys : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.kv_cache<ratio = 4, dim = 64>, !ds.index_keys<ratio = 4, dim = 32>
  }
  return
}

func.func @decode(%s: tensor<1x2x64xbf16>, %m: tensor<1x2xf32>, %x: tensor<1x64xbf16>, %q: tensor<1x2x64xbf16>, %sink: tensor<2xf32>,
                  %lat2: tensor<1x64xbf16>, %lat1: tensor<1x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>,
                  %sc2: tensor<1x4xbf16>, %sc1: tensor<1x8xbf16>) -> (tensor<1x2x64xbf16>, tensor<1x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<1x2x64xbf16>, tensor<1x2xf32> {
    %w = ds.window_kv %x : tensor<1x64xbf16> -> !ds.window<size = 8, dim = 64>
    %o = ds.sparse_attention %q, %w, %sink {scale = 0.125 : f64} : tensor<1x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<1x2x64xbf16>
    ds.yield %s, %m : tensor<1x2x64xbf16>, tensor<1x2xf32>
  }
  %h1, %mix1, %kv1, %keys1, %topk1 = ds.layer 1 #ds.csa2<mode = full, ratio = 2, kv_source = 1, index_source = 1>
      -> tensor<1x2x64xbf16>, tensor<1x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %w = ds.window_kv %x : tensor<1x64xbf16> -> !ds.window<size = 8, dim = 64>
    %kv = ds.compress_kv %lat2 {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<1x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat2, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<1x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %t = ds.indexer_topk %sc2 : tensor<1x4xbf16> -> !ds.topk<ratio = 2, k = 4>
    %o = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 2, dim = 64> topk %t : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<1x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<1x2x64xbf16>
    ds.yield %h0, %mix0, %kv, %keys, %t : tensor<1x2x64xbf16>, tensor<1x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = reuse, ratio = 2, kv_source = 1, index_source = 1> -> tensor<1x2x64xbf16>, tensor<1x2xf32> {
    %w = ds.window_kv %x : tensor<1x64xbf16> -> !ds.window<size = 8, dim = 64>
    %o = ds.sparse_attention %q, %w, %sink kv %kv1 : !ds.kv_cache<ratio = 2, dim = 64> topk %topk1 : !ds.topk<ratio = 2, k = 4> {scale = 0.125 : f64} : tensor<1x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<1x2x64xbf16>
    ds.yield %h1, %mix1 : tensor<1x2x64xbf16>, tensor<1x2xf32>
  }
  %h3, %mix3, %kv3, %keys3, %topk3 = ds.layer 3 #ds.csa2<mode = full, ratio = 1, kv_source = 3, index_source = 3>
      -> tensor<1x2x64xbf16>, tensor<1x2xf32>, !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>, !ds.topk<ratio = 1, k = 4> attributes {decoder} {
    %w = ds.window_kv %x : tensor<1x64xbf16> -> !ds.window<size = 8, dim = 64>
    %kv = ds.compress_kv %lat1 {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<1x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
    %keys = ds.index_keys %lat1, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<1x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 1, dim = 32>
    %t = ds.indexer_topk %sc1 : tensor<1x8xbf16> -> !ds.topk<ratio = 1, k = 4>
    %o = ds.sparse_attention %q, %w, %sink kv %kv : !ds.kv_cache<ratio = 1, dim = 64> topk %t : !ds.topk<ratio = 1, k = 4> {scale = 0.125 : f64} : tensor<1x2x64xbf16>, !ds.window<size = 8, dim = 64>, tensor<2xf32> -> tensor<1x2x64xbf16>
    ds.yield %h2, %mix2, %kv, %keys, %t : tensor<1x2x64xbf16>, tensor<1x2xf32>, !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>, !ds.topk<ratio = 1, k = 4>
  }
  return %h3, %mix3 : tensor<1x2x64xbf16>, tensor<1x2xf32>
}

// -----

// Without @decode there is nothing to keep: an empty plan.

// CHECK: module attributes {ds.kv_plan = {index_bytes_per_token = 0.000000e+00 : f64, main_bytes_per_token = 0.000000e+00 : f64, sources = [], total_bytes_per_token = 0.000000e+00 : f64, window_bytes_per_token_per_layer = 0 : i64, window_ring_bytes = 0 : i64}}
// CHECK-LABEL: func.func @prefill_only
func.func @prefill_only(%x: tensor<4x64xbf16>) {
  ds.layer 0 #ds.csa2<mode = dspark> {
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
  }
  return
}

// tiny6 (golden/tiny6/config.json): head_dim 128, index_head_dim 64,
// window_size 16, KV sources layer 1 (ratio 2; Reuse layer 2 reads it) and
// layer 3 (ratio 1; Reuse layer 4 and Reindex layer 5 read it), 6 backbone
// layers in @decode (the DSpark stage lives in the dspark_* phases).
//   main entry   = 128/2 + 128/16 = 64 + 8  = 72 B
//   index entry  =  64/2 +  64/32 = 32 + 2  = 34 B
//   window entry = 128   + 128/32 = 128 + 4 = 132 B
//   main  B/token = 72/2 + 72/1 = 36 + 72 = 108
//   index B/token = 34/2 + 34/1 = 17 + 34 = 51
//   total B/token = 108 + 51              = 159
//   ring bytes    = 6 x 16 x 132          = 12672
// TINY6: module attributes {
// TINY6-SAME: ds.kv_plan = {
// TINY6-SAME: index_bytes_per_token = 5.100000e+01 : f64
// TINY6-SAME: main_bytes_per_token = 1.080000e+02 : f64
// TINY6-SAME: sources = [
// TINY6-SAME:   {index_bytes_per_entry = 34 : i64, layer = 1 : i64, main_bytes_per_entry = 72 : i64, ratio = 2 : i64, readers = array<i64: 1, 2>},
// TINY6-SAME:   {index_bytes_per_entry = 34 : i64, layer = 3 : i64, main_bytes_per_entry = 72 : i64, ratio = 1 : i64, readers = array<i64: 3, 4, 5>}]
// TINY6-SAME: total_bytes_per_token = 1.590000e+02 : f64
// TINY6-SAME: window_bytes_per_token_per_layer = 132 : i64
// TINY6-SAME: window_ring_bytes = 12672 : i64}
// TINY6-SAME: ds.n_layers = 6 : i64
