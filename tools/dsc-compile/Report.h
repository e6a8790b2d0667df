//===- Report.h - What a deployer needs to know about a compiled model ----===//
//
// The report of `dsc-compile --report[=json]`: layer roles and sources, KV
// bytes per token, parameter counts (counted from the module's ds.parameter
// shapes) and the Engram layout. docs/report.md is the schema; keys are only
// ever added, never renamed.
//===----------------------------------------------------------------------===//
#ifndef DSC_TOOLS_DSC_COMPILE_REPORT_H
#define DSC_TOOLS_DSC_COMPILE_REPORT_H

#include "models/ModelSpec.h"
#include "passes/CedSummary.h"
#include "passes/KvFootprint.h"
#include "dsc/runtime/MemoryPlan.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/raw_ostream.h"

#include <map>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace dsc::tools {

/// Parameter counts of the model (see docs/report.md for what each covers).
struct ParameterCounts {
  int64_t backboneTotal = 0;
  int64_t engramTotal = 0;
  int64_t dsparkTotal = 0;
  double activatedDecode = 0;
  double activatedPrefill = 0;
};

ParameterCounts countParameters(mlir::ModuleOp module, const models::ModelSpec &spec);

/// Plan options that are not model facts.
struct PlanOptions {
  int64_t maxSeqLen = 0;
  int64_t maxBatch = 1;
  std::optional<int64_t> engramCompressedVocabSize; ///< from the token map, when given
};

/// Resource usage of one kernel entry function (ptxas -v).
struct KernelEntryUsage {
  std::string entry;
  int64_t registers = 0, spillStoreBytes = 0, spillLoadBytes = 0, stackFrameBytes = 0,
          sharedBytes = 0;
};

/// One distinct kernel name of the plan.
struct KernelUsage {
  std::string name;
  int64_t launches = 0;        ///< steps of it in all programs (own launches or
                               ///< steps of fused kernels)
  int64_t specialisations = 0; ///< KernelSpecs of the plan with this name
  /// From the compiled template, which the specialisations share (nullopt:
  /// not compiled, e.g. --gpu-arch=none): ptxas -v per entry, cubin size.
  std::optional<std::vector<KernelEntryUsage>> entries;
  std::optional<int64_t> cubinBytes;
};

struct Report {
  const models::ModelSpec *spec = nullptr;
  ds::KvFootprint kv;
  ParameterCounts params;
  PlanOptions options;
  /// Kernel launches per program and layer (-1: outside any layer), from the
  /// lowered plan.
  std::map<std::string, std::map<int64_t, int64_t>> launches;
  /// Fused kernel launches per program and template (ds-fuse-kernels).
  std::map<std::string, std::map<std::string, int64_t>> fusedKernels;
  /// Fused launches per program run by each native executable
  /// (ds-select-executables; Fusion::executable).
  std::map<std::string, std::map<std::string, int64_t>> nativeExecutables;
  bool fused = false; ///< the plan was compiled with fusion
  /// The prefill CED split of the compiled module (passes/CedSummary.h) and
  /// the activated parameters per prompt token of every mode.
  std::optional<ds::CedSummary> ced;
  /// Activation arena peaks per phase at the plan's limits (runtime/MemoryPlan.h).
  std::optional<runtime::PlanMemorySummary> memory;
  /// The same for a backend that runs row-tiled fusions whole (CUDA today).
  std::optional<runtime::PlanMemorySummary> memoryUntiled;
  std::string memoryError; ///< why no memory plan exists at these limits
  /// Sessions a device's paged KV pool would hold (issue 13;
  /// `--device-memory GIB`): the device's bytes less the weights and the
  /// largest activation peak (the backend without row tiles: the larger),
  /// over each session's paged states (runtime::pagedStateBytes) at a
  /// context length.
  struct SessionCapacity {
    uint64_t deviceBytes = 0, freeBytes = 0;
    struct Row {
      int64_t tokens = 0;
      uint64_t bytesPerSession = 0, sessions = 0;
    };
    std::vector<Row> rows;
  };
  std::optional<SessionCapacity> capacity;
  int64_t prefillChunk = 0; ///< the plan's PlanFacts::prefillChunk
  std::map<std::string, double> activatedPrefillByMode;
  int64_t distinctKernels = 0;
  /// One per distinct kernel name, sorted by name.
  std::vector<KernelUsage> kernels;
};

/// Report::SessionCapacity of a device of `deviceGiB` GiB for the plan, from
/// the report's memory summaries (which must be set).
runtime::Expected<Report::SessionCapacity> sessionCapacity(const runtime::Plan &plan,
                                                           const Report &report,
                                                           double deviceGiB);

llvm::json::Value reportToJson(const Report &report);
/// Prints JSON for people and FileCheck: objects one key per line, arrays of
/// scalars and objects of scalars (a layer) on one line; "id" and "role" lead.
void printJsonReadable(const llvm::json::Value &value, llvm::raw_ostream &os);
void printReportText(const Report &report, llvm::raw_ostream &os);

} // namespace dsc::tools

#endif // DSC_TOOLS_DSC_COMPILE_REPORT_H
