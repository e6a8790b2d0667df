//===- dsc-compile.cpp - Config -> ds module -> passes -> outputs ---------===//
//
//   dsc-compile CONFIG [-o model.dscp] [--report[=text|json]] [--emit=mlir|plan-json]
//               [--max-seq-len N] [--max-batch B] [--ced=full|bounded|exact]
//               [--layer-boundaries]
//               [--tokenizer FILE | --engram-map FILE] [--emit-engram-map OUT]
//
// A thin driver: reads either config format, builds the whole model as a ds
// module, runs the pass pipeline (passes/Passes.h) and hands the module to the
// library pipeline (compiler/PlanPipeline.h) for the plan; it writes what was
// asked for: `-o X.dscp` the plan, `--emit=mlir` the module, `--emit=plan-json`
// the plan as JSON (compiler/PlanJson.h), both to -o or stdout, `--report` the
// summary. Errors name the file, key and expected
// value; the exit code is 1 and no output file is left half-written.
//===----------------------------------------------------------------------===//
#include "compiler/PlanJson.h"
#include "compiler/PlanPipeline.h"
#include "models/ConfigImport.h"
#include "models/builder/ModelBuilder.h"
#include "models/builder/PlanFacts.h"
#include "passes/KvPlan.h"
#include "passes/Passes.h"
#include "tools/dsc-compile/Report.h"

#include "dsc/numerics/EngramTokenMap.h"
#include "dsc/runtime/PlanFile.h"

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
  if (!emit.empty() && emit != "mlir" && emit != "plan-json")
    return fail("--emit takes 'mlir' or 'plan-json', got '" + emit + "'");
  // Conformance plans dump every block on every token: full unless asked.
  if (layerBoundaries && cedMode.getNumOccurrences() == 0)
    cedMode = "full";
  if (cedMode != "full" && cedMode != "bounded" && cedMode != "exact")
    return fail("--ced takes 'full', 'bounded' or 'exact', got '" + cedMode + "'");
  const bool writePlan = emit.empty() && !outputPath.empty();
  const bool wantPlan = writePlan || emit == "plan-json"; // a plan that verifies
  if (cedMode != "full" && wantPlan && layerBoundaries)
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
  const dsc::runtime::PlanModel &plan = compiled.plan;
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
    r.kv = dsc::ds::computeKvPlan(*module);
    r.params = dsc::tools::countParameters(*module, *spec);
    r.options = options;
    for (const dsc::runtime::Program &program : plan.programs) {
      r.launches[program.name] = dsc::runtime::launchesByLayer(program);
      auto &perKernel = r.fusedKernels[program.name];
      for (const dsc::runtime::Fusion &fusion : program.fusions)
        ++perKernel[fusion.kernel];
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
