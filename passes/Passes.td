//===- Passes.td - dsc passes over the ds dialect --------------------------===//
//
// Pipeline order (see Passes.cpp and docs/passes.md): verify the schedule,
// then plan the KV state. Later passes (CED split, fusion, memory planning,
// lowering) join here.
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

#endif // DSC_PASSES_TD
