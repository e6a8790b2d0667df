// RUN: dsc-opt %s --split-input-file --ds-ced-split --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,EXACT
// RUN: dsc-opt %s --split-input-file --ds-ced-split=mode=bounded --verify-diagnostics | FileCheck %s --check-prefixes=CHECK,BOUNDED
// RUN: dsc-opt %s --split-input-file --ds-ced-split=mode=full | FileCheck %s --check-prefix=FULL

// ds-ced-split: @prefill runs the encoder (layers < L/2) on all S tokens,
// the projection of layer L/2 (pre-collapse, attn norm, compressor,
// compress_kv, index_keys) on all tokens, then layer L/2 (reading the
// projected kv and keys) and the later decoder layers on the last
// R' = min(R, S) rows. R = (L/2)·W = 2·4 = 8 (exact) or W = 4 (bounded).

// A 4-layer model, CED split at layer 2 (a Full layer, ratio 1), window 4;
// layer 3 reuses layer 2's kv and top-k. mode=full leaves it unchanged.

// FULL-NOT: ds.ced_mode
// FULL-LABEL: func.func @prefill
// FULL-NOT: ced_projection
// FULL-NOT: ds.replay_slice

// EXACT: module attributes {ds.ced_mode = "exact", ds.ced_split = 2 : i64, ds.n_layers = 4 : i64}
// BOUNDED: module attributes {ds.ced_mode = "bounded", ds.ced_split = 2 : i64, ds.n_layers = 4 : i64}
// CHECK-LABEL: func.func @prefill
// Encoder layers: unchanged, on all tokens.
// CHECK: %h0, %mix0 = ds.layer 0
// CHECK: %h1, %mix1 = ds.layer 1
// The projection of layer 2 on all tokens: no window, no attention, no mixes.
// CHECK: %kv2, %keys2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2> -> !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32> attributes {ced_projection, decoder}
// CHECK-NEXT: ds.hc_pre %h1, %mix1
// CHECK-NEXT: ds.rms_norm
// CHECK-NEXT: ds.compressor
// CHECK-NEXT: ds.compress_kv
// CHECK-NEXT: ds.index_keys
// CHECK-NEXT: ds.yield {{.*}} : !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>
// CHECK-NEXT: }
// The replayed rows.
// EXACT-NEXT: %stream_slice, %mix_slice = ds.replay_slice %h1, %mix1 {tokens = 8 : i64} : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> (tensor<?x2x64xbf16>, tensor<?x2xf32>)
// BOUNDED-NEXT: %stream_slice, %mix_slice = ds.replay_slice %h1, %mix1 {tokens = 4 : i64}
// Layer 2 on the slice: scores the projected keys, attends over the projected
// kv, publishes only its top-k.
// CHECK-NEXT: %h2, %mix2, %topk2 = ds.layer 2 {{.*}} -> tensor<?x2x64xbf16>, tensor<?x2xf32>, !ds.topk<ratio = 1, k = 4> attributes {decoder}
// CHECK-NOT: ds.compress
// CHECK-NOT: ds.index_keys
// CHECK: ds.hc_mixes %stream_slice
// CHECK: ds.hc_pre %stream_slice, %mix_slice
// CHECK: ds.indexer_score {{.*}}, %keys2
// CHECK: ds.sparse_attention {{.*}} kv %kv2 {{.*}} topk %{{[0-9]+}}
// CHECK: ds.hc_post {{.*}}, %stream_slice,
// Layer 3 on the slice reads the projection's kv.
// CHECK: %h3, %mix3 = ds.layer 3
// CHECK: ds.sparse_attention {{.*}} kv %kv2 {{.*}} topk %topk2
// The head on the slice's last row.
// CHECK: ds.hc_pre %h3, %mix3
// CHECK: ds.head {{.*}} {last_only}
module attributes {ds.n_layers = 4 : i64, ds.ced_split = 2 : i64} {
  func.func @prefill(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>, %fn: tensor<8x128xf32>, %fs: tensor<3xf32>, %fb: tensor<8xf32>,
                     %n: tensor<64xbf16>, %wq: tensor<128x64xbf16>, %wkv: tensor<64x64xbf16>, %wk: tensor<32x64xbf16>,
                     %kn: tensor<32xbf16>, %wiq: tensor<64x64xbf16>, %whw: tensor<2x64xbf16>, %sink: tensor<2xf32>,
                     %woa: tensor<64x64xbf16>, %wob: tensor<64x64xbf16>, %wobs: tensor<2x2xf8E8M0FNU>, %wh: tensor<16x64xbf16>) -> tensor<1x16xf32> {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
      ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
      ds.yield %h0, %mix0 : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    %h2, %mix2, %kv2, %keys2, %topk2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2>
        -> tensor<?x2x64xbf16>, tensor<?x2xf32>, !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>, !ds.topk<ratio = 1, k = 4> attributes {decoder} {
      %pre, %post, %comb = ds.hc_mixes %h1, %fn, %fs, %fb {eps = 1.0e-6 : f64, norm_eps = 1.0e-6 : f64, sinkhorn_iters = 2 : i64} : (tensor<?x2x64xbf16>, tensor<8x128xf32>, tensor<3xf32>, tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xf32>, tensor<?x2x2xf32>)
      %x = ds.hc_pre %h1, %mix1 : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> tensor<?x64xbf16>
      %xn = ds.rms_norm %x, %n {eps = 1.0e-6 : f64} : (tensor<?x64xbf16>, tensor<64xbf16>) -> tensor<?x64xbf16>
      %q = ds.linear bf16 %xn, %wq : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x2x64xbf16>
      %win = ds.window_kv %xn : tensor<?x64xbf16> -> !ds.window<size = 4, dim = 64>
      %lat = ds.compressor %xn, %wkv, %n {eps = 1.0e-6 : f64, ratio = 1 : i64} : tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<?x64xbf16>
      %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
      %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-6 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 1, dim = 32>
      %iq = ds.linear bf16 %xn, %wiq : tensor<?x64xbf16>, tensor<64x64xbf16> -> tensor<?x2x32xbf16>
      %hw = ds.linear bf16 %xn, %whw : tensor<?x64xbf16>, tensor<2x64xbf16> -> tensor<?x2xbf16>
      %sc = ds.indexer_score %iq, %hw, %keys {weight_scale = 0.125 : f64} : tensor<?x2x32xbf16>, tensor<?x2xbf16>, !ds.index_keys<ratio = 1, dim = 32> -> tensor<?x?xbf16>
      %tk = ds.indexer_topk %sc : tensor<?x?xbf16> -> !ds.topk<ratio = 1, k = 4>
      %att = ds.sparse_attention %q, %win, %sink kv %kv : !ds.kv_cache<ratio = 1, dim = 64> topk %tk : !ds.topk<ratio = 1, k = 4> {scale = 0.125 : f64} : tensor<?x2x64xbf16>, !ds.window<size = 4, dim = 64>, tensor<2xf32> -> tensor<?x2x64xbf16>
      %o = ds.grouped_output %att, %woa, %wob, %wobs {groups = 1 : i64} : (tensor<?x2x64xbf16>, tensor<64x64xbf16>, tensor<64x64xbf16>, tensor<2x2xf8E8M0FNU>) -> tensor<?x64xbf16>
      %out = ds.hc_post %o, %h1, %post, %comb : (tensor<?x64xbf16>, tensor<?x2x64xbf16>, tensor<?x2xf32>, tensor<?x2x2xf32>) -> tensor<?x2x64xbf16>
      ds.yield %out, %pre, %kv, %keys, %tk : tensor<?x2x64xbf16>, tensor<?x2xf32>, !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>, !ds.topk<ratio = 1, k = 4>
    }
    %h3, %mix3 = ds.layer 3 #ds.csa2<mode = reuse, ratio = 1, kv_source = 2, index_source = 2> -> tensor<?x2x64xbf16>, tensor<?x2xf32> attributes {decoder} {
      %x = ds.hc_pre %h2, %mix2 : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> tensor<?x64xbf16>
      %q = ds.linear bf16 %x, %wq : tensor<?x64xbf16>, tensor<128x64xbf16> -> tensor<?x2x64xbf16>
      %win = ds.window_kv %x : tensor<?x64xbf16> -> !ds.window<size = 4, dim = 64>
      %att = ds.sparse_attention %q, %win, %sink kv %kv2 : !ds.kv_cache<ratio = 1, dim = 64> topk %topk2 : !ds.topk<ratio = 1, k = 4> {scale = 0.125 : f64} : tensor<?x2x64xbf16>, !ds.window<size = 4, dim = 64>, tensor<2xf32> -> tensor<?x2x64xbf16>
      ds.yield %h2, %mix2 : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    %x = ds.hc_pre %h3, %mix3 : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> tensor<?x64xbf16>
    %logits = ds.head %x, %wh {last_only} : (tensor<?x64xbf16>, tensor<16x64xbf16>) -> tensor<1x16xf32>
    return %logits : tensor<1x16xf32>
  }
}

// -----

// The window is read from the !ds.window types: a module without any has no
// replay length.
module attributes {ds.n_layers = 2 : i64, ds.ced_split = 1 : i64} {
  // expected-error @+1 {{ds-ced-split reads the window from !ds.window types; @prefill has none}}
  func.func @prefill(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
      ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> attributes {decoder} {
      ds.yield %h0, %mix0 : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    return
  }
}

// -----

// Engram hashes cover every prompt token: an Engram layer at or above the
// split would need them sliced too, which the pass does not do.
module attributes {ds.n_layers = 2 : i64, ds.ced_split = 1 : i64} {
  func.func @prefill(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>, %kv: tensor<?x192xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
      %x = ds.hc_pre %s, %m : (tensor<?x2x64xbf16>, tensor<?x2xf32>) -> tensor<?x64xbf16>
      %w = ds.window_kv %x : tensor<?x64xbf16> -> !ds.window<size = 4, dim = 64>
      ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    // expected-error @+1 {{Engram layer 1 is at or above the CED split (layer 1)}}
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> attributes {decoder, engram} {
      %g = ds.engram_gate %h0, %kv, %q, %k {eps = 1.0e-20 : f64} : (tensor<?x2x64xbf16>, tensor<?x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<?x2x64xbf16>
      ds.yield %g, %mix0 : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    return
  }
}
