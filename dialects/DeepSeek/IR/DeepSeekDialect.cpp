//===- DeepSeekDialect.cpp - ds dialect registration, types, attributes --===//
//
// Registers the dialect and verifies the parameters of its types and
// attributes (tile divisibility of the KV record types, consistency of the
// CSA2 and RoPE attributes).
//===----------------------------------------------------------------------===//
#include "dialects/DeepSeek/IR/DeepSeekDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace dsc::ds;

#include "dialects/DeepSeek/IR/DeepSeekDialect.cpp.inc"
#include "dialects/DeepSeek/IR/DeepSeekEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/DeepSeek/IR/DeepSeekAttrs.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/DeepSeek/IR/DeepSeekTypes.cpp.inc"

void DSDialect::initialize() {
  addAttributes<
#define GET_ATTRDEF_LIST
#include "dialects/DeepSeek/IR/DeepSeekAttrs.cpp.inc"
      >();
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/DeepSeek/IR/DeepSeekTypes.cpp.inc"
      >();
  addOperations<
#define GET_OP_LIST
#include "dialects/DeepSeek/IR/DeepSeekOps.cpp.inc"
      >();
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

LogicalResult CSA2Attr::verify(function_ref<InFlightDiagnostic()> emitError,
                               LayerMode mode, int64_t ratio, int64_t kvSource,
                               int64_t indexSource) {
  bool compressed = mode != LayerMode::swa && mode != LayerMode::dspark;
  if (!compressed) {
    if (ratio != 0 || kvSource != -1 || indexSource != -1)
      return emitError() << "a " << stringifyLayerMode(mode)
                         << " layer has ratio 0 and no kv or index source";
    return success();
  }
  if (ratio <= 0)
    return emitError() << "a " << stringifyLayerMode(mode)
                       << " layer needs a compress ratio > 0, got " << ratio;
  if (kvSource < 0 || indexSource < 0)
    return emitError() << "a " << stringifyLayerMode(mode)
                       << " layer needs kv_source and index_source";
  return success();
}

LogicalResult RopeAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t dim, FloatAttr theta, int64_t originalSeqLen,
                               FloatAttr factor, FloatAttr betaFast,
                               FloatAttr betaSlow) {
  if (dim <= 0 || dim % 2 != 0)
    return emitError() << "rope dim must be positive and even, got " << dim;
  if (!theta || theta.getValueAsDouble() <= 0)
    return emitError() << "rope theta must be positive";
  if (originalSeqLen < 0)
    return emitError() << "original_seq_len must be >= 0";
  if (originalSeqLen > 0 && (!factor || !betaFast || !betaSlow))
    return emitError() << "YaRN (original_seq_len > 0) needs factor, beta_fast and beta_slow";
  return success();
}

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

LogicalResult KvCacheType::verify(function_ref<InFlightDiagnostic()> emitError,
                                  int64_t ratio, int64_t dim) {
  if (ratio <= 0)
    return emitError() << "kv_cache ratio must be > 0, got " << ratio;
  if (dim <= 0 || dim % 16 != 0)
    return emitError() << "kv_cache dim must be a multiple of 16 (FP4 tiles with "
                          "e4m3 scales), got "
                       << dim;
  return success();
}

LogicalResult IndexKeysType::verify(function_ref<InFlightDiagnostic()> emitError,
                                    int64_t ratio, int64_t dim) {
  if (ratio <= 0)
    return emitError() << "index_keys ratio must be > 0, got " << ratio;
  if (dim <= 0 || dim % 32 != 0)
    return emitError() << "index_keys dim must be a multiple of 32 (FP4 tiles with "
                          "ue8m0 scales), got "
                       << dim;
  return success();
}

LogicalResult TopKType::verify(function_ref<InFlightDiagnostic()> emitError,
                               int64_t ratio, int64_t k) {
  if (ratio <= 0 || k <= 0)
    return emitError() << "topk needs ratio > 0 and k > 0, got ratio " << ratio
                       << " and k " << k;
  return success();
}

LogicalResult CandidatesType::verify(function_ref<InFlightDiagnostic()> emitError,
                                     int64_t ratio, int64_t blocks,
                                     int64_t blockSize) {
  if (ratio <= 0 || blocks <= 0 || blockSize <= 0)
    return emitError() << "candidates need ratio, blocks and block_size > 0";
  return success();
}

LogicalResult WindowType::verify(function_ref<InFlightDiagnostic()> emitError,
                                 int64_t size, int64_t dim) {
  if (size <= 0)
    return emitError() << "window size must be > 0, got " << size;
  if (dim <= 0 || dim % 32 != 0)
    return emitError() << "window dim must be a multiple of 32 (FP8 tiles with "
                          "ue8m0 scales), got "
                       << dim;
  return success();
}
