//===- dsc-compile.cpp - Config -> ds module -> passes -> outputs ---------===//
//
//   dsc-compile CONFIG [-o model.dscp] [--report[=text|json]] [--emit=mlir]
//               [--max-seq-len N] [--max-batch B] [--ced=full|bounded|exact]
//               [--layer-boundaries]
//               [--tokenizer FILE | --engram-map FILE] [--emit-engram-map OUT]
//
// Reads either config format, builds the whole model as a ds module, runs the
// analysis pipeline (ds-verify-schedule, ds-plan-kv), lowers it to a plan and
// writes what was asked for: `-o X.dscp` the plan, `--emit=mlir` the module
// (to -o or stdout), `--report` the summary. Errors name the file, key and
// expected value; the exit code is 1 and no output file is left half-written.
//===----------------------------------------------------------------------===//
#include "models/ConfigImport.h"
#include "models/builder/ModelBuilder.h"
#include "models/builder/PlanFacts.h"
#include "passes/KvPlan.h"
#include "passes/LowerToPlan.h"
#include "passes/Passes.h"
#include "tools/dsc-compile/Report.h"

#include "dsc/numerics/EngramTokenMap.h"
#include "dsc/abi/NativeExecutables.h"
#include "dsc/runtime/PlanFile.h"
#include "codegen/KernelCompiler.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
namespace cl = llvm::cl;

static cl::OptionCategory category("dsc-compile options");
static cl::opt<std::string> configPath(cl::Positional, cl::desc("<config.json>"), cl::Required,
                                       cl::cat(category));
static cl::opt<std::string> report("report", cl::ValueOptional, cl::init(""),
                                   cl::desc("Print the model report: --report (text) or --report=json"),
                                   cl::cat(category));
static cl::opt<std::string> emit("emit", cl::desc("Emit an artefact: mlir (the ds module)"),
                                 cl::value_desc("mlir"), cl::cat(category));
static cl::opt<std::string> outputPath(
    "o", cl::desc("Output: the plan (.dscp), or the --emit artefact (default: stdout)"),
    cl::value_desc("file"), cl::init(""), cl::cat(category));
static cl::opt<std::string> cedMode(
    "ced", cl::desc("Prefill CED mode: exact (default; the decoder on the last (L/2)·W prompt "
                    "rows, bit-identical to full), bounded (the last W rows, approximate) or "
                    "full (every layer on every prompt token; the default with "
                    "--layer-boundaries)"),
    cl::init("exact"), cl::cat(category));
static cl::opt<std::string> gpuArch(
    "gpu-arch",
    cl::desc("GPU architecture the plan's kernels are compiled for with NVRTC (sm_90a), or "
             "'none' for a plan that runs on the CPU backend only"),
    cl::init("sm_90a"), cl::cat(category));
static cl::opt<bool> layerBoundaries(
    "layer-boundaries",
    cl::desc("Conformance plan: keep every block boundary materialised and injectable"),
    cl::init(false), cl::cat(category));
static cl::opt<int64_t> maxSeqLen("max-seq-len",
                                  cl::desc("Longest sequence the plan serves (default: the "
                                           "config's max_seq_len / max_position_embeddings, else 4096)"),
                                  cl::init(0), cl::cat(category));
static cl::opt<int64_t> maxBatch("max-batch", cl::desc("Sequences per batch the plan serves"),
                                 cl::init(0), cl::cat(category));
static cl::opt<std::string> tokenizerPath(
    "tokenizer", cl::desc("tokenizer.json or a JSON list of token strings (Engram token map)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> engramMapPath(
    "engram-map", cl::desc("A precomputed Engram token map (engram_token_map.json format)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> emitEngramMap(
    "emit-engram-map", cl::desc("Write the Engram token map computed from --tokenizer"),
    cl::value_desc("file"), cl::cat(category));

/// Default prefill chunk (tokens per prefill call): what vLLM and SGLang
/// schedule per step by default; long prompts then plan C x S transients.
static constexpr int64_t kDefaultPrefillChunk = 8192;
static cl::opt<int64_t> prefillChunk(
    "prefill-chunk",
    cl::desc("Longest prefill call: longer prompts run in chunks of near-equal size (default "
             "8192, at least 2 x window and 2 x CED replay rows; 0: one call)"),
    cl::init(0), cl::cat(category));
static cl::opt<int64_t> indexerTileRows(
    "indexer-tile-rows",
    cl::desc("Token rows per tile of the fused indexer (ds-fuse-kernels; 0: untiled)"),
    cl::init(128), cl::cat(category));
static cl::list<std::string> fuseKernels(
    "fuse",
    cl::desc("Fused kernel groups (ds-fuse-kernels): all (default), none, or a comma list of "
             "mhc_entry, attention_projections, compressor, indexer, attention, moe, engram"),
    cl::CommaSeparated, cl::cat(category));

static int fail(const Twine &message) {
  WithColor::error(errs(), "dsc-compile") << message << "\n";
  return 1;
}

/// Writes `text` to `path` all or nothing.
static bool writeFile(StringRef path, StringRef text, std::string &error) {
  std::error_code ec;
  ToolOutputFile out(path, ec, sys::fs::OF_Text);
  if (ec) {
    error = (path + ": " + ec.message()).str();
    return false;
  }
  out.os() << text;
  out.os().flush();
  if (out.os().has_error()) {
    error = (path + ": write failed").str();
    return false;
  }
  out.keep();
  return true;
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  cl::HideUnrelatedOptions(category);
  cl::ParseCommandLineOptions(argc, argv, "dsc-compile: DeepSeek-V4.1 model compiler\n");
  if (maxSeqLen < 0 || maxBatch < 0)
    return fail("--max-seq-len and --max-batch must be non-negative (0: the config's limit), got " +
                std::to_string(int64_t(maxSeqLen)) + " and " + std::to_string(int64_t(maxBatch)));

  Expected<dsc::models::ModelSpec> spec = dsc::models::importConfigFile(configPath);
  if (!spec)
    return fail(toString(spec.takeError()));

  if (!report.empty() && report != "text" && report != "json")
    return fail("--report takes 'text' or 'json', got '" + report + "'");
  if (!emit.empty() && emit != "mlir")
    return fail("--emit takes 'mlir', got '" + emit + "'");
  // Conformance plans dump every block on every token: full unless asked.
  if (layerBoundaries && cedMode.getNumOccurrences() == 0)
    cedMode = "full";
  if (cedMode != "full" && cedMode != "bounded" && cedMode != "exact")
    return fail("--ced takes 'full', 'bounded' or 'exact', got '" + cedMode + "'");
  bool writePlan = emit.empty() && !outputPath.empty();
  if (cedMode != "full" && writePlan && layerBoundaries)
    return fail("--ced=" + cedMode + " plans have no layer boundaries on every token: "
                "conformance plans (--layer-boundaries) use --ced=full");
  // --fuse: default all; none alone disables fusion.
  std::vector<std::string> fuseGroups(fuseKernels.begin(), fuseKernels.end());
  if (fuseGroups.empty())
    fuseGroups = {"all"};
  if (llvm::is_contained(fuseGroups, "none")) {
    if (fuseGroups.size() > 1)
      return fail("--fuse=none cannot be combined with other groups");
    fuseGroups.clear();
  }
  if (!tokenizerPath.empty() && !engramMapPath.empty())
    return fail("give either --tokenizer or --engram-map, not both");
  if (!emitEngramMap.empty() && tokenizerPath.empty())
    return fail("--emit-engram-map needs --tokenizer");

  dsc::tools::PlanOptions options;
  options.maxSeqLen = maxSeqLen > 0 ? int64_t(maxSeqLen)
                                    : spec->limits.maxSeqLen.value_or(4096);
  options.maxBatch = maxBatch > 0 ? int64_t(maxBatch) : spec->limits.maxBatchSize.value_or(1);

  // Engram token map (reference-spec §7.1).
  std::optional<dsc::numerics::EngramTokenMap> tokenMap;
  if (writePlan && spec->hasEngram() && tokenizerPath.empty() && engramMapPath.empty())
    return fail(configPath + ": the model has Engram layers: a plan needs the token map; give "
                "--tokenizer FILE (tokenizer.json or a JSON list of token strings) or "
                "--engram-map FILE");
  if (!tokenizerPath.empty() || !engramMapPath.empty()) {
    std::string error;
    std::optional<dsc::numerics::EngramTokenMap> map =
        !tokenizerPath.empty() ? dsc::numerics::buildEngramTokenMapFromFile(tokenizerPath, &error)
                               : dsc::numerics::readEngramTokenMap(engramMapPath, &error);
    if (!map)
      return fail(error);
    if (spec->hasEngram()) {
      std::string mismatch = dsc::numerics::engramCompressedSizeError(
          map->compressedVocabSize, spec->engramCompressedVocabSize);
      if (!mismatch.empty())
        return fail((!tokenizerPath.empty() ? tokenizerPath : engramMapPath) + ": " + mismatch);
    }
    if (int64_t(map->lookup.size()) > spec->vocabSize)
      return fail(Twine(!tokenizerPath.empty() ? tokenizerPath : engramMapPath) + ": " +
                  Twine(map->lookup.size()) + " tokens, but the model's vocab_size is " +
                  Twine(spec->vocabSize));
    options.engramCompressedVocabSize = map->compressedVocabSize;
    tokenMap = map;
    if (!emitEngramMap.empty() &&
        !writeFile(emitEngramMap, dsc::numerics::engramTokenMapToJson(*map), error))
      return fail(error);
  }

  mlir::MLIRContext context;
  context.loadDialect<dsc::ds::DSDialect, mlir::func::FuncDialect>();
  dsc::models::BuildOptions buildOptions;
  buildOptions.allPrefillLogits = layerBoundaries;
  mlir::OwningOpRef<mlir::ModuleOp> module = dsc::models::buildModule(*spec, context, buildOptions);
  if (!module)
    return fail("internal error: the built module does not verify");

  mlir::PassManager pm(&context);
  dsc::ds::buildAnalysisPipeline(pm, cedMode, fuseGroups, indexerTileRows);
  if (mlir::failed(pm.run(*module)))
    return fail("the model's schedule does not verify (see above)");

  if (emit == "mlir") {
    std::string text;
    raw_string_ostream os(text);
    module->print(os);
    os << "\n";
    os.flush();
    std::string error;
    if (!writeFile(outputPath.empty() ? std::string("-") : std::string(outputPath), text, error))
      return fail(error);
  }

  // The plan: lowered for -o and for the report's launch counts.
  dsc::runtime::PlanModel plan;
  bool wantReport = !report.empty() || (emit.empty() && emitEngramMap.empty() && !writePlan);
  if (writePlan || wantReport) {
    dsc::runtime::PlanModelFacts facts =
        dsc::models::planFactsFor(*spec, options.maxSeqLen, options.maxBatch);
    facts.cedMode = cedMode;
    facts.layerBoundaries = layerBoundaries;
    if (tokenMap) {
      facts.engramTokenMap = tokenMap->lookup;
      facts.engramCompressedVocabSize = tokenMap->compressedVocabSize;
    }
    std::string error;
    if (!dsc::ds::lowerModuleToPlan(*module, facts, plan, error))
      return fail("lowering to a plan failed: " + error);
    // Chunked prefill: chunks must hold a window and a CED replay twice
    // over (PlanModel.h); the default is kDefaultPrefillChunk, raised to
    // those minimums, and 0 (one call) for conformance plans.
    dsc::runtime::PlanModelFacts &m = plan.model;
    const int64_t minimum = std::max<int64_t>(2 * m.windowSize, 2 * m.cedReplayTokens);
    if (prefillChunk.getNumOccurrences() == 0) {
      m.prefillChunk = layerBoundaries ? 0 : std::max(kDefaultPrefillChunk, minimum);
    } else {
      if (prefillChunk < 0 || (prefillChunk > 0 && prefillChunk < minimum))
        return fail("--prefill-chunk is " + std::to_string(int64_t(prefillChunk)) +
                    ", expected 0 (one call) or at least " + std::to_string(minimum) +
                    " (2 x window " + std::to_string(m.windowSize) +
                    (m.cedReplayTokens > 0 ? ", 2 x CED replay rows " + std::to_string(m.cedReplayTokens)
                                           : std::string()) +
                    ")");
      if (prefillChunk > 0 && layerBoundaries)
        return fail("--prefill-chunk cannot be combined with --layer-boundaries (boundary dumps "
                    "cover the whole prompt)");
      m.prefillChunk = prefillChunk;
    }
  }
  // The plan's kernels, compiled for -o and for the report's `kernels`
  // resources (through the content-keyed cache: a warm report run costs
  // milliseconds). One compile per distinct name: the specialisations of a
  // name share the template and options.
  std::map<std::string, dsc::codegen::CompiledKernel> compiledByName;
  if ((writePlan || wantReport) && gpuArch != "none") {
    dsc::codegen::KernelCompileOptions compileOptions;
    compileOptions.arch = gpuArch;
    bool warned = false;
    // One module per template: its specialisations and the native
    // executables built on it share it (PlanModel::modules).
    auto moduleOf = [&](const std::string &templateName,
                        const dsc::codegen::CompiledKernel &compiled) -> int64_t {
      for (size_t m = 0; m < plan.modules.size(); ++m)
        if (plan.modules[m].templateName == templateName)
          return int64_t(m);
      plan.modules.push_back({templateName, compiled.cubin, compiled.ptx});
      return int64_t(plan.modules.size()) - 1;
    };
    for (size_t i = 0; i < plan.kernels.size(); ++i) {
      dsc::runtime::KernelSpec &kernel = plan.kernels[i];
      if (!dsc::codegen::hasKernelSource(kernel.name)) {
        if (writePlan)
          return fail("no CUDA kernel template for '" + kernel.name +
                      "' (codegen/kernels); compile with --gpu-arch=none for a CPU plan");
        continue; // the report lists it without resources
      }
      auto it = compiledByName.find(kernel.name);
      if (it == compiledByName.end()) {
        auto compiled = dsc::codegen::compileKernel(kernel.name, compileOptions);
        if (!compiled) {
          if (writePlan)
            return fail(compiled.status().message());
          // Report only: the kernels are listed without resources.
          if (!warned && compiled.status().code() != dsc::runtime::StatusCode::Unavailable)
            WithColor::warning(errs(), "dsc-compile")
                << "report without kernel resources: " << compiled.status().message() << "\n";
          warned = true;
          continue;
        }
        it = compiledByName.emplace(kernel.name, std::move(*compiled)).first;
      }
      if (writePlan)
        kernel.module = moduleOf(kernel.name, it->second);
      if (sys::Process::StandardErrIsDisplayed())
        errs() << "\rcompiling kernels: " << i + 1 << "/" << plan.kernels.size();
    }
    if (sys::Process::StandardErrIsDisplayed() && !plan.kernels.empty())
      errs() << "\n";
    // Native executables load their template's module.
    for (dsc::runtime::Program &program : plan.programs)
      for (dsc::runtime::Fusion &fusion : program.fusions) {
        if (fusion.executable.empty() || !writePlan)
          continue;
        const dsc::abi::NativeExecutableInfo *e =
            dsc::abi::findNativeExecutable(fusion.executable);
        if (!e)
          return fail("internal error: unknown native executable '" + fusion.executable + "'");
        auto it = compiledByName.find(e->templateName);
        if (it == compiledByName.end()) {
          auto compiled = dsc::codegen::compileKernel(e->templateName, compileOptions);
          if (!compiled)
            return fail(compiled.status().message());
          it = compiledByName.emplace(e->templateName, std::move(*compiled)).first;
        }
        fusion.module = moduleOf(e->templateName, it->second);
      }
  }
  if (writePlan) {
    // The activation peaks at the plan's limits travel with the plan.
    for (bool rowTiles : {true, false})
      if (auto memory = dsc::runtime::summarizePlanMemory(plan, options.maxSeqLen, -1, rowTiles);
          memory)
        for (const dsc::runtime::PhaseMemory &phase : memory->phases)
          for (dsc::runtime::Program &program : plan.programs)
            if (program.name == phase.program)
              (rowTiles ? program.peakBytes : program.peakBytesUntiled) = phase.peakBytes;
    if (dsc::runtime::Status status = dsc::runtime::verifyPlan(plan); !status)
      return fail("internal error: the lowered plan does not verify: " + status.message());
    if (dsc::runtime::Status status = dsc::runtime::writePlanFile(outputPath, plan); !status)
      return fail(status.message());
  }

  if (wantReport || report.getNumOccurrences() > 0) {
    dsc::tools::Report r;
    r.spec = &*spec;
    r.kv = dsc::ds::computeKvPlan(*module);
    r.params = dsc::tools::countParameters(*module, *spec);
    r.options = options;
    for (const dsc::runtime::Program &program : plan.programs) {
      r.launches[program.name] = dsc::runtime::launchesByLayer(program);
      auto &perKernel = r.fusedKernels[program.name];
      auto &perExecutable = r.nativeExecutables[program.name];
      for (const dsc::runtime::Fusion &fusion : program.fusions) {
        ++perKernel[fusion.kernel];
        if (!fusion.executable.empty())
          ++perExecutable[fusion.executable];
      }
    }
    r.fused = !fuseGroups.empty();
    r.distinctKernels = int64_t(plan.kernels.size());
    r.prefillChunk = plan.model.prefillChunk;
    r.ced = dsc::ds::summarizeCed(*module);
    // The unchunked prefill's N² transients can exceed any arena at long
    // limits: the report says so instead of failing.
    if (auto memory = dsc::runtime::summarizePlanMemory(plan, options.maxSeqLen); memory)
      r.memory = std::move(memory.value());
    else
      r.memoryError = memory.status().message();
    if (auto untiled = dsc::runtime::summarizePlanMemory(plan, options.maxSeqLen, -1,
                                                         /*rowTiles=*/false);
        untiled)
      r.memoryUntiled = std::move(untiled.value());
    for (const char *mode : {"full", "bounded", "exact"}) {
      // One module per mode, built and split the same way.
      mlir::OwningOpRef<mlir::ModuleOp> m = dsc::models::buildModule(*spec, context, buildOptions);
      mlir::PassManager modePm(&context);
      dsc::ds::buildAnalysisPipeline(modePm, mode);
      if (!m || mlir::failed(modePm.run(*m)))
        return fail(std::string("internal error: the --ced=") + mode + " module does not verify");
      r.activatedPrefillByMode[mode] = dsc::ds::summarizeCed(*m).activatedPerPromptToken;
    }
    std::map<std::string, dsc::tools::KernelUsage> kernels;
    for (const dsc::runtime::KernelSpec &kernel : plan.kernels) {
      dsc::tools::KernelUsage &k = kernels[kernel.name];
      k.name = kernel.name;
      ++k.specialisations;
    }
    for (const dsc::runtime::Program &program : plan.programs)
      for (const dsc::runtime::Launch &launch : program.launches)
        if (launch.kernel >= 0 && size_t(launch.kernel) < plan.kernels.size())
          ++kernels[plan.kernels[launch.kernel].name].launches;
    for (auto &[name, k] : kernels) {
      auto it = compiledByName.find(name);
      if (it != compiledByName.end()) {
        k.cubinBytes = int64_t(it->second.cubin.size());
        k.entries.emplace();
        for (const dsc::codegen::KernelEntryResources &e : it->second.entries)
          k.entries->push_back({e.entry, e.registers, e.spillStoreBytes, e.spillLoadBytes,
                                e.stackFrameBytes, e.sharedBytes});
      }
      r.kernels.push_back(std::move(k));
    }
    if (report == "json")
      dsc::tools::printJsonReadable(dsc::tools::reportToJson(r), outs());
    else
      dsc::tools::printReportText(r, outs());
  }
  return 0;
}
