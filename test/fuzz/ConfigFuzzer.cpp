//===- ConfigFuzzer.cpp - libFuzzer harness: config import + validation ---===//
//
// Input: the text of a model config, either format (HF config.json or the
// reference inference/config.json), as importConfigFile hands it on after its
// size check.
// API: dsc::models::importConfigText (models/ConfigImport.cpp): the pre-parse
// check (checkConfigJson), llvm::json parsing, the key readers, every
// validation rule (models/Validate.cpp) and the derived layer facts and
// Engram layout (DeriveLayers.cpp).
// Finding: a crash, a sanitizer report (ASan, UBSan, leak), a hang or a huge
// allocation on any input; an error without a message; or an accepted config
// that breaks ModelSpec's invariants (layers.size() == nLayers + nMtpLayers,
// layers[i].id == i, role names round-trip, the spec equals itself).
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"
#include "models/ConfigImport.h"

#include "llvm/Support/Error.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>

namespace {

void check(bool ok, const char *what) {
  dsc::fuzz::check(ok, "dsc-fuzz-config: accepted config breaks an invariant", what);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  llvm::StringRef text(reinterpret_cast<const char *>(data), size);
  llvm::Expected<dsc::models::ModelSpec> spec =
      dsc::models::importConfigText(text, "fuzz-config.json");
  if (!spec) {
    std::string message = llvm::toString(spec.takeError());
    check(!message.empty(), "an error without a message");
    return 0;
  }
  check(spec->layers.size() == size_t(spec->nLayers + spec->nMtpLayers),
        "layers.size() != nLayers + nMtpLayers");
  for (size_t i = 0; i < spec->layers.size(); ++i) {
    const dsc::models::LayerSpec &layer = spec->layers[i];
    check(layer.id == int64_t(i), "layers[i].id != i");
    check(dsc::models::roleFromName(dsc::models::roleName(layer.role)) == layer.role,
          "role name does not round-trip");
  }
  check(dsc::models::modelSpecDifferences(*spec, *spec).empty(), "a spec differs from itself");
  return 0;
}
