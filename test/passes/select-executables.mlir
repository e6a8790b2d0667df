// RUN: dsc-opt %s --split-input-file --ds-select-executables | FileCheck %s

// ds-select-executables: a ds.fused group that a native executable of
// runtime/include/dsc/abi/NativeExecutables.def runs is marked with its name;
// the others are left to run step by step. Widths are tiny6's.

// The attention group: sparse attention + inverse RoPE, the attention output
// internal (only the RoPE reads it): one native kernel.
// CHECK-LABEL: func.func @attention
// CHECK: ds.fused "attention" -> tensor<?x8x128xbf16> attributes {executable = "attention_inverse_rope"}
func.func @attention(%q: tensor<?x8x128xbf16>, %kv: tensor<?x128xbf16>, %sink: tensor<8xf32>,
                     %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %w = ds.window_kv %kv : tensor<?x128xbf16> -> !ds.window<size = 16, dim = 128>
    %r = ds.fused "attention" -> tensor<?x8x128xbf16> {
      %a = ds.sparse_attention %q, %w, %sink {scale = 0.088388347648318433 : f64} : tensor<?x8x128xbf16>, !ds.window<size = 16, dim = 128>, tensor<8xf32> -> tensor<?x8x128xbf16>
      %b = ds.rope %a {inverse, rope = #ds.rope<dim = 32, theta = 1.0e4 : f64>} : (tensor<?x8x128xbf16>) -> tensor<?x8x128xbf16>
      ds.fused_yield %b : tensor<?x8x128xbf16>
    }
    ds.yield %h, %mix : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// A forward RoPE is not what the native attention epilogue computes.
// CHECK-LABEL: func.func @attention_forward_rope
// CHECK: ds.fused "attention" -> tensor<?x8x128xbf16> {
// CHECK-NOT: executable
func.func @attention_forward_rope(%q: tensor<?x8x128xbf16>, %kv: tensor<?x128xbf16>, %sink: tensor<8xf32>,
                                  %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %w = ds.window_kv %kv : tensor<?x128xbf16> -> !ds.window<size = 16, dim = 128>
    %r = ds.fused "attention" -> tensor<?x8x128xbf16> {
      %a = ds.sparse_attention %q, %w, %sink {scale = 0.088388347648318433 : f64} : tensor<?x8x128xbf16>, !ds.window<size = 16, dim = 128>, tensor<8xf32> -> tensor<?x8x128xbf16>
      %b = ds.rope %a {rope = #ds.rope<dim = 32, theta = 1.0e4 : f64>} : (tensor<?x8x128xbf16>) -> tensor<?x8x128xbf16>
      ds.fused_yield %b : tensor<?x8x128xbf16>
    }
    ds.yield %h, %mix : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// The attention output yielded (read after the group): the native kernel
// never writes it, so the group runs its steps.
// CHECK-LABEL: func.func @attention_output_escapes
// CHECK: ds.fused "attention" -> tensor<?x8x128xbf16>, tensor<?x8x128xbf16> {
// CHECK-NOT: executable
func.func @attention_output_escapes(%q: tensor<?x8x128xbf16>, %kv: tensor<?x128xbf16>, %sink: tensor<8xf32>,
                                    %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %w = ds.window_kv %kv : tensor<?x128xbf16> -> !ds.window<size = 16, dim = 128>
    %r:2 = ds.fused "attention" -> tensor<?x8x128xbf16>, tensor<?x8x128xbf16> {
      %a = ds.sparse_attention %q, %w, %sink {scale = 0.088388347648318433 : f64} : tensor<?x8x128xbf16>, !ds.window<size = 16, dim = 128>, tensor<8xf32> -> tensor<?x8x128xbf16>
      %b = ds.rope %a {inverse, rope = #ds.rope<dim = 32, theta = 1.0e4 : f64>} : (tensor<?x8x128xbf16>) -> tensor<?x8x128xbf16>
      ds.fused_yield %a, %b : tensor<?x8x128xbf16>, tensor<?x8x128xbf16>
    }
    ds.yield %h, %mix : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// The FFN entry: hc_post (optional step) + pre-collapse + norm, the
// collapsed row internal: mhc_entry_pre_norm. The mixes run after the group.
// CHECK-LABEL: func.func @mhc_entry_with_post
// CHECK: ds.fused "mhc_entry" -> {{.*}} attributes {executable = "mhc_entry_pre_norm"}
func.func @mhc_entry_with_post(%attn: tensor<?x256xbf16>, %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>,
                               %post0: tensor<?x4xf32>, %comb0: tensor<?x4x4xf32>, %fn: tensor<24x1024xf32>,
                               %scale: tensor<3xf32>, %base: tensor<24xf32>, %w: tensor<256xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %f:2 = ds.fused "mhc_entry" -> tensor<?x4x256xbf16>, tensor<?x256xbf16> {
      %s = ds.hc_post %attn, %h, %post0, %comb0 : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
      %x = ds.hc_pre %s, %mix : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
      %n = ds.rms_norm %x, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
      ds.fused_yield %s, %n : tensor<?x4x256xbf16>, tensor<?x256xbf16>
    }
    %pre, %post, %comb = ds.hc_mixes %f#0, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64, sinkhorn_iters = 20 : i64} : (tensor<?x4x256xbf16>, tensor<24x1024xf32>, tensor<3xf32>, tensor<24xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>)
    %o = ds.hc_post %f#1, %f#0, %post, %comb : (tensor<?x256xbf16>, tensor<?x4x256xbf16>, tensor<?x4xf32>, tensor<?x4x4xf32>) -> tensor<?x4x256xbf16>
    ds.yield %o, %pre : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// A group that still holds the mixes (an older module's grouping) does not
// fit the pattern: its steps run one by one.
// CHECK-LABEL: func.func @mhc_entry_with_mixes
// CHECK: ds.fused "mhc_entry" -> tensor<?x4xf32>, tensor<?x256xbf16> {
// CHECK-NOT: executable
func.func @mhc_entry_with_mixes(%h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>, %fn: tensor<24x1024xf32>,
                                %scale: tensor<3xf32>, %base: tensor<24xf32>, %w: tensor<256xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %f:2 = ds.fused "mhc_entry" -> tensor<?x4xf32>, tensor<?x256xbf16> {
      %pre, %post, %comb = ds.hc_mixes %h, %fn, %scale, %base {eps = 1.0e-06 : f64, norm_eps = 1.0e-20 : f64, sinkhorn_iters = 20 : i64} : (tensor<?x4x256xbf16>, tensor<24x1024xf32>, tensor<3xf32>, tensor<24xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4x4xf32>)
      %x = ds.hc_pre %h, %mix : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
      %n = ds.rms_norm %x, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
      ds.fused_yield %pre, %n : tensor<?x4xf32>, tensor<?x256xbf16>
    }
    ds.yield %h, %f#0 : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// The collapsed row read after the group (here by a second norm): it must
// exist, so the group runs its steps. An existing mark is removed.
// CHECK-LABEL: func.func @mhc_entry_row_escapes
// CHECK: ds.fused "mhc_entry" -> tensor<?x256xbf16>, tensor<?x256xbf16> {
// CHECK-NOT: executable
func.func @mhc_entry_row_escapes(%h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>, %fn: tensor<24x1024xf32>,
                                 %scale: tensor<3xf32>, %base: tensor<24xf32>, %w: tensor<256xbf16>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %f:2 = ds.fused "mhc_entry" -> tensor<?x256xbf16>, tensor<?x256xbf16> attributes {executable = "mhc_entry_pre_norm"} {
      %x = ds.hc_pre %h, %mix : (tensor<?x4x256xbf16>, tensor<?x4xf32>) -> tensor<?x256xbf16>
      %n = ds.rms_norm %x, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
      ds.fused_yield %x, %n : tensor<?x256xbf16>, tensor<?x256xbf16>
    }
    %again = ds.rms_norm %f#0, %w {eps = 1.0e-20 : f64} : (tensor<?x256xbf16>, tensor<256xbf16>) -> tensor<?x256xbf16>
    ds.yield %h, %mix : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}

// -----

// A group of another kind is left alone.
// CHECK-LABEL: func.func @moe
// CHECK: ds.fused "moe"
// CHECK-NOT: executable
// CHECK: return
func.func @moe(%x: tensor<?x256xbf16>, %gw: tensor<8x256xbf16>, %bias: tensor<8xf32>,
               %h: tensor<?x4x256xbf16>, %mix: tensor<?x4xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x4x256xbf16>, tensor<?x4xf32> {
    %g:2 = ds.fused "moe" -> tensor<?x2xf32>, tensor<?x2xi32> {
      %rw, %ids = ds.moe_gate %x, %gw, %bias {normalize = true, route_scale = 1.0 : f64, temperature = 1.0 : f64, topk = 2 : i64} : (tensor<?x256xbf16>, tensor<8x256xbf16>, tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
      %rw2, %ids2 = ds.moe_gate %x, %gw, %bias {normalize = true, route_scale = 1.0 : f64, temperature = 1.0 : f64, topk = 2 : i64} : (tensor<?x256xbf16>, tensor<8x256xbf16>, tensor<8xf32>) -> (tensor<?x2xf32>, tensor<?x2xi32>)
      ds.fused_yield %rw, %ids2 : tensor<?x2xf32>, tensor<?x2xi32>
    }
    ds.yield %h, %mix : tensor<?x4x256xbf16>, tensor<?x4xf32>
  }
  return
}
