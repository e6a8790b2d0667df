//===- Passes.h - dsc pass declarations and pipeline -----------------------===//
//
// Light on purpose: no dialect headers (see ../shared/toolchain.md on build
// times). Each pass lives in its own file named after it.
//===----------------------------------------------------------------------===//
#ifndef DSC_PASSES_PASSES_H
#define DSC_PASSES_PASSES_H

#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace dsc::ds {
#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The pass pipeline dsc-compile runs on a freshly built module. A CED
/// mode other than "full" adds ds-ced-split (and re-verifies the schedule);
/// a non-empty `fuseKernels` (group names or "all") adds ds-fuse-kernels
/// with `indexerTileRows` rows per indexer tile, then ds-select-executables.
/// It transforms the module (CED split, fusion, executable marks).
void buildCompilePipeline(mlir::OpPassManager &pm, llvm::StringRef cedMode = "full",
                           llvm::ArrayRef<std::string> fuseKernels = {},
                           int64_t indexerTileRows = 128);
} // namespace dsc::ds

#endif // DSC_PASSES_PASSES_H
