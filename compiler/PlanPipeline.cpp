//===- PlanPipeline.cpp - ds module -> deployable Plan ---------------===//
//
// The steps of compileModuleToPlan, in order: facts from the module,
// lowering, prefill chunk, kernels, activation peaks, verification.
// Moved here from tools/dsc-compile/dsc-compile.cpp unchanged in behaviour.
//===----------------------------------------------------------------------===//
#include "compiler/PlanPipeline.h"

#include "models/builder/ModelBuilder.h"
#include "passes/LowerToPlan.h"

#include "dsc/abi/NativeExecutables.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/PlanFile.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <algorithm>

using namespace dsc;
namespace rt = dsc::runtime;
namespace abi = dsc::abi;

namespace {

std::string typeText(mlir::Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  type.print(os);
  return text;
}

/// The module's CED mode (ds-ced-split's `ds.ced_mode`; absent: full).
std::string cedModeOf(mlir::ModuleOp module) {
  if (auto mode = module->getAttrOfType<mlir::StringAttr>("ds.ced_mode"))
    return mode.str();
  return "full";
}

/// A conformance plan dumps the logits of every prompt position, so its
/// @prefill must return them (the builder's allPrefillLogits).
rt::Status checkConformanceModule(mlir::ModuleOp module) {
  auto prefill = module.lookupSymbol<mlir::func::FuncOp>("prefill");
  if (!prefill || prefill.getNumResults() == 0)
    return rt::invalidArgument("--layer-boundaries: the module has no @prefill returning logits");
  auto logits = llvm::dyn_cast<mlir::RankedTensorType>(prefill.getResultTypes()[0]);
  if (!logits || logits.getRank() != 2 || !logits.isDynamicDim(0))
    return rt::invalidArgument(
        "--layer-boundaries: @prefill returns " + typeText(prefill.getResultTypes()[0]) +
        ", expected the logits of every position (tensor<?xVxf32>): build the module with "
        "dsc-compile CONFIG --layer-boundaries --emit=mlir");
  return rt::Status::ok();
}

/// Sets PlanFacts::prefillChunk; needs the lowered plan (window and
/// replay rows fix the minimum).
rt::Status setPrefillChunk(rt::PlanFacts &m, std::optional<int64_t> requested) {
  const int64_t minimum = std::max<int64_t>(2 * m.windowSize, 2 * m.cedReplayTokens);
  if (!requested) {
    m.prefillChunk = m.layerBoundaries ? 0 : std::max(compiler::kDefaultPrefillChunk, minimum);
    return rt::Status::ok();
  }
  int64_t chunk = *requested;
  if (chunk < 0 || (chunk > 0 && chunk < minimum))
    return rt::invalidArgument(
        "--prefill-chunk is " + std::to_string(chunk) + ", expected 0 (one call) or at least " +
        std::to_string(minimum) + " (2 x window " + std::to_string(m.windowSize) +
        (m.cedReplayTokens > 0 ? ", 2 x CED replay rows " + std::to_string(m.cedReplayTokens)
                               : std::string()) +
        ")");
  if (chunk > 0 && m.layerBoundaries)
    return rt::invalidArgument("--prefill-chunk cannot be combined with --layer-boundaries "
                               "(boundary dumps cover the whole prompt)");
  m.prefillChunk = chunk;
  return rt::Status::ok();
}

/// Compiles each distinct kernel template once (its specialisations share the
/// template and options) and, in Embed mode, adds it to the plan as one
/// module (Plan::modules) that every spec of the template, and every
/// native executable built on it (Fusion::module), points to.
rt::Status compileKernels(compiler::CompiledPlan &out, const compiler::PlanCompileOptions &options) {
  const bool required = options.kernels == compiler::KernelMode::Embed;
  codegen::KernelCompileOptions compileOptions;
  compileOptions.arch = options.gpuArch;
  auto moduleOf = [&](const std::string &templateName,
                      const codegen::CompiledKernel &compiled) -> int64_t {
    for (size_t m = 0; m < out.plan.modules.size(); ++m)
      if (out.plan.modules[m].templateName == templateName)
        return int64_t(m);
    out.plan.modules.push_back({templateName, compiled.cubin, compiled.ptx});
    return int64_t(out.plan.modules.size()) - 1;
  };
  std::vector<rt::KernelSpec> &kernels = out.plan.kernels;
  for (size_t i = 0; i < kernels.size(); ++i) {
    rt::KernelSpec &kernel = kernels[i];
    if (!codegen::hasKernelSource(kernel.name)) {
      if (required)
        return rt::invalidArgument("no CUDA kernel template for '" + kernel.name +
                                   "' (codegen/kernels); compile with --gpu-arch=none for a "
                                   "CPU plan");
      continue; // a report lists it without resources
    }
    auto it = out.kernels.find(kernel.name);
    if (it == out.kernels.end()) {
      rt::Expected<codegen::CompiledKernel> compiled = codegen::compileKernel(kernel.name, compileOptions);
      if (!compiled) {
        if (required)
          return compiled.status();
        // A report lists it without resources; the first real failure is
        // the caller's to warn about (no NVRTC is not one).
        if (!out.kernelWarning && compiled.status().code() != rt::StatusCode::Unavailable)
          out.kernelWarning = compiled.status();
        continue;
      }
      it = out.kernels.emplace(kernel.name, std::move(*compiled)).first;
    }
    if (required)
      kernel.module = moduleOf(kernel.name, it->second);
    if (options.progress)
      options.progress(i + 1, kernels.size());
  }
  if (!required)
    return rt::Status::ok();
  // Native executables load their template's module.
  for (rt::Program &program : out.plan.programs)
    for (rt::Fusion &fusion : program.fusions) {
      if (fusion.executable.empty())
        continue;
      const abi::NativeExecutableInfo *e = abi::findNativeExecutable(fusion.executable);
      if (!e)
        return rt::internalError("unknown native executable '" + fusion.executable + "'");
      auto it = out.kernels.find(e->templateName);
      if (it == out.kernels.end()) {
        rt::Expected<codegen::CompiledKernel> compiled =
            codegen::compileKernel(e->templateName, compileOptions);
        if (!compiled)
          return compiled.status();
        it = out.kernels.emplace(e->templateName, std::move(*compiled)).first;
      }
      fusion.module = moduleOf(e->templateName, it->second);
    }
  return rt::Status::ok();
}

} // namespace

rt::Expected<compiler::CompiledPlan>
compiler::compileModuleToPlan(mlir::ModuleOp module, const PlanCompileOptions &options) {
  CompiledPlan out;
  rt::PlanFacts facts = options.facts;
  facts.cedMode = cedModeOf(module);
  if (options.kernels != KernelMode::Resources && facts.layerBoundaries) {
    if (facts.cedMode != "full")
      return rt::invalidArgument("--ced=" + facts.cedMode +
                                 " plans have no layer boundaries on every token: conformance "
                                 "plans (--layer-boundaries) use --ced=full");
    if (rt::Status status = checkConformanceModule(module); !status)
      return status;
  }

  std::string error;
  if (!ds::lowerModuleToPlan(module, facts, out.plan, error))
    return rt::invalidArgument("lowering to a plan failed: " + error);
  if (rt::Status status = setPrefillChunk(out.plan.model, options.prefillChunk); !status)
    return status;

  if (options.gpuArch != "none" && options.kernels != KernelMode::Skip)
    if (rt::Status status = compileKernels(out, options); !status)
      return status;
  if (options.kernels == KernelMode::Resources)
    return out;

  // The activation peaks at the plan's limits travel with the plan. A limit
  // no arena can hold (unchunked N^2 transients) leaves them 0 ("not
  // recorded"), as the report says.
  const int64_t maxSeqLen = out.plan.model.maxSeqLen;
  for (bool rowTiles : {true, false})
    if (auto memory = rt::summarizePlanMemory(out.plan, maxSeqLen, -1, rowTiles); memory)
      for (const rt::PhaseMemory &phase : memory->phases)
        for (rt::Program &program : out.plan.programs)
          if (program.name == phase.program)
            (rowTiles ? program.peakBytes : program.peakBytesUntiled) = phase.peakBytes;
  if (rt::Status status = rt::verifyPlan(out.plan); !status)
    return rt::internalError("internal error: the lowered plan does not verify: " +
                             status.message());
  return out;
}

rt::Status compiler::checkModuleMatchesSpec(mlir::ModuleOp module, const models::ModelSpec &spec,
                                            const std::string &origin) {
  const std::string config = spec.sourcePath;
  const std::string prefix = origin + ": ";
  for (auto [key, expected] : {std::pair<const char *, int64_t>{"ds.n_layers", spec.nLayers},
                               {"ds.ced_split", spec.cedSplitLayer},
                               {"ds.vocab_size", spec.vocabSize}}) {
    auto attr = module->getAttrOfType<mlir::IntegerAttr>(key);
    if (!attr)
      return rt::invalidArgument(prefix + "the module has no integer attribute '" + key +
                                 "' (expected " + std::to_string(expected) + " from " + config +
                                 "); is it a ds module written by dsc-compile --emit=mlir?");
    if (attr.getInt() != expected)
      return rt::invalidArgument(prefix + "module attribute " + key + " is " +
                                 std::to_string(attr.getInt()) + ", but " + config + " gives " +
                                 std::to_string(expected) + ": the module is not of this config");
  }

  // The checkpoint tensors the config's model declares, in the same context.
  mlir::OwningOpRef<mlir::ModuleOp> reference = models::buildModule(spec, *module.getContext());
  if (!reference)
    return rt::internalError(config + ": internal error: the built module does not verify");
  auto functions = [](mlir::ModuleOp m) {
    std::string names;
    for (auto fn : m.getOps<mlir::func::FuncOp>())
      names += (names.empty() ? "@" : ", @") + fn.getSymName().str();
    return names.empty() ? std::string("none") : names;
  };
  if (functions(module) != functions(*reference))
    return rt::invalidArgument(prefix + "the module's functions are " + functions(module) +
                               ", but " + config + "'s model has " + functions(*reference) +
                               " (one per phase, in this order)");
  std::map<std::string, ds::ParameterOp> expected;
  for (auto param : reference->getOps<ds::ParameterOp>())
    expected.emplace(param.getSymName().str(), param);
  size_t found = 0;
  for (auto param : module.getOps<ds::ParameterOp>()) {
    std::string name = param.getSymName().str();
    auto it = expected.find(name);
    if (it == expected.end())
      return rt::invalidArgument(prefix + "ds.parameter @\"" + name + "\" is not a tensor of " +
                                 config + "'s model: the module is not of this config");
    if (it->second.getType() != param.getType() || it->second.getKind() != param.getKind())
      return rt::invalidArgument(
          prefix + "ds.parameter @\"" + name + "\" is " +
          std::string(ds::stringifyParameterKind(param.getKind())) + " " +
          typeText(param.getType()) + ", but " + config + " gives " +
          std::string(ds::stringifyParameterKind(it->second.getKind())) + " " +
          typeText(it->second.getType()) + ": the module is not of this config");
    ++found;
  }
  if (found != expected.size()) {
    std::map<std::string, bool> present;
    for (auto param : module.getOps<ds::ParameterOp>())
      present[param.getSymName().str()] = true;
    for (const auto &[name, param] : expected)
      if (!present.count(name))
        return rt::invalidArgument(prefix + "the module declares no ds.parameter @\"" + name +
                                   "\", which " + config + "'s model binds (" +
                                   std::to_string(expected.size() - found) +
                                   " missing): the module is not of this config");
  }
  return rt::Status::ok();
}
