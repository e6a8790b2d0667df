//===- dsc-tblgen.cpp - dsc's TableGen driver -------------------------------===//
//
// Runs the dsc TableGen backends (KernelAbiGen.cpp) over the ds ODS, the way
// mlir-tblgen runs MLIR's: `dsc-tblgen -gen-kernel-abi-header -I <mlir include>
// -I <repo> dialects/DeepSeek/IR/DeepSeekOps.td -o KernelParams.h`.
//===----------------------------------------------------------------------===//
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/TableGen/Main.h"
#include "llvm/TableGen/Record.h"

bool dscTableGenMain(llvm::raw_ostream &os, const llvm::RecordKeeper &records);

int main(int argc, char **argv) {
  llvm::InitLLVM init(argc, argv);
  llvm::cl::ParseCommandLineOptions(argc, argv, "dsc TableGen backends\n");
  return llvm::TableGenMain(argv[0], &dscTableGenMain);
}
