//===- ConfigImport.h - Read a config file into a validated ModelSpec -----===//
//
// Both formats are recognised by content: a top-level `text_config` object (or
// HF spellings such as `hidden_size`) means the HF format, reference
// `ModelArgs` keys (`dim`, `n_layers`) mean the inference format. Both yield
// the same ModelSpec for the same model.
//
// Every error names the file, the key as the file spells it (with the list
// index / layer where one applies) and the expected value, e.g.
//   "config.json: key 'compress_ratios[5]': layer 5 has compress_ratio 1 but
//    its kv source layer 2 has ratio 2; expected compress_ratio 2 (...)"
//   "config.json: key 'text_config.hidden_size': expected an integer, got
//    string"
// Nothing is returned on error. docs/model-spec.md lists every rule.
//===----------------------------------------------------------------------===//
#ifndef DSC_MODELS_CONFIGIMPORT_H
#define DSC_MODELS_CONFIGIMPORT_H

#include "models/ModelSpec.h"
#include "llvm/Support/Error.h"
#include "llvm/ADT/StringRef.h"

namespace dsc::models {

/// Reads, parses, validates and derives a ModelSpec from a config file.
llvm::Expected<ModelSpec> importConfigFile(llvm::StringRef path);

/// Same as importConfigFile for text already in memory; `displayName` is the
/// file name used in messages.
llvm::Expected<ModelSpec> importConfigText(llvm::StringRef text,
                                           llvm::StringRef displayName);

} // namespace dsc::models

#endif // DSC_MODELS_CONFIGIMPORT_H
