//===- Passes.cpp - The dsc pass pipeline ----------------------------------===//
#include "passes/Passes.h"

void dsc::ds::buildAnalysisPipeline(mlir::OpPassManager &pm, llvm::StringRef cedMode) {
  pm.addPass(createVerifySchedule());
  pm.addPass(createPlanKv());
  if (cedMode != "full") {
    pm.addPass(createCedSplit(CedSplitOptions{cedMode.str()}));
    pm.addPass(createVerifySchedule());
  }
}
