//===- Passes.cpp - The dsc pass pipeline ----------------------------------===//
#include "passes/Passes.h"

void dsc::ds::buildCompilePipeline(mlir::OpPassManager &pm, llvm::StringRef cedMode,
                                    llvm::ArrayRef<std::string> fuseKernels,
                                    int64_t indexerTileRows) {
  pm.addPass(createVerifySchedule());
  pm.addPass(createPlanKv());
  if (cedMode != "full") {
    pm.addPass(createCedSplit(CedSplitOptions{cedMode.str()}));
    pm.addPass(createVerifySchedule());
  }
  if (!fuseKernels.empty()) {
    FuseKernelsOptions options;
    options.kernels = llvm::to_vector(fuseKernels);
    options.indexerTileRows = indexerTileRows;
    pm.addPass(createFuseKernels(options));
    pm.addPass(createSelectExecutables());
  }
}
