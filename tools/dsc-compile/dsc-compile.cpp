//===- dsc-compile.cpp - Config or module -> passes -> plan / report ------===//
//
//   dsc-compile CONFIG [-o model.dscp] [--report[=text|json]]
//               [--emit=mlir|plan-json] [--max-seq-len N] [--max-batch B]
//               [--ced=full|bounded|exact] [--fuse=...] [--layer-boundaries]
//               [--tokenizer FILE | --engram-map FILE] [--emit-engram-map OUT]
//               [--pass-pipeline='builtin.module(...)'] [--mlir-* options]
//   dsc-compile MODULE.mlir --config CONFIG [the same outputs and options]
//
// A thin driver: it parses options, builds the ds module from the config
// (or reads a .mlir module and checks it is the config's model), runs the
// pass pipeline (passes/Passes.h; then any --pass-pipeline), and hands the
// module to the library pipeline (compiler/PlanPipeline.h) for the plan;
// it writes what was asked for: `-o X.dscp` the plan, `--emit=mlir` the
// module, `--emit=plan-json` the plan as JSON (compiler/PlanJson.h), to -o or
// stdout, `--report` the summary. Errors name the file, option and expected
// value; the exit code is 1 and no output file is left half-written.
//
// A .mlir input carries its own pass decisions (CED split, fusion): --ced,
// --fuse and --indexer-tile-rows are refused for it; the config supplies the
// model facts and limits a plan records, which the module does not carry.
//===----------------------------------------------------------------------===//
#include "compiler/PlanJson.h"
#include "compiler/PlanPipeline.h"
#include "models/ConfigImport.h"
#include "models/builder/ModelBuilder.h"
#include "models/builder/PlanFacts.h"
#include "passes/KvFootprint.h"
#include "passes/Passes.h"
#include "tools/dsc-compile/Report.h"

#include "dsc/numerics/EngramTokenMap.h"
#include "dsc/runtime/PlanFile.h"

#include "dialects/DeepSeek/IR/DeepSeekDialect.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Process.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include "llvm/Support/WithColor.h"

using namespace llvm;
namespace cl = llvm::cl;

static cl::OptionCategory category("dsc-compile options");
static cl::OptionCategory mlirCategory("MLIR options (pass manager, IR printing, timing)");
static cl::opt<std::string> inputPath(
    cl::Positional, cl::desc("<config.json | module.mlir (with --config)>"), cl::Required,
    cl::cat(category));
static cl::opt<std::string> configOption(
    "config",
    cl::desc("The config a .mlir input was built from: the plan's model facts and the report "
             "come from it"),
    cl::value_desc("config.json"), cl::init(""), cl::cat(category));
static cl::opt<std::string> report("report", cl::ValueOptional, cl::init(""),
                                   cl::desc("Print the model report: --report (text) or --report=json"),
                                   cl::cat(category));
static cl::opt<std::string> emit(
    "emit",
    cl::desc("Emit an artefact: mlir (the ds module after the passes) or plan-json (the plan as "
             "JSON, kernel binaries left out)"),
    cl::value_desc("mlir|plan-json"), cl::cat(category));
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
static cl::opt<double> deviceMemory(
    "device-memory",
    cl::desc("With --report: the device's memory in GiB, for the sessions of 4K, 128K and 1M "
             "tokens its paged KV pool would hold"),
    cl::value_desc("GiB"), cl::init(0.0), cl::cat(category));
static cl::opt<std::string> tokenizerPath(
    "tokenizer", cl::desc("tokenizer.json or a JSON list of token strings (Engram token map)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> engramMapPath(
    "engram-map", cl::desc("A precomputed Engram token map (engram_token_map.json format)"),
    cl::value_desc("file"), cl::cat(category));
static cl::opt<std::string> emitEngramMap(
    "emit-engram-map", cl::desc("Write the Engram token map computed from --tokenizer"),
    cl::value_desc("file"), cl::cat(category));
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
static cl::opt<std::string> passPipeline(
    "pass-pipeline",
    cl::desc("More passes, after the default pipeline (a config input) or as the only ones (a "
             ".mlir input), e.g. 'builtin.module(ds-fuse-kernels{kernels=moe})'; "
             "ds-verify-schedule runs after them"),
    cl::value_desc("pipeline"), cl::init(""), cl::cat(category));

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

/// A .mlir (or MLIR bytecode) input instead of a config.
static bool isModuleFile(StringRef path) {
  return path.ends_with(".mlir") || path.ends_with(".mlirbc");
}

/// The MLIR options registered by the pass manager, context, printer and
/// timing join their own --help category.
static void showMlirOptions() {
  for (auto &[name, option] : cl::getRegisteredOptions())
    if (name.starts_with("mlir-"))
      option->addCategory(mlirCategory);
}

/// --pass-pipeline into `pm`: `builtin.module(a,b)` (MLIR's anchored form)
/// or the bare list `a,b`.
static LogicalResult addPassPipeline(mlir::PassManager &pm, StringRef text) {
  StringRef inner = text.trim();
  if (inner.consume_front("builtin.module")) {
    inner = inner.ltrim();
    if (!inner.consume_front("(") || !inner.consume_back(")")) {
      errs() << "expected 'builtin.module(<passes>)'";
      return failure();
    }
  }
  return mlir::parsePassPipeline(inner, pm, errs());
}

int main(int argc, char **argv) {
  InitLLVM init(argc, argv);
  // Passes first: --mlir-print-ir-after=<pass> lists the passes registered
  // when the pass-manager options are.
  mlir::registerCanonicalizerPass();
  mlir::registerCSEPass();
  dsc::ds::registerDSPasses();
  mlir::registerMLIRContextCLOptions();
  mlir::registerPassManagerCLOptions();
  mlir::registerDefaultTimingManagerCLOptions();
  mlir::registerAsmPrinterCLOptions();
  showMlirOptions();
  cl::HideUnrelatedOptions({&category, &mlirCategory});
  cl::ParseCommandLineOptions(argc, argv, "dsc-compile: DeepSeek-V4.1 model compiler\n");
  if (maxSeqLen < 0 || maxBatch < 0)
    return fail("--max-seq-len and --max-batch must be non-negative (0: the config's limit), got " +
                std::to_string(int64_t(maxSeqLen)) + " and " + std::to_string(int64_t(maxBatch)));
  if (!(deviceMemory >= 0.0 && deviceMemory <= 1048576.0)) // also rejects NaN
    return fail("--device-memory takes GiB in [0, 1048576] (0: no session count), got " +
                std::to_string(double(deviceMemory)));

  // The input: a config, or a module plus the config it was built from.
  const bool moduleInput = isModuleFile(inputPath);
  if (moduleInput && configOption.empty())
    return fail(inputPath + ": a .mlir input needs --config CONFIG, the config the module was "
                "built from (the plan's model facts and the report come from it)");
  if (!moduleInput && !configOption.empty())
    return fail("--config is for a .mlir input; " + inputPath + " is read as the config itself");
  const cl::Option *shapingOptions[] = {&cedMode, std::addressof(fuseKernels),
                                        &indexerTileRows};
  if (moduleInput)
    for (const cl::Option *option : shapingOptions)
      if (option->getNumOccurrences() > 0)
        return fail("--" + option->ArgStr + " shapes the module a config is built into; " +
                    inputPath + " is a module already (its CED split and fusion are its own): " +
                    "change it with --pass-pipeline or dsc-opt");
  const std::string configPath = moduleInput ? std::string(configOption) : std::string(inputPath);

  Expected<dsc::models::ModelSpec> spec = dsc::models::importConfigFile(configPath);
  if (!spec)
    return fail(toString(spec.takeError()));

  if (!report.empty() && report != "text" && report != "json")
    return fail("--report takes 'text' or 'json', got '" + report + "'");
  if (!emit.empty() && emit != "mlir" && emit != "plan-json")
    return fail("--emit takes 'mlir' or 'plan-json', got '" + emit + "'");
  // Conformance plans dump every block on every token: full unless asked.
  if (layerBoundaries && cedMode.getNumOccurrences() == 0)
    cedMode = "full";
  if (cedMode != "full" && cedMode != "bounded" && cedMode != "exact")
    return fail("--ced takes 'full', 'bounded' or 'exact', got '" + cedMode + "'");
  const bool writePlan = emit.empty() && !outputPath.empty();
  const bool wantPlan = writePlan || emit == "plan-json"; // a plan that verifies
  if (!moduleInput && cedMode != "full" && wantPlan && layerBoundaries)
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
  if (wantPlan && spec->hasEngram() && tokenizerPath.empty() && engramMapPath.empty())
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

  // The module: built from the config, or read and checked against it.
  mlir::MLIRContext context;
  context.loadDialect<dsc::ds::DSDialect, mlir::func::FuncDialect>();
  dsc::models::BuildOptions buildOptions;
  buildOptions.allPrefillLogits = layerBoundaries;
  llvm::SourceMgr sourceMgr;
  std::optional<mlir::SourceMgrDiagnosticHandler> diagnostics; // file:line:col for a .mlir
  mlir::OwningOpRef<mlir::ModuleOp> module;
  if (moduleInput) {
    std::string error;
    std::unique_ptr<MemoryBuffer> file = mlir::openInputFile(inputPath, &error);
    if (!file)
      return fail(error);
    sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
    diagnostics.emplace(sourceMgr, &context);
    module = mlir::parseSourceFile<mlir::ModuleOp>(sourceMgr, mlir::ParserConfig(&context));
    if (!module)
      return fail(inputPath + ": not a valid ds module (see above)");
    if (dsc::runtime::Status status =
            dsc::compiler::checkModuleMatchesSpec(*module, *spec, inputPath);
        !status)
      return fail(status.message());
  } else {
    module = dsc::models::buildModule(*spec, context, buildOptions);
    if (!module)
      return fail("internal error: the built module does not verify");
  }

  // The passes: the default pipeline for a built module, then --pass-pipeline,
  // then the schedule check again whenever the passes are not dsc-compile's.
  mlir::PassManager pm(&context);
  if (!moduleInput)
    dsc::ds::buildCompilePipeline(pm, cedMode, fuseGroups, indexerTileRows);
  if (!passPipeline.empty() && mlir::failed(addPassPipeline(pm, passPipeline)))
    return fail("--pass-pipeline '" + passPipeline + "' does not parse (see above)");
  if (moduleInput || !passPipeline.empty())
    pm.addPass(dsc::ds::createVerifySchedule());
  if (mlir::failed(mlir::applyPassManagerCLOptions(pm)))
    return fail("the --mlir-* pass manager options do not apply (see above)");
  mlir::applyDefaultTimingPassManagerCLOptions(pm);
  if (mlir::failed(pm.run(*module)))
    return fail(moduleInput || !passPipeline.empty()
                    ? Twine("the passes failed or the module's schedule does not verify (see above)")
                    : Twine("the model's schedule does not verify (see above)"));

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

  // The plan (compiler/PlanPipeline.h): for -o, plan-json and the report's
  // launch counts and kernel resources. A report-only run compiles kernels
  // for their resources through the content-keyed cache (a warm run costs
  // milliseconds); plan-json compiles none (it leaves the binaries out).
  const bool wantReport = !report.empty() || (emit.empty() && emitEngramMap.empty() && !writePlan);
  dsc::compiler::CompiledPlan compiled;
  if (wantPlan || wantReport) {
    dsc::compiler::PlanCompileOptions planOptions;
    planOptions.facts = dsc::models::planFactsFor(*spec, options.maxSeqLen, options.maxBatch);
    planOptions.facts.layerBoundaries = layerBoundaries;
    if (tokenMap) {
      planOptions.facts.engramTokenMap = tokenMap->lookup;
      planOptions.facts.engramCompressedVocabSize = tokenMap->compressedVocabSize;
    }
    if (prefillChunk.getNumOccurrences() > 0)
      planOptions.prefillChunk = int64_t(prefillChunk);
    planOptions.gpuArch = gpuArch;
    planOptions.kernels = writePlan               ? dsc::compiler::KernelMode::Embed
                          : emit == "plan-json" ? dsc::compiler::KernelMode::Skip
                                                : dsc::compiler::KernelMode::Resources;
    bool progressShown = false;
    if (sys::Process::StandardErrIsDisplayed())
      planOptions.progress = [&progressShown](size_t done, size_t total) {
        errs() << "\rcompiling kernels: " << done << "/" << total;
        progressShown = true;
      };
    dsc::runtime::Expected<dsc::compiler::CompiledPlan> result =
        dsc::compiler::compileModuleToPlan(*module, planOptions);
    if (progressShown)
      errs() << "\n";
    if (!result)
      return fail(result.status().message());
    compiled = std::move(*result);
    if (compiled.kernelWarning)
      WithColor::warning(errs(), "dsc-compile")
          << "report without kernel resources: " << compiled.kernelWarning->message() << "\n";
  }
  const dsc::runtime::Plan &plan = compiled.plan;
  if (writePlan)
    if (dsc::runtime::Status status = dsc::runtime::writePlanFile(outputPath, plan); !status)
      return fail(status.message());
  if (emit == "plan-json") {
    dsc::runtime::Expected<std::string> json = dsc::compiler::planToJson(plan);
    if (!json)
      return fail("--emit=plan-json: " + json.status().message());
    std::string error;
    if (!writeFile(outputPath.empty() ? std::string("-") : std::string(outputPath), *json, error))
      return fail(error);
  }

  if (wantReport || report.getNumOccurrences() > 0) {
    dsc::tools::Report r;
    r.spec = &*spec;
    r.kv = dsc::ds::computeKvFootprint(*module);
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
    // A module's fusion is what it holds; a built one's what --fuse asked.
    r.fused = !fuseGroups.empty();
    if (moduleInput)
      r.fused = module->walk([](dsc::ds::FusedOp) { return mlir::WalkResult::interrupt(); })
                    .wasInterrupted();
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
    if (deviceMemory > 0.0 && r.memory) {
      auto capacity = dsc::tools::sessionCapacity(plan, r, double(deviceMemory));
      if (!capacity)
        return fail(capacity.status().message());
      r.capacity = std::move(capacity.value());
    }
    for (const char *mode : {"full", "bounded", "exact"}) {
      // One module per mode, built and split the same way.
      mlir::OwningOpRef<mlir::ModuleOp> m = dsc::models::buildModule(*spec, context, buildOptions);
      mlir::PassManager modePm(&context);
      dsc::ds::buildCompilePipeline(modePm, mode);
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
      auto it = compiled.kernels.find(name);
      if (it != compiled.kernels.end()) {
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
