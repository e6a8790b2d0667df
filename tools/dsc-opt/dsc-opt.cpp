//===- dsc-opt.cpp - Parse, verify and transform ds IR --------------------===//
//
// mlir-opt for dsc: the ds and func dialects plus dsc's passes (ds-*) and
// MLIR's canonicalize/cse. Used by the lit tests of every pass.
//===----------------------------------------------------------------------===//
#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  dsc::ds::registerDSPasses();
  mlir::DialectRegistry registry;
  registry.insert<dsc::ds::DSDialect, mlir::func::FuncDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "dsc optimizer driver\n", registry));
}
