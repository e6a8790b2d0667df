// RUN: dsc-opt %s --split-input-file --ds-fuse-kernels | FileCheck %s
// RUN: dsc-opt %s --split-input-file --ds-fuse-kernels=kernels=moe | FileCheck %s --check-prefix=ONLY-MOE
// RUN: dsc-opt %s --split-input-file --ds-fuse-kernels=indexer-tile-rows=0 | FileCheck %s --check-prefix=UNTILED
// RUN: not dsc-opt %s --split-input-file --ds-fuse-kernels=indexer-tile-rows=-1 2>&1 | FileCheck %s --check-prefix=NEGATIVE

// ds-fuse-kernels: dataflow groups of a layer become ds.fused ops (one
// kernel launch each after lowering). Widths are tiny6's (dim 256, hc 4).

// The attention entry: pre-collapse of the incoming stream with the
// carried mix, attention norm. The stream comes from outside the layer, so
// no hc_post joins. The stream's mixes stay outside (single-pass mHC: the
// group does not read them), moved just after the group.
// CHECK-LABEL: func.func @mhc_entry
// CHECK: %[[F:.*]] = ds.fused "mhc_entry" -> tensor<?x256xbf16> {
// CHECK-NEXT: ds.hc_pre %arg0, %arg1
// CHECK-NEXT: ds.rms_norm
// CHECK-NEXT: ds.fused_yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[PRE:.*]], %[[POST:.*]], %[[COMB:.*]] = ds.hc_mixes %arg0,
// CHECK-NEXT: ds.hc_post %[[F]], %arg0, %[[POST]], %[[COMB]]
// ONLY-MOE-LABEL: func.func @mhc_entry
// ONLY-MOE-NOT: ds.fused
func.func @mhc_entry(%h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>, %fn: tensor<24x1024xf32>,
                     %scale: tensor<3xf32>, %base: tensor<24xf32>, %w: tensor<256xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %pre, %post, %comb = ds.hc_mixes %h, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64, sinkhorn_iters = 20 : i64} : (tensor<?x4x256xbf16>, tensor<24x1024xf32>, tensor<3xf32>, tensor<24xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>)
    %x = ds.hc_pre %h, %mix : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
    %n = ds.rms_norm %x, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
    %o = ds.hc_post %n, %h, %post, %comb : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    ds.yield %o, %pre : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// The FFN entry: the attention output folded in by hc_post, whose stream the
// pre-collapse reads, joins the group. The new stream escapes (the mixes,
// moved from between the members to just after the group, and the layer's
// final hc_post read it).
// CHECK-LABEL: func.func @mhc_entry_with_post
// CHECK: %[[F:.*]]:2 = ds.fused "mhc_entry" -> tensor<?x4x256xbf16>, tensor<?x256xbf16> {
// CHECK-NEXT: ds.hc_post
// CHECK-NEXT: ds.hc_pre
// CHECK-NEXT: ds.rms_norm
// CHECK-NEXT: ds.fused_yield
// CHECK-NEXT: }
// CHECK-NEXT: %[[PRE:.*]], %[[POST:.*]], %[[COMB:.*]] = ds.hc_mixes %[[F]]#0,
// CHECK-NEXT: ds.hc_post %[[F]]#1, %[[F]]#0, %[[POST]], %[[COMB]]
// CHECK-NEXT: ds.yield %{{.*}}, %[[PRE]]
func.func @mhc_entry_with_post(%attn: tensor<?x256xbf16>, %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>,
                               %post0: tensor<?x4xf32>, %comb0: tensor<?x4x4xf32>, %fn: tensor<24x1024xf32>,
                               %scale: tensor<3xf32>, %base: tensor<24xf32>, %w: tensor<256xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %s = ds.hc_post %attn, %h, %post0, %comb0 : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64, sinkhorn_iters = 20 : i64} : (tensor<?x4x256xbf16>, tensor<24x1024xf32>, tensor<3xf32>, tensor<24xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>)
    %x = ds.hc_pre %s, %mix : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
    %n = ds.rms_norm %x, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
    %o = ds.hc_post %n, %s, %post, %comb : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    ds.yield %o, %pre : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// Not fused: an op outside the group (the hc_post between hc_pre and the
// norm) reads the pre-collapse, so moving the members down to the norm
// would leave it reading a value defined later. The pass leaves the ops.
// CHECK-LABEL: func.func @mhc_entry_blocked
// CHECK-NOT: ds.fused
// CHECK: return
func.func @mhc_entry_blocked(%h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>, %fn: tensor<24x1024xf32>,
                             %scale: tensor<3xf32>, %base: tensor<24xf32>, %w: tensor<256xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %pre, %post, %comb = ds.hc_mixes %h, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64, sinkhorn_iters = 20 : i64} : (tensor<?x4x256xbf16>, tensor<24x1024xf32>, tensor<3xf32>, tensor<24xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>)
    %x = ds.hc_pre %h, %mix : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
    %y = ds.hc_post %x, %h, %post, %comb : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    %n = ds.rms_norm %x, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
    %o = ds.hc_post %n, %y, %post, %comb : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    ds.yield %o, %pre : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// Not fused: the mixes sit between the members and an op before the norm
// reads them (here an hc_pre of their pre), so they cannot move after the
// group, and reading the group's stream there, they block it.
// CHECK-LABEL: func.func @mhc_entry_mixes_pinned
// CHECK-NOT: ds.fused
// CHECK: return
func.func @mhc_entry_mixes_pinned(%attn: tensor<?x256xbf16>, %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>,
                                  %post0: tensor<?x4xf32>, %comb0: tensor<?x4x4xf32>, %fn: tensor<24x1024xf32>,
                                  %scale: tensor<3xf32>, %base: tensor<24xf32>, %w: tensor<256xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %s = ds.hc_post %attn, %h, %post0, %comb0 : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    %pre, %post, %comb = ds.hc_mixes %s, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64, sinkhorn_iters = 20 : i64} : (tensor<?x4x256xbf16>, tensor<24x1024xf32>, tensor<3xf32>, tensor<24xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>)
    %early = ds.hc_pre %h, %pre : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
    %x = ds.hc_pre %s, %mix : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
    %n = ds.rms_norm %x, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
    %o = ds.hc_post %n, %s, %post, %comb : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    ds.yield %o, %pre : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// Attention: sparse attention (here SWA only) and the inverse RoPE; only the
// rotated output escapes.
// CHECK-LABEL: func.func @attention
// CHECK: %[[W:.*]] = ds.window_kv
// CHECK-NEXT: %[[F:.*]] = ds.fused "attention" -> tensor<?x8x128xbf16> {
// CHECK-NEXT: ds.sparse_attention %arg0, %[[W]], %arg2
// CHECK-NEXT: ds.rope
// CHECK-SAME: inverse
// CHECK-NEXT: ds.fused_yield
// CHECK: ds.grouped_output %[[F]]
func.func @attention(%q: tensor<?x8x128xbf16>, %kv: tensor<?x128xbf16>, %sink: tensor<8xf32>,
                     %woa: tensor<256x256xbf16>, %wob: tensor<256x256xf8E4M3FN>, %wobs: tensor<8x8xf8E8M0FNU>,
                     %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %w = ds.window_kv %kv : tensor<?x128xbf16> -> !ds.window<size = 16, dim = 128>
    %a = ds.sparse_attention %q, %w, %sink {scale = 0.088388347648318433 : f64} : tensor<?x8x128xbf16>, !ds.window<size = 16, dim = 128>, tensor<8xf32> -> tensor<?x8x128xbf16>
    %r = ds.rope %a {inverse, rope = #ds.rope<dim = 32, theta = 1.0e4 : f64>} : (tensor<?x8x128xbf16>) -> tensor<?x8x128xbf16>
    %o = ds.grouped_output %r, %woa, %wob, %wobs {groups = 4 : i64} : (tensor<?x8x128xbf16>, tensor<256x256xbf16>, tensor<256x256xf8E4M3FN>, tensor<8x8xf8E8M0FNU>) -> tensor<?x256xbf16>
    ds.yield %h, %mix : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// MoE: the gate's routing never leaves the kernel (nothing escapes here: the
// layer does not use the output).
// CHECK-LABEL: func.func @moe
// CHECK: ds.fused "moe" {
// CHECK-NEXT: %{{.*}}, %{{.*}} = ds.moe_gate
// CHECK-NEXT: ds.moe_experts
// CHECK-NEXT: {{^ *}}}{{$}}
// ONLY-MOE-LABEL: func.func @moe
// ONLY-MOE: ds.fused "moe"
func.func @moe(%x: tensor<?x256xbf16>, %gw: tensor<8x256xbf16>, %gb: tensor<8xf32>,
               %w1: tensor<8x128x128xi8>, %w1s: tensor<8x128x8xf8E8M0FNU>, %w3: tensor<8x128x128xi8>, %w3s: tensor<8x128x8xf8E8M0FNU>,
               %w2: tensor<8x256x64xi8>, %w2s: tensor<8x256x4xf8E8M0FNU>,
               %sw1: tensor<128x256xf8E4M3FN>, %sw1s: tensor<4x8xf8E8M0FNU>, %sw3: tensor<128x256xf8E4M3FN>, %sw3s: tensor<4x8xf8E8M0FNU>,
               %sw2: tensor<256x128xf8E4M3FN>, %sw2s: tensor<8x4xf8E8M0FNU>,
               %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %rw, %ids = ds.moe_gate %x, %gw, %gb {normalize = true, route_scale = 1.5 : f64, temperature = 1.0 : f64, topk = 2 : i64} : (tensor<?x256xbf16>, tensor<8x256xbf16>, tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
    %y = ds.moe_experts %x, %rw, %ids, %w1, %w1s, %w3, %w3s, %w2, %w2s, %sw1, %sw1s, %sw3, %sw3s, %sw2, %sw2s {swiglu_limit = 10.0 : f64} : (tensor<?x256xbf16>, tensor<?x2xf32>, tensor<?x2xi32>, tensor<8x128x128xi8>, tensor<8x128x8xf8E8M0FNU>, tensor<8x128x128xi8>, tensor<8x128x8xf8E8M0FNU>, tensor<8x256x64xi8>, tensor<8x256x4xf8E8M0FNU>, tensor<128x256xf8E4M3FN>, tensor<4x8xf8E8M0FNU>, tensor<128x256xf8E4M3FN>, tensor<4x8xf8E8M0FNU>, tensor<256x128xf8E4M3FN>, tensor<8x4xf8E8M0FNU>) -> tensor<?x256xbf16>
    ds.yield %h, %mix : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// The indexer: queries, head weights, scores and top-k in one row-tiled
// kernel (tile_rows = indexer-tile-rows, default 128): the [S, T] scores
// never leave it and exist one tile at a time. Only the top-k escapes; the
// keys written before it are read from the layer (the compressor group
// needs its ds.compressor, absent here).
// CHECK-LABEL: func.func @indexer
// CHECK: %[[KEYS:.*]] = ds.index_keys
// CHECK-NEXT: %[[F:.*]] = ds.fused "indexer" -> !ds.topk<ratio = 2, k = 4> attributes {tile_rows = 128 : i64} {
// CHECK-NEXT: ds.index_queries
// CHECK-NEXT: ds.linear
// CHECK-NEXT: ds.indexer_score %{{.*}}, %{{.*}}, %[[KEYS]]
// CHECK-NEXT: ds.indexer_topk
// CHECK-NEXT: ds.fused_yield
// CHECK: ds.yield %arg8, %arg9, %{{.*}}, %[[KEYS]], %[[F]]
// UNTILED-LABEL: func.func @indexer
// UNTILED: ds.fused "indexer" -> !ds.topk<ratio = 2, k = 4> {
// NEGATIVE: ds-fuse-kernels: indexer-tile-rows is -1, expected >= 0 (0: untiled)
func.func @indexer(%x: tensor<?x64xbf16>, %lat: tensor<?x64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>,
                   %qr: tensor<?x32xbf16>, %wq: tensor<64x32xf8E4M3FN>, %wqs: tensor<2x1xf8E8M0FNU>, %wp: tensor<2x64xbf16>,
                   %s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>) {
  %h0, %mix0, %kv0, %keys0, %topk0 = ds.layer 0 #ds.csa2<mode = full, ratio = 2, kv_source = 0, index_source = 0>
      -> tensor<?x2x64xbf16>, tensor<?x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4> {
    %kv = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16> -> !ds.kv_cache<ratio = 2, dim = 64>
    %keys = ds.index_keys %lat, %wk, %kn {eps = 1.0e-06 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 2, dim = 32>
    %q = ds.index_queries %qr, %wq, %wqs {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : (tensor<?x32xbf16>, tensor<64x32xf8E4M3FN>, tensor<2x1xf8E8M0FNU>) -> tensor<?x2x32xbf16>
    %w = ds.linear bf16 %x, %wp : tensor<?x64xbf16>, tensor<2x64xbf16> -> tensor<?x2xbf16>
    %sc = ds.indexer_score %q, %w, %keys {weight_scale = 0.125 : f64} : tensor<?x2x32xbf16>, tensor<?x2xbf16>, !ds.index_keys<ratio = 2, dim = 32> -> tensor<?x?xbf16>
    %t = ds.indexer_topk %sc : tensor<?x?xbf16> -> !ds.topk<ratio = 2, k = 4>
    ds.yield %s, %m, %kv, %keys, %t : tensor<?x2x64xbf16>, tensor<?x2xf32>, !ds.kv_cache<ratio = 2, dim = 64>, !ds.index_keys<ratio = 2, dim = 32>, !ds.topk<ratio = 2, k = 4>
  }
  return
}
