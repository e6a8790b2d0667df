//===- Passes.cpp - The dsc pass pipeline ----------------------------------===//
#include "passes/Passes.h"

void dsc::ds::buildAnalysisPipeline(mlir::OpPassManager &pm) {
  pm.addPass(createVerifySchedule());
  pm.addPass(createPlanKv());
}
