//===- PlanPipeline.h - ds module -> deployable Plan, as a library ---===//
//
// What happens to a ds module after its passes have run, for any driver
// (dsc-compile, tests, a research script): lower it to a plan
// (passes/LowerToPlan.h), set the prefill chunk, compile each kernel's
// template through codegen::compileKernel (NVRTC, content-keyed cache) into
// the plan's cubin/ptx, record the activation peaks (runtime/MemoryPlan.h)
// and verify the result (runtime/PlanFile.h). The pass pipeline itself stays
// the caller's (passes/Passes.h): the module given here is final.
//
// Why a library: the steps and their order are the plan's contract, and a
// driver that only parses options cannot get them subtly different from
// another one. Why a folder of its own (compiler/) and not passes/: this code
// links the kernel compiler and the runtime's memory planner, which the
// dialect's passes and dsc-opt do not need.
//
// Invariants: the functions never print (progress goes to a callback,
// failures come back as a Status naming the option or kernel); the module is
// not modified; a plan returned in KernelMode::Embed has passed verifyPlan.
//===----------------------------------------------------------------------===//
#ifndef DSC_COMPILER_PLANPIPELINE_H
#define DSC_COMPILER_PLANPIPELINE_H

#include "codegen/KernelCompiler.h"
#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"
#include "models/ModelSpec.h"

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>

namespace mlir {
class ModuleOp;
}

namespace dsc::compiler {

/// What becomes of the plan's kernels.
enum class KernelMode {
  /// A deployable plan: every kernel has a template and compiles, the cubin
  /// and PTX go into the plan (unless gpuArch is "none"); the activation
  /// peaks are recorded and the plan is verified.
  Embed,
  /// The same plan without compiling anything (cubin/ptx stay empty):
  /// peaks recorded, plan verified. For looking at a plan (plan-json).
  Skip,
  /// For a report: kernels are compiled only for their resources, a missing
  /// template or a failed compile is not an error (CompiledPlan::
  /// kernelWarning), nothing goes into the plan, nothing is verified.
  Resources,
};

/// Default longest prefill call when none is given (what vLLM and SGLang
/// schedule per step by default); raised to the plan's minimum.
inline constexpr int64_t kDefaultPrefillChunk = 8192;

struct PlanCompileOptions {
  /// The model facts the module does not carry (models::planFactsFor plus
  /// limits, conformance flag, token map). `cedMode` is ignored: it is read
  /// from the module's `ds.ced_mode` (absent: "full"), so it always matches
  /// the lowered programs.
  runtime::PlanFacts facts;
  /// dsc-compile --prefill-chunk. nullopt: kDefaultPrefillChunk raised to
  /// the minimum (2 x window, 2 x CED replay rows), 0 for conformance plans.
  std::optional<int64_t> prefillChunk;
  /// NVRTC target (dsc-compile --gpu-arch), or "none": no kernel compiled.
  std::string gpuArch = "sm_90a";
  KernelMode kernels = KernelMode::Embed;
  /// Called after each kernel spec is handled (done, total); may be empty.
  std::function<void(size_t, size_t)> progress;
};

struct CompiledPlan {
  runtime::Plan plan;
  /// The compiled template of each distinct kernel name (the specialisations
  /// of a name share it); empty for gpuArch "none" or KernelMode::Skip.
  std::map<std::string, codegen::CompiledKernel> kernels;
  /// KernelMode::Resources: the first compile failure other than
  /// Unavailable (no NVRTC), for the caller to warn about.
  std::optional<runtime::Status> kernelWarning;
};

/// Lowers `module` (after its passes) and finishes the plan as `options`
/// say. Failures: InvalidArgument naming the dsc-compile option
/// (--prefill-chunk, --layer-boundaries) or the kernel without a template;
/// Internal when the lowered plan does not verify (a compiler bug).
runtime::Expected<CompiledPlan> compileModuleToPlan(mlir::ModuleOp module,
                                                    const PlanCompileOptions &options);

/// Checks that `module` (read from `origin`, e.g. a .mlir file) is the model
/// `spec` describes: its ds.n_layers / ds.ced_split / ds.vocab_size match,
/// it has the builder's phase functions, and it declares exactly the
/// checkpoint tensors (name, type, kind) that the builder declares for
/// `spec` (passes change neither). The plan's facts come from the config, so a
/// module of another model must be refused, not lowered. The message names
/// `origin`, the config (`spec.sourcePath`), the first difference and both
/// values.
runtime::Status checkModuleMatchesSpec(mlir::ModuleOp module, const models::ModelSpec &spec,
                                       const std::string &origin);

} // namespace dsc::compiler

#endif // DSC_COMPILER_PLANPIPELINE_H
