//===- Passes.td - dsc passes over the ds dialect --------------------------===//
//
// Pipeline order (see Passes.cpp and docs/passes.md): verify the schedule,
// plan the KV state, then (for --ced=bounded|exact) split prefill for CED,
// then group ops into fused kernels. Lowering to the plan (LowerToPlan.cpp)
// and memory planning (runtime/lib/MemoryPlan.cpp) follow.
//===----------------------------------------------------------------------===//
#ifndef DSC_PASSES_TD
#define DSC_PASSES_TD

include "mlir/Pass/PassBase.td"

def VerifySchedule : Pass<"ds-verify-schedule", "::mlir::ModuleOp"> {
  let summary = "Check the model-wide CSA2, Engram, DSpark and CED schedule";
  let description = [{
    `ds.layer` verifiers check what one layer reads and publishes. This pass
    checks what only the whole module can show: every phase function holds
    layers 0..n_layers-1 in order, exactly one layer per id; decoder marks
    match the CED split (`ds.ced_split`); every Engram layer named by
    `ds.engram_hash` exists, is in range and is marked `engram` (and no other
    layer is); the candidate source is unique; DSpark stages follow the
    backbone. Every error names the layer.
  }];
}

def PlanKv : Pass<"ds-plan-kv", "::mlir::ModuleOp"> {
  let summary = "Plan one KV buffer per source and report bytes per token";
  let description = [{
    Finds the shared state the `@decode` function keeps across steps: one
    compressed-KV buffer and one index-key buffer per KV source (FP4 records:
    288 B and 68 B per entry for the released config), the top-k and
    candidate values that stay transient, and one FP8 window ring per layer.
    Reuse layers read their source's buffer: no copies. The plan is attached
    to the module as `ds.kv_plan` (bytes per token per source and in total,
    window bytes per token per layer, ring bytes), which the report prints.
    Record sizes come from the numerics library's layout descriptors.
  }];
}

def CedSplit : Pass<"ds-ced-split", "::mlir::ModuleOp"> {
  let summary = "CED prefill: run the decoder layers only on the last R prompt rows";
  let description = [{
    Prefill under CED (docs/passes.md) runs the encoder layers (< L/2) on
    every prompt token but the decoder only on a replayed suffix: the decoder
    of DeepSeek-V4.1 reads the prompt through layer L/2's compressed KV and
    index keys (all tokens) plus one sliding window per layer, so only the
    last rows need the expensive attention and MoE of layers >= L/2. This is
    most of the activated parameters per prompt token.

    The pass rewrites `@prefill`: layer L/2's projection part (pre-collapse,
    attn norm, compressor, `ds.compress_kv`, `ds.index_keys`) becomes a
    `ds.layer` marked `ced_projection` on all tokens; a `ds.replay_slice`
    keeps the last R' = min(R, S) rows of the stream and mix; layer L/2
    (reading the projected kv and keys) and every later decoder layer, the
    final norm and the head run on the slice. L/2 is the module's
    `ds.ced_split`, the window W comes from the `!ds.window` types.
    `mode=exact` replays R = (L/2)·W rows: every row the last token and the
    decoder's window rings depend on, so the logits and the decode state are
    bit-identical to `full`. `mode=bounded` replays R = W rows (approximate:
    window dependencies chain across decoder layers). `mode=full` leaves the
    module unchanged. The mode is recorded as the module's `ds.ced_mode`.
  }];
  let options = [
    Option<"mode", "mode", "std::string", /*default=*/"\"exact\"",
           "CED prefill mode: full (unchanged), bounded (replay W rows) or "
           "exact (replay (L/2)·W rows, bit-identical)">,
  ];
}

def FuseKernels : Pass<"ds-fuse-kernels", "::mlir::ModuleOp"> {
  let summary = "Group the ops of each layer into fused kernels (one launch each)";
  let description = [{
    Wraps dataflow groups of each `ds.layer` into `ds.fused` ops, each one
    kernel launch after lowering: `mhc_entry` ([hc_post] + hc_pre + rms_norm
    [+ the DSpark capture's copy_mean]; the stream's hc_mixes is moved just
    after the group, off the sublayer's critical path), `attention_projections` (Q chain and window KV chain with
    the ring write), `compressor` (compressor + compress_kv + index_keys),
    `indexer` (queries, head weights, scores, candidates, top-k; row-tiled,
    `tile_rows` = `indexer-tile-rows`, so its [S, T] scores exist one tile
    at a time), `attention`
    (sparse attention + inverse RoPE), `moe` (gate + experts), `engram`
    (lookup + projection + gate). Groups stay inside a layer, so layer
    boundaries and CED replay marks are kept; values do not change, only
    how ops are grouped into launches. A Reuse layer of the released config
    drops from 21 launches to 7. `kernels` limits the groups formed (default:
    all).
  }];
  let options = [
    ListOption<"kernels", "kernels", "std::string",
               "Groups to form: all (default) or any of mhc_entry, "
               "attention_projections, compressor, indexer, attention, moe, engram">,
    Option<"indexerTileRows", "indexer-tile-rows", "int64_t", /*default=*/"128",
           "Token rows per tile of the row-tiled indexer kernel (0: untiled)">,
  ];
}

def SelectExecutables : Pass<"ds-select-executables", "::mlir::ModuleOp"> {
  let summary = "Mark the fused groups a native executable runs";
  let description = [{
    Sets `executable = "<name>"` on every `ds.fused` whose group and ops
    match an entry of runtime/include/dsc/abi/NativeExecutables.def (the one
    list of native kernels: name, group, codegen template, step pattern).
    Lowering writes the name into the plan's fusion, so the decision to run
    a group as one native kernel is the compiler's and visible in the plan;
    unmarked groups run step by step. A step whose results must stay internal
    (`x*` in the pattern) only matches when the group does not yield them.
    Values do not change.
  }];
}

#endif // DSC_PASSES_TD
