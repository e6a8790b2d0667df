//===- DeepSeekDialect.h - The ds dialect -----------------------------------===//
//
// Include this header to use the ds dialect's ops, types and attributes.
// It pulls in MLIR IR headers: keep it out of files that do not build IR.
//===----------------------------------------------------------------------===//
#ifndef DSC_DIALECT_DEEPSEEK_DIALECT_H
#define DSC_DIALECT_DEEPSEEK_DIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h.inc"
#include "dialects/DeepSeek/IR/DeepSeekEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "dialects/DeepSeek/IR/DeepSeekAttrs.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/DeepSeek/IR/DeepSeekTypes.h.inc"

#define GET_OP_CLASSES
#include "dialects/DeepSeek/IR/DeepSeekOps.h.inc"

#endif // DSC_DIALECT_DEEPSEEK_DIALECT_H
