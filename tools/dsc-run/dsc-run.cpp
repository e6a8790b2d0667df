//===- dsc-run.cpp - Run a plan on a checkpoint ----------------------------===//
//
//   dsc-run PLAN --weights CKPT --input-ids FILE --prefill-len P
//           [--backend cpu] [--logits-out OUT.npy]
//           [--force-boundaries GOLDEN.safetensors] [--dump-layers DIR]
//           [--cuda-graphs on|off|log] [--cuda-sync] [--cuda-topk radix|quadratic]
//   dsc-run PLAN --weights CKPT --prompt-ids FILE --max-new-tokens N
//   dsc-run PLAN --weights CKPT --prompts FILE.jsonl [--max-new-tokens N] [--sequential | --max-running N]
//           [--prefix-cache on|off] [--prefix-block TOKENS] [--prefix-cache-mib MIB]
//           (many prompts, exact prefix reuse: Prompts.h)
//   dsc-run PLAN --describe   (facts, launches and memory peaks of the plan)
//
// With --input-ids: prefill ids[:P], then teacher-forced decode of every
// remaining id; --logits-out gets float32 [1 + (N - P), vocab] (the prefill's
// last position, then each decode step). With --prompt-ids: prefill the
// prompt, then greedy decoding for N tokens (printed). Ids files are text
// (whitespace-separated) or .npy int arrays. The --cuda-* flags (and, below
// them, DSC_CUDA_GRAPHS / DSC_CUDA_SYNC / DSC_CUDA_TOPK_QUADRATIC) set the
// CUDA backend's switches (tools/common/CudaFlags.h). Links no MLIR/LLVM. Exit codes: 0
// ok, 1 error, 2 usage, 77 backend unavailable (e.g. --backend cuda without a
// GPU), so test runners can skip.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Conformance.h"
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Scheduler.h"
#include "dsc/runtime/InputFile.h"
#include "dsc/runtime/LaunchGraph.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/Npy.h"
#include "dsc/runtime/PlanFile.h"
#include "dsc/runtime/StreamSchedule.h"
#include "tools/common/CommandLine.h"
#include "tools/common/CudaFlags.h"
#include "Prompts.h"

#include <algorithm>
#include <climits>
#include <cstdio>
#include <exception>
#include <cstdlib>
#include <iostream>
#include <map>
#include <string>
#include <vector>

using namespace dsc::runtime;

namespace {

/// The largest id file read (a 1,048,576-token prompt is ~7 MiB of text).
constexpr uint64_t kMaxIdFileBytes = 256ull << 20;

int usage(const char *message) {
  std::fprintf(stderr,
               "dsc-run: error: %s\n"
               "usage: dsc-run PLAN --weights CKPT (--input-ids FILE --prefill-len P | "
               "--prompt-ids FILE --max-new-tokens N |\n"
               "               --prompts FILE.jsonl [--max-new-tokens N] [--sequential | --max-running N] "
               "[--prefix-cache on|off] [--prefix-block T] [--prefix-cache-mib M])\n"
               "               [--backend cpu|cuda] [--logits-out OUT.npy]\n"
               "               [--force-boundaries GOLDEN.safetensors] [--dump-layers DIR]\n"
               "               %s\n"
               "       dsc-run PLAN --describe\n",
               message, dsc::tools::kCudaUsage);
  return 2;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "dsc-run: error: %s\n", message.c_str());
  return 1;
}

Expected<std::vector<int32_t>> readIds(const std::string &path) {
  std::vector<int32_t> ids;
  if (path.size() > 4 && path.substr(path.size() - 4) == ".npy") {
    Expected<HostTensor> t = readNpy(path);
    if (!t)
      return t.status();
    if (t->dtype() != DType::I64 && t->dtype() != DType::I32)
      return invalidArgument(path + ": token ids must be an int32 or int64 array, got " +
                             dtypeName(t->dtype()));
    for (int64_t i = 0; i < t->numElements(); ++i) {
      int64_t v = t->dtype() == DType::I64 ? t->data<int64_t>()[i] : t->data<int32_t>()[i];
      if (v < 0 || v > INT32_MAX)
        return invalidArgument(path + ": token " + std::to_string(i) + " has id " +
                               std::to_string(v) + ", outside [0, " + std::to_string(INT32_MAX) +
                               "]");
      ids.push_back(int32_t(v));
    }
    return ids;
  }
  // A regular file of bounded size (a FIFO or /dev/zero is refused), then
  // strictly: decimal ids separated by whitespace, nothing else (a NUL byte
  // or any other character is an error naming its offset).
  Expected<std::string> text = readRegularFile(path, "id file", kMaxIdFileBytes);
  if (!text)
    return text.status();
  size_t i = 0;
  const std::string &s = *text;
  auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
  while (i < s.size()) {
    if (space(s[i])) {
      ++i;
      continue;
    }
    const size_t begin = i;
    long long v = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') {
      v = v * 10 + (s[i] - '0');
      if (v > INT32_MAX)
        return invalidArgument(path + ": the id at byte " + std::to_string(begin) +
                               " exceeds " + std::to_string(INT32_MAX));
      ++i;
    }
    if (i == begin || (i < s.size() && !space(s[i]))) {
      const unsigned char c = static_cast<unsigned char>(s[i]);
      return invalidArgument(path + ": byte " + std::to_string(i) + " (" +
                             (c >= 0x20 && c < 0x7f ? "'" + std::string(1, char(c)) + "'"
                                                    : "code " + std::to_string(int(c))) +
                             ") is not part of a decimal token id");
    }
    ids.push_back(int32_t(v));
  }
  return ids;
}

} // namespace

/// The steps a GPU backend issues for program p: a native fusion is one
/// step, as the backend that has it runs it; every other launch its own.
static std::vector<CallStep> backendSteps(const Program &p) {
  std::vector<CallStep> steps;
  for (size_t k = 0; k < p.launches.size(); ++k) {
    const int64_t f = p.launches[k].fusion;
    const bool native = f >= 0 && size_t(f) < p.fusions.size() &&
                        !p.fusions[size_t(f)].executable.empty();
    if (native && !steps.empty() && steps.back().kind == CallStep::Kind::NativeFusion &&
        p.launches[steps.back().first].fusion == f) {
      steps.back().end = k + 1;
      continue;
    }
    CallStep step;
    step.kind = native ? CallStep::Kind::NativeFusion : CallStep::Kind::Launch;
    step.first = k;
    step.end = k + 1;
    steps.push_back(step);
  }
  return steps;
}

/// dsc-run PLAN --describe-schedule: the decode program's steps as the CUDA
/// graph capture spreads them over 4 streams (StreamSchedule.h) on the CUDA
/// backend's default layout (planDeviceMemory), one line
/// per step: its index, stream, the steps it waits for on other streams and
/// its kernels. For reading why a step waits on a fork (docs/runtime.md).
static int describeSchedule(const std::string &planPath) {
  Expected<Plan> plan = readPlanFile(planPath);
  if (!plan)
    return fail(plan.status().message());
  const Program *p = plan->program("decode");
  if (!p)
    return fail(planPath + ": no decode program");
  Expected<MemoryPlan> memory = planDeviceMemory(*plan, *p, 1, 1, kPrivateArenaBytes);
  if (!memory)
    return fail(memory.status().message());
  const std::vector<CallStep> steps = backendSteps(*p);
  const StepStreams streams = scheduleSteps(launchGraph(*p, *memory), steps, 4);
  for (size_t i = 0; i < steps.size(); ++i) {
    std::string kernels, waits;
    for (size_t k = steps[i].first; k < steps[i].end; ++k)
      kernels += (k > steps[i].first ? " " : "") +
                 plan->kernels[size_t(p->launches[k].kernel)].name;
    for (int64_t w : streams.schedule.waits[i])
      waits += (waits.empty() ? "" : ",") + std::to_string(w);
    std::printf("%4zu  stream %d  waits [%s]  %s\n", i, streams.schedule.stream[i],
                waits.c_str(), kernels.c_str());
  }
  return 0;
}

/// dsc-run PLAN --describe: what the plan holds, for deployers (no weights).
static int describe(const std::string &planPath) {
  Expected<Plan> plan = readPlanFile(planPath);
  if (!plan)
    return fail(plan.status().message());
  const PlanFacts &m = plan->model;
  std::printf("plan %s (schema %u): %s, %lld layers, dim %lld, vocab %lld\n", planPath.c_str(),
              plan->version, m.name.c_str(), (long long)m.nLayers, (long long)m.dim,
              (long long)m.vocabSize);
  std::printf("  max_seq_len %lld, ced %s (replay %lld rows), prefill chunk %lld%s\n",
              (long long)m.maxSeqLen, m.cedMode.c_str(), (long long)m.cedReplayTokens,
              (long long)m.prefillChunk, m.layerBoundaries ? ", layer boundaries" : "");
  size_t cubinBytes = 0;
  for (const Module &module : plan->modules)
    cubinBytes += module.cubin.size();
  std::printf("  %zu tensors, %zu states, %zu kernels, %zu modules (%zu cubin bytes)\n",
              plan->tensors.size(), plan->states.size(), plan->kernels.size(),
              plan->modules.size(), cubinBytes);
  for (const Program &p : plan->programs) {
    int64_t launches = 0;
    for (auto [layer, n] : launchesByLayer(p))
      launches += n;
    size_t native = 0;
    for (const Fusion &f : p.fusions)
      native += !f.executable.empty();
    std::printf("  program %s: %lld kernel launches (%zu steps, %zu fused kernels, %zu native), "
                "activation peak %llu B (%llu B without row tiles)",
                p.name.c_str(), (long long)launches, p.launches.size(), p.fusions.size(), native,
                (unsigned long long)p.peakBytes, (unsigned long long)p.peakBytesUntiled);
    // The longest chain of steps that wait for each other (LaunchGraph.h) in
    // a one-token call on the CUDA backend's layout (planDeviceMemory: a
    // call this small gives its values bytes of their own) and with the
    // values sharing bytes (the host arena's placement, --cuda-arena shared):
    // what side-by-side launches could shorten.
    const int64_t start = p.name == "decode" ? 1 : 0;
    Expected<MemoryPlan> memory = planDeviceMemory(*plan, p, 1, start, kPrivateArenaBytes);
    Expected<MemoryPlan> shared = planMemory(*plan, p, 1, start, true);
    if (!memory || !shared) {
      std::printf(", no dependency depth (%s)",
                  (memory ? shared.status() : memory.status()).message().c_str());
    } else {
      const std::vector<CallStep> steps = backendSteps(p);
      const StepStreams streams = scheduleSteps(launchGraph(p, *memory), steps, 4);
      const StepStreams sharing = scheduleSteps(launchGraph(p, *shared), steps, 4);
      size_t waits = 0;
      for (const std::vector<int64_t> &w : streams.schedule.waits)
        waits += w.size();
      std::printf(", dependency depth %lld steps at 1 token (%lld with values sharing bytes); "
                  "with native fusions %zu steps of depth %lld (%lld sharing) on %d of 4 streams "
                  "(%zu cross-stream waits)",
                  (long long)launchGraph(p, *memory).depth,
                  (long long)launchGraph(p, *shared).depth, steps.size(),
                  (long long)streams.graph.depth, (long long)sharing.graph.depth,
                  streams.schedule.streams, waits);
    }
    std::printf("\n");
  }
  return 0;
}

static int runMain(int argc, char **argv) {
  if (argc == 3 && std::string(argv[2]) == "--describe")
    return describe(argv[1]);
  if (argc == 3 && std::string(argv[2]) == "--describe-schedule")
    return describeSchedule(argv[1]);
  dsc::tools::CommandLine cl = dsc::tools::parseCommandLine(
      argc, argv,
      dsc::tools::withOptions({"--weights", "--input-ids", "--prefill-len", "--backend",
                               "--logits-out", "--force-boundaries", "--dump-layers",
                               "--prompt-ids", "--max-new-tokens", "--prompts", "--prefix-cache",
                               "--prefix-block", "--prefix-cache-mib", "--max-running"},
                              dsc::tools::kCudaValuedOptions),
      dsc::tools::withOptions({"--sequential"}, dsc::tools::kCudaFlags));
  if (!cl.error.empty())
    return usage(cl.error.c_str());
  std::string planPath = cl.positional;
  std::map<std::string, std::string> &options = cl.options;
  if (planPath.empty())
    return usage("no plan given");
  if (!options.count("--weights"))
    return usage("--weights is required");
  bool teacherForced = options.count("--input-ids");
  const bool prompts = options.count("--prompts");
  if (int(teacherForced) + int(options.count("--prompt-ids")) + int(prompts) != 1)
    return usage("give exactly one of --input-ids, --prompt-ids and --prompts");
  dsc::tools::PromptsOptions promptsOptions;
  if (prompts) {
    bool ok = true;
    promptsOptions.path = options["--prompts"];
    if (options.count("--max-new-tokens"))
      promptsOptions.maxNewTokens = dsc::tools::parseCount(options["--max-new-tokens"], ok);
    if (!ok)
      return usage("--max-new-tokens must be a non-negative integer");
    if (options.count("--prefix-cache")) {
      const std::string &v = options["--prefix-cache"];
      if (v != "on" && v != "off")
        return usage(("--prefix-cache must be on or off, got '" + v + "'").c_str());
      promptsOptions.prefixCache = v == "on";
    }
    if (options.count("--prefix-block")) {
      promptsOptions.prefixBlock = dsc::tools::parseCount(options["--prefix-block"], ok);
      if (!ok || promptsOptions.prefixBlock < 1)
        return usage("--prefix-block must be a positive number of tokens");
    }
    if (options.count("--prefix-cache-mib")) {
      const int64_t mib = dsc::tools::parseCount(options["--prefix-cache-mib"], ok);
      if (!ok || mib < 0 || mib > (int64_t(1) << 24))
        return usage("--prefix-cache-mib must be in [0, 16777216]");
      promptsOptions.cacheBytes = uint64_t(mib) << 20;
    }
    promptsOptions.sequential = cl.flags.count("--sequential");
    if (options.count("--max-running")) {
      promptsOptions.maxRunning = dsc::tools::parseCount(options["--max-running"], ok);
      if (!ok || promptsOptions.maxRunning < 1 || promptsOptions.maxRunning > 4096)
        return usage("--max-running must be in [1, 4096]");
      if (promptsOptions.sequential)
        return usage("give one of --max-running and --sequential");
    }
  } else if (options.count("--prefix-cache") || options.count("--prefix-block") ||
             options.count("--prefix-cache-mib") || cl.flags.count("--sequential") ||
             options.count("--max-running")) {
    return usage("--prefix-cache, --prefix-block, --prefix-cache-mib, --sequential and "
                 "--max-running go with --prompts");
  }

  EngineOptions engineOptions;
  if (options.count("--backend"))
    engineOptions.backend = options["--backend"];
  if (std::string bad = dsc::tools::applyCudaFlags(cl, engineOptions.cuda); !bad.empty())
    return usage(bad.c_str());
  if (std::string bad = dsc::tools::applyCpuFlags(cl, engineOptions); !bad.empty())
    return usage(bad.c_str());
  Expected<std::unique_ptr<Engine>> engine =
      Engine::load(planPath, options["--weights"], engineOptions);
  if (!engine) {
    // No driver or no GPU: exit 77, the test runners' "skipped".
    if (engine.status().code() == StatusCode::Unavailable) {
      std::fprintf(stderr, "dsc-run: skipped: %s\n", engine.status().message().c_str());
      return 77;
    }
    return fail(engine.status().message());
  }
  if (prompts) {
    if (Status s = dsc::tools::runPrompts(**engine, promptsOptions); !s)
      return fail(s.message());
    return 0;
  }
  const Plan &plan = (*engine)->plan();
  std::unique_ptr<Session> session = (*engine)->newSession();

  Expected<std::vector<int32_t>> ids =
      readIds(teacherForced ? options["--input-ids"] : options["--prompt-ids"]);
  if (!ids)
    return fail(ids.status().message());
  int64_t prefillLen = int64_t(ids->size());
  int64_t newTokens = 0;
  bool ok = true;
  if (teacherForced) {
    if (!options.count("--prefill-len"))
      return usage("--input-ids needs --prefill-len");
    prefillLen = dsc::tools::parseCount(options["--prefill-len"], ok);
    if (!ok || prefillLen < 1 || prefillLen > int64_t(ids->size()))
      return fail("--prefill-len must be in [1, " + std::to_string(ids->size()) + "], got '" +
                  options["--prefill-len"] + "'");
  } else {
    newTokens = dsc::tools::parseCount(options.count("--max-new-tokens") ? options["--max-new-tokens"] : "16", ok);
    if (!ok)
      return fail("--max-new-tokens must be a non-negative integer");
  }
  // Checked before anything runs, without overflow (a huge --max-new-tokens
  // once wrapped the sum, passed, and lost every token at max_seq_len).
  const int64_t prompt = teacherForced ? int64_t(ids->size()) : prefillLen;
  if (prompt > plan.model.maxSeqLen || newTokens > plan.model.maxSeqLen - prompt)
    return fail(std::to_string(prompt) + " prompt + " + std::to_string(newTokens) +
                " new tokens exceed the plan's max_seq_len " +
                std::to_string(plan.model.maxSeqLen));

  // Dumps are per call: a prompt a plan runs in chunks would keep only the
  // last chunk's rows of them.
  if (options.count("--dump-layers") && plan.model.prefillChunk > 0 &&
      prefillLen > plan.model.prefillChunk)
    return fail("--dump-layers needs the prompt in one prefill call: " + std::to_string(prefillLen) +
                " tokens run in chunks of at most " + std::to_string(plan.model.prefillChunk) +
                " (compile with --prefill-chunk 0 or --layer-boundaries)");

  ObserverChain chain;
  std::unique_ptr<LayerDumper> dumper;
  std::unique_ptr<GoldenForcing> forcing;
  if (options.count("--dump-layers")) {
    dumper = std::make_unique<LayerDumper>(options["--dump-layers"], *session, plan);
    chain.add(dumper.get());
  }
  if (options.count("--force-boundaries")) {
    if (!plan.model.layerBoundaries)
      return fail(planPath + ": --force-boundaries needs a plan compiled with "
                             "dsc-compile --layer-boundaries");
    Expected<std::unique_ptr<GoldenForcing>> f = GoldenForcing::open(options["--force-boundaries"]);
    if (!f)
      return fail(f.status().message());
    forcing = std::move(f.value());
    chain.add(forcing.get());
  }
  if (dumper || forcing) // no observer otherwise: decode may run as a CUDA graph
    session->setObserver(&chain);

  std::vector<HostTensor> rows;
  auto lastRow = [&](const HostTensor &logits) {
    HostTensor row(DType::F32, {1, logits.dim(logits.shape().size() - 1)});
    const float *src = logits.data<float>() + (logits.dim(0) - 1) * row.dim(1);
    std::copy(src, src + row.dim(1), row.data<float>());
    return row;
  };

  Expected<HostTensor> logits = session->prefill(std::span<const int32_t>(ids->data(), prefillLen));
  if (!logits)
    return fail(logits.status().message());
  if (dumper) {
    if (Status s = session->syncStates(); !s)
      return fail(s.message());
    if (Status s = dumper->dumpCaches(); !s)
      return fail(s.message());
  }
  rows.push_back(lastRow(*logits));
  std::vector<int32_t> generated;
  for (int64_t step = 0; teacherForced ? prefillLen + step < int64_t(ids->size()) : step < newTokens;
       ++step) {
    int32_t next = teacherForced ? (*ids)[prefillLen + step] : greedyToken(rows.back());
    if (!teacherForced)
      generated.push_back(next);
    logits = session->decode(next);
    if (!logits)
      return fail(logits.status().message());
    rows.push_back(lastRow(*logits));
  }
  if (dumper && !dumper->status())
    return fail(dumper->status().message());

  if (options.count("--logits-out")) {
    int64_t vocab = rows.front().dim(1);
    HostTensor all(DType::F32, {int64_t(rows.size()), vocab});
    for (size_t r = 0; r < rows.size(); ++r)
      std::copy(rows[r].data<float>(), rows[r].data<float>() + vocab, all.data<float>() + r * vocab);
    if (Status s = writeNpy(options["--logits-out"], all); !s)
      return fail(s.message());
  }
  if (!teacherForced) {
    for (int32_t t : generated)
      std::printf("%d ", t);
    std::printf("\n");
  }
  return 0;
}

int main(int argc, char **argv) {
  return dsc::tools::guardedMain("dsc-run", [&] { return runMain(argc, argv); });
}
