//===- Validate.h - Check a ModelSpec and derive its layer facts ----------===//
//
// The importer (ConfigImport.cpp) fills the config fields of a ModelSpec and
// hands it here. finalizeModelSpec validates every rule listed in
// docs/model-spec.md, draws the Engram layout, checks engram_num_embeddings
// against it and fills the derived part (layers, cedSplitLayer, engram).
//
// Messages name the file, the key as the file spells it, the layer and the
// expected value:
//   "config.json: key 'compress_ratios[5]': layer 5 has compress_ratio 1 but
//    its kv source layer 2 has ratio 2; expected compress_ratio 2 (...)"
// A KeySpelling maps the reference (`ModelArgs`) key name to the spelling of
// the file's format ("dim" -> "text_config.hidden_size" for HF).
//===----------------------------------------------------------------------===//
#ifndef DSC_MODELS_VALIDATE_H
#define DSC_MODELS_VALIDATE_H

#include "models/ModelSpec.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <functional>
#include <string>

namespace dsc::models {

/// Reference key name -> the key as written in the file being checked.
using KeySpelling = std::function<std::string(llvm::StringRef referenceKey)>;

/// Spells every key as the reference `inference/config.json` does.
std::string referenceSpelling(llvm::StringRef referenceKey);

/// The HF `config.json` spelling of a reference key ("dim" ->
/// "text_config.hidden_size"); `nested` false for a flat HF file whose text
/// keys sit at the top level.
std::string huggingFaceSpelling(llvm::StringRef referenceKey, bool nested);

/// Checks the config fields of `spec` (everything above "Derived" in
/// ModelSpec). Does not look at the derived fields.
llvm::Error validateModelSpec(const ModelSpec &spec,
                              llvm::StringRef displayName,
                              const KeySpelling &spell = referenceSpelling);

/// validateModelSpec, then draws the Engram layout (checking
/// engram_num_embeddings against it) and fills layers, cedSplitLayer and
/// engram. On error `spec`'s derived fields are left empty.
llvm::Error finalizeModelSpec(ModelSpec &spec, llvm::StringRef displayName,
                              const KeySpelling &spell = referenceSpelling);

/// The derived facts alone, for a spec that already passed
/// validateModelSpec (DeriveLayers.cpp). Fills layers and cedSplitLayer.
void deriveLayers(ModelSpec &spec);

/// The Engram layout of every engramLayerIds entry (DeriveLayers.cpp):
/// primes, offsets, tableRows, multipliers.
std::vector<EngramLayerLayout> computeEngramLayout(const ModelSpec &spec);

/// Nearest entry of a sorted layer list at or below `id`; -1 if none.
int64_t nearestAtOrBelow(const std::vector<int64_t> &sortedIds, int64_t id);

} // namespace dsc::models

#endif // DSC_MODELS_VALIDATE_H
