// RUN: dsc-opt %s --split-input-file --ds-verify-schedule --verify-diagnostics | FileCheck %s

// ds-verify-schedule: module-wide checks of the layer schedule (layer order
// and count, CED split, Engram layers, candidate source, DSpark stages).
// Valid modules come out unchanged; each invalid one triggers exactly one
// diagnostic of passes/VerifySchedule.cpp.

// A complete schedule: 4 backbone layers in order in both phases, CED split
// at layer 2 (layers 2 and 3 decoder), Engram on layer 1 only, one candidate
// source (decoder Full layer 2), then a DSpark stage (layer 4).

// CHECK: module attributes {ds.ced_split = 2 : i64, ds.n_layers = 4 : i64}
// CHECK-LABEL: func.func @prefill
// CHECK: %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa>
// CHECK: %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> {{.*}} attributes {engram}
// CHECK: %h2, %mix2, %candidates2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2> {{.*}} attributes {decoder}
// CHECK: %h3, %mix3 = ds.layer 3 #ds.csa2<mode = swa> {{.*}} attributes {decoder}
// CHECK: %h4, %mix4 = ds.layer 4 #ds.csa2<mode = dspark>
// CHECK-LABEL: func.func @decode
// CHECK-COUNT-4: ds.layer
module attributes {ds.n_layers = 4 : i64, ds.ced_split = 2 : i64} {
  func.func @prefill(%ids: tensor<4xi32>, %s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %sc: tensor<4x4xbf16>,
                     %kv: tensor<4x192xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
    %hash = ds.engram_hash %ids {layers = array<i64: 1>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x1x4xi64>
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {engram} {
      %g = ds.engram_gate %h0, %kv, %q, %k {eps = 1.0e-20 : f64} : (tensor<4x2x64xbf16>, tensor<4x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x2x64xbf16>
      ds.yield %g, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    %h2, %mix2, %cand2 = ds.layer 2 #ds.csa2<mode = full, ratio = 1, kv_source = 2, index_source = 2>
        -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> attributes {decoder} {
      %c = ds.candidate_blocks %sc : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
      ds.yield %h1, %mix1, %c : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
    }
    %h3, %mix3 = ds.layer 3 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {decoder} {
      ds.yield %h2, %mix2 : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    %h4, %mix4 = ds.layer 4 #ds.csa2<mode = dspark> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %h3, %mix3 : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    return
  }
  func.func @decode(%s: tensor<1x2x64xbf16>, %m: tensor<1x2xf32>, %kv: tensor<1x192xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<1x2x64xbf16>, tensor<1x2xf32> {
      ds.yield %s, %m : tensor<1x2x64xbf16>, tensor<1x2xf32>
    }
    // Without ds.engram_hash in the function, no layer may be marked engram:
    // the Engram marks are checked per function.
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<1x2x64xbf16>, tensor<1x2xf32> {
      ds.yield %h0, %mix0 : tensor<1x2x64xbf16>, tensor<1x2xf32>
    }
    %h2, %mix2 = ds.layer 2 #ds.csa2<mode = swa> -> tensor<1x2x64xbf16>, tensor<1x2xf32> attributes {decoder} {
      ds.yield %h1, %mix1 : tensor<1x2x64xbf16>, tensor<1x2xf32>
    }
    %h3, %mix3 = ds.layer 3 #ds.csa2<mode = swa> -> tensor<1x2x64xbf16>, tensor<1x2xf32> attributes {decoder} {
      ds.yield %h2, %mix2 : tensor<1x2x64xbf16>, tensor<1x2xf32>
    }
    return
  }
}

// -----

// Without ds.n_layers / ds.ced_split the count and the decoder marks are not
// checked; a function without layers (a DSpark-only phase) is accepted.

// CHECK-LABEL: func.func @no_module_attrs
// CHECK: ds.layer 0
// CHECK: ds.layer 1 {{.*}} attributes {decoder}
// CHECK-LABEL: func.func @dspark_only
// CHECK: ds.layer 7 #ds.csa2<mode = dspark>
func.func @no_module_attrs(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {decoder} {
    ds.yield %h0, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}
func.func @dspark_only(%x: tensor<4x64xbf16>) {
  ds.layer 7 #ds.csa2<mode = dspark> {
    %w = ds.window_kv %x : tensor<4x64xbf16> -> !ds.window<size = 8, dim = 64>
  }
  return
}

// -----

// Backbone layers appear in id order, without gaps.
module attributes {ds.n_layers = 3 : i64} {
  func.func @gap(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    // expected-error @+1 {{'ds.layer' op layer 2 is out of order: expected layer 1}}
    %h2, %mix2 = ds.layer 2 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %h0, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    return
  }
}

// -----

// Each layer id appears once per function.
func.func @duplicate(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  // expected-error @+1 {{'ds.layer' op layer 0 is out of order: expected layer 1}}
  %h0b, %mix0b = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %h0, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// Layers at or above the CED split are marked decoder.
module attributes {ds.ced_split = 1 : i64} {
  func.func @missing_decoder(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    // expected-error @+1 {{'ds.layer' op layer 1 must be a decoder layer (CED split at layer 1)}}
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %h0, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    return
  }
}

// -----

// Layers below the CED split are not marked decoder.
module attributes {ds.ced_split = 1 : i64} {
  func.func @early_decoder(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
    // expected-error @+1 {{'ds.layer' op layer 0 must be an encoder layer (CED split at layer 1)}}
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {decoder} {
      ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    return
  }
}

// -----

// ds.engram_hash only hashes layers of the model.
module attributes {ds.n_layers = 2 : i64} {
  // expected-error @+1 {{Engram layer 5 is out of range [0, 2)}}
  func.func @engram_out_of_range(%ids: tensor<4xi32>) {
    %hash = ds.engram_hash %ids {layers = array<i64: 5>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x1x4xi64>
    return
  }
}

// -----

// A layer hashed by ds.engram_hash is marked engram.
func.func @engram_unmarked(%ids: tensor<4xi32>, %s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  %hash = ds.engram_hash %ids {layers = array<i64: 0>, max_ngram = 3 : i64, heads = 2 : i64, pad_id = 2 : i64, compressed_vocab_size = 100 : i64, multipliers = array<i64: 3, 5, 7>, primes = array<i64: 11, 13, 17, 19>, offsets = array<i64: 0, 11, 24, 41>} : (tensor<4xi32>) -> tensor<4x1x4xi64>
  // expected-error @+1 {{'ds.layer' op layer 0 is hashed by ds.engram_hash but not marked engram}}
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A layer marked engram is hashed by ds.engram_hash.
func.func @engram_not_hashed(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %kv: tensor<4x192xbf16>, %q: tensor<2x64xbf16>, %k: tensor<2x64xbf16>) {
  // expected-error @+1 {{'ds.layer' op layer 0 is marked engram but ds.engram_hash does not hash it}}
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> attributes {engram} {
    %g = ds.engram_gate %s, %kv, %q, %k {eps = 1.0e-20 : f64} : (tensor<4x2x64xbf16>, tensor<4x192xbf16>, tensor<2x64xbf16>, tensor<2x64xbf16>) -> tensor<4x2x64xbf16>
    ds.yield %g, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// There is one candidate source.
func.func @two_candidate_sources(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>, %sc: tensor<4x4xbf16>) {
  %h0, %mix0, %cand0 = ds.layer 0 #ds.csa2<mode = full, ratio = 1, kv_source = 0, index_source = 0>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> attributes {decoder} {
    %c = ds.candidate_blocks %sc : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
    ds.yield %s, %m, %c : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
  }
  // expected-error @+1 {{'ds.layer' op layer 1 publishes candidates, but layer 0 already is the candidate source}}
  %h1, %mix1, %cand1 = ds.layer 1 #ds.csa2<mode = full, ratio = 1, kv_source = 1, index_source = 1>
      -> tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2> attributes {decoder} {
    %c = ds.candidate_blocks %sc : tensor<4x4xbf16> -> !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
    ds.yield %h0, %mix0, %c : tensor<4x2x64xbf16>, tensor<4x2xf32>, !ds.candidates<ratio = 1, blocks = 2, block_size = 2>
  }
  return
}

// -----

// DSpark stages are numbered after the backbone.
module attributes {ds.n_layers = 2 : i64} {
  func.func @dspark_id(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    // expected-error @+1 {{'ds.layer' op DSpark stage 1 must follow the 2 backbone layers}}
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = dspark> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %h0, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    return
  }
}

// -----

// DSpark stages come after every backbone layer.
func.func @backbone_after_dspark(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
  %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  %h2, %mix2 = ds.layer 2 #ds.csa2<mode = dspark> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %h0, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  // expected-error @+1 {{'ds.layer' op backbone layer 1 follows a DSpark stage}}
  %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
    ds.yield %h2, %mix2 : tensor<4x2x64xbf16>, tensor<4x2xf32>
  }
  return
}

// -----

// A phase function holds all ds.n_layers backbone layers.
module attributes {ds.n_layers = 3 : i64} {
  // expected-error @+1 {{function @short has 2 backbone layers, expected 3}}
  func.func @short(%s: tensor<4x2x64xbf16>, %m: tensor<4x2xf32>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %s, %m : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    %h1, %mix1 = ds.layer 1 #ds.csa2<mode = swa> -> tensor<4x2x64xbf16>, tensor<4x2xf32> {
      ds.yield %h0, %mix0 : tensor<4x2x64xbf16>, tensor<4x2xf32>
    }
    return
  }
}

// -----

// A CED projection (ds-ced-split) shares its id with the replayed layer that
// must follow it directly.
module attributes {ds.n_layers = 2 : i64, ds.ced_split = 1 : i64} {
  func.func @prefill(%s: tensor<?x2x64xbf16>, %m: tensor<?x2xf32>, %kv: !ds.kv_cache<ratio = 1, dim = 64>, %keys: !ds.index_keys<ratio = 1, dim = 32>,
                     %x: tensor<?x64xbf16>, %wkv: tensor<64x64xbf16>, %n: tensor<64xbf16>, %wk: tensor<32x64xbf16>, %kn: tensor<32xbf16>) {
    %h0, %mix0 = ds.layer 0 #ds.csa2<mode = swa> -> tensor<?x2x64xbf16>, tensor<?x2xf32> {
      ds.yield %s, %m : tensor<?x2x64xbf16>, tensor<?x2xf32>
    }
    // expected-error @+1 {{'ds.layer' op the CED projection of layer 1 must be followed by layer 1}}
    %kv1, %keys1 = ds.layer 1 #ds.csa2<mode = full, ratio = 1, kv_source = 1, index_source = 1>
        -> !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32> attributes {ced_projection, decoder} {
      %lat = ds.compressor %x, %wkv, %n {eps = 1.0e-6 : f64, ratio = 1 : i64} : tensor<?x64xbf16>, tensor<64x64xbf16>, tensor<64xbf16> -> tensor<?x64xbf16>
      %c = ds.compress_kv %lat {rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16> -> !ds.kv_cache<ratio = 1, dim = 64>
      %k = ds.index_keys %lat, %wk, %kn {eps = 1.0e-6 : f64, rope = #ds.rope<dim = 16, theta = 1.0e4 : f64>} : tensor<?x64xbf16>, tensor<32x64xbf16>, tensor<32xbf16> -> !ds.index_keys<ratio = 1, dim = 32>
      ds.yield %c, %k : !ds.kv_cache<ratio = 1, dim = 64>, !ds.index_keys<ratio = 1, dim = 32>
    }
    return
  }
}
