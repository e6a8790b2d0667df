//===- DeepSeekBase.td - The ds dialect, its enums, attributes, types ----===//
//
// The `ds` dialect is the graph level of dsc: one op per step of the official
// DeepSeek-V4.1 reference forward pass (reference-spec §5–§12), on builtin
// tensors (bf16/f32 activations; f8E4M3FN, f8E8M0FNU and i8-packed FP4 for
// quantised weights). Two things make the architecture visible in the IR:
//   - every op lives in a `ds.layer` region carrying `#ds.csa2<...>`, so
//     passes and reports speak in layers;
//   - cross-layer sharing (compressed KV, index keys, top-k, candidate pool)
//     is SSA dataflow of dedicated types, produced by a source layer and
//     consumed by the layers that read it, instead of the reference's mutable
//     SharedAttentionRuntime.
//===----------------------------------------------------------------------===//
#ifndef DSC_DIALECT_DEEPSEEK_BASE_TD
#define DSC_DIALECT_DEEPSEEK_BASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def DS_Dialect : Dialect {
  let name = "ds";
  let cppNamespace = "::dsc::ds";
  let summary = "Graph-level ops of DeepSeek-V4.1-class models";
  let description = [{
    Ops follow the reference forward pass one to one; CSA2 sharing between
    layers is expressed with the types `!ds.kv_cache`, `!ds.index_keys`,
    `!ds.topk` and `!ds.candidates`. See docs/architecture.md.
  }];
  let useDefaultTypePrinterParser = 1;
  let useDefaultAttributePrinterParser = 1;
}

// A kernel parameter an op derives from its types rather than an attribute
// (e.g. compress_kv's `ratio`, read off its !ds.kv_cache result). `getter` is
// C++ over `$_op` (the op) returning a value of `type` (I64, F64 or Bool).
class DS_KernelParam<string paramName, string paramType, code paramGetter, string doc> {
  string name = paramName;
  string type = paramType;
  code getter = paramGetter;
  string summary = doc;
}

// Every ds op is a kernel of the plan's vocabulary (docs/kernels.md) unless it
// sets `isKernel = 0` (structure: parameters, weights, layers, fused groups,
// terminators). A kernel's parameters are its attributes plus `kernelParams`;
// dsc-tblgen -gen-kernel-abi-* turns them into the typed kernel ABI
// (runtime/include/dsc/abi/KernelParams.h, runtime/schema/kernel_params.fbs).
class DS_Op<string mnemonic, list<Trait> traits = []>
    : Op<DS_Dialect, mnemonic, traits> {
  bit isKernel = 1;
  list<DS_KernelParam> kernelParams = [];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def DS_LayerMode : I32EnumAttr<"LayerMode", "role of a layer in the CSA2 schedule", [
    I32EnumAttrCase<"swa", 0>,     // ratio 0: sliding window only
    I32EnumAttrCase<"full", 1>,    // KV source + index source
    I32EnumAttrCase<"reindex", 2>, // own index queries, another layer's keys
    I32EnumAttrCase<"reuse", 3>,   // reads KV and top-k of its sources
    I32EnumAttrCase<"dspark", 4>,  // DSpark (MTP) stage
  ]> {
  let cppNamespace = "::dsc::ds";
  let genSpecializedAttr = 0;
}
def DS_LayerModeAttr : EnumAttr<DS_Dialect, DS_LayerMode, "mode">;

def DS_LinearQuant : I32EnumAttr<"LinearQuant", "how a linear layer computes", [
    I32EnumAttrCase<"bf16", 0>, // plain bf16 F.linear
    I32EnumAttrCase<"fp32", 1>, // fp32 F.linear (head, ratio-2 compressor)
    I32EnumAttrCase<"fp8", 2>,  // act_quant per 32 + e4m3 weight, 32x32 ue8m0 blocks
    I32EnumAttrCase<"fp4", 3>,  // act_quant per 32 + e2m1 weight, ue8m0 per row x 32
  ]> {
  let cppNamespace = "::dsc::ds";
  let genSpecializedAttr = 0;
}
def DS_LinearQuantAttr : EnumAttr<DS_Dialect, DS_LinearQuant, "quant">;

def DS_ParameterKind : I32EnumAttr<"ParameterKind", "what a checkpoint tensor holds", [
    I32EnumAttrCase<"weight", 0>,
    I32EnumAttrCase<"scale", 1>,      // ue8m0 block scales of a quantised weight
    I32EnumAttrCase<"fp4_packed", 2>, // two e2m1 values per i8, even element low
  ]> {
  let cppNamespace = "::dsc::ds";
  let genSpecializedAttr = 0;
}
def DS_ParameterKindAttr : EnumAttr<DS_Dialect, DS_ParameterKind, "parameter_kind">;

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

class DS_Attr<string name, string attrMnemonic, list<Trait> traits = []>
    : AttrDef<DS_Dialect, name, traits> {
  let mnemonic = attrMnemonic;
}

def DS_CSA2Attr : DS_Attr<"CSA2", "csa2"> {
  let summary = "A layer's place in the CSA2 schedule";
  let description = [{
    `mode` is the layer's role, `ratio` its compress ratio (0 for SWA-only
    and DSpark layers), `kv_source` / `index_source` the layers whose
    compressed KV and top-k it reads (its own id for a source; -1 if none).
    Example: `#ds.csa2<mode = reuse, ratio = 2, kv_source = 2, index_source = 2>`.
  }];
  let parameters = (ins
    "::dsc::ds::LayerMode":$mode,
    DefaultValuedParameter<"int64_t", "0">:$ratio,
    DefaultValuedParameter<"int64_t", "-1">:$kv_source,
    DefaultValuedParameter<"int64_t", "-1">:$index_source);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DS_RopeAttr : DS_Attr<"Rope", "rope"> {
  let summary = "Interleaved RoPE on the last `dim` channels, optionally YaRN";
  let description = [{
    Frequencies `1/theta^(2k/dim)`; when `original_seq_len > 0` they are
    blended with YaRN (`factor`, `beta_fast`, `beta_slow`; no mscale), as
    reference-spec §9.2 states.
  }];
  let parameters = (ins
    "int64_t":$dim,
    "::mlir::FloatAttr":$theta,
    DefaultValuedParameter<"int64_t", "0">:$original_seq_len,
    OptionalParameter<"::mlir::FloatAttr">:$factor,
    OptionalParameter<"::mlir::FloatAttr">:$beta_fast,
    OptionalParameter<"::mlir::FloatAttr">:$beta_slow);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

//===----------------------------------------------------------------------===//
// Types: values shared between layers
//===----------------------------------------------------------------------===//

class DS_Type<string name, string typeMnemonic, list<Trait> traits = []>
    : TypeDef<DS_Dialect, name, traits> {
  let mnemonic = typeMnemonic;
}

def DS_KvCacheType : DS_Type<"KvCache", "kv_cache"> {
  let summary = "Compressed main KV of a KV source (FP4 records, 16-value tiles)";
  let parameters = (ins "int64_t":$ratio, "int64_t":$dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DS_IndexKeysType : DS_Type<"IndexKeys", "index_keys"> {
  let summary = "Indexer keys of a KV source (FP4 records, 32-value tiles)";
  let parameters = (ins "int64_t":$ratio, "int64_t":$dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DS_TopKType : DS_Type<"TopK", "topk"> {
  let summary = "Compressed positions each query attends to (per token, k of them)";
  let parameters = (ins "int64_t":$ratio, "int64_t":$k);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DS_CandidatesType : DS_Type<"Candidates", "candidates"> {
  let summary = "Candidate pool of the candidate source (blocks x block_size positions)";
  let parameters = (ins "int64_t":$ratio, "int64_t":$blocks, "int64_t":$block_size);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DS_WindowType : DS_Type<"Window", "window"> {
  let summary = "A layer's sliding-window KV ring (FP8 records, 32-value tiles)";
  let parameters = (ins "int64_t":$size, "int64_t":$dim);
  let assemblyFormat = "`<` struct(params) `>`";
  let genVerifyDecl = 1;
}

def DS_SharedType : AnyTypeOf<[DS_KvCacheType, DS_IndexKeysType, DS_TopKType,
                               DS_CandidatesType]>;

#endif // DSC_DIALECT_DEEPSEEK_BASE_TD
