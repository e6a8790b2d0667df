//===- dsc-bench.cpp - Time prefill and decode of a plan ------------------===//
//
//   dsc-bench PLAN (--weights CKPT | --synthetic-weights SEED) [--backend cpu|cuda]
//             [--prefill-len N] [--decode-steps M] [--warmup K] [--json OUT.json]
//             [--logits-out OUT.npy] [--decode-rows R] [--prefix-hit H] [--list-bytes] [--bytes-only]
//             [--cuda-graphs on|off|log] [--cuda-sync] [--cuda-topk radix|quadratic]
//
// Loads the plan with a checkpoint or deterministic synthetic weights
// (Engine::createSynthetic), runs K warm-up sequences, then one timed
// sequence: prefill of N synthetic token ids, then M teacher-forced decode
// steps. Reports prefill time and tokens/s, per-step decode latency (mean,
// p50, min), launches per step, the copy bandwidth (a 1 GiB device-to-device
// copy on CUDA, a host memcpy on the CPU) and the decode roofline: the bytes a
// step must move (docs/bench.md) over that bandwidth. Progress and a table go
// to stderr, one JSON object to stdout (and to --json). --list-bytes prints
// the per-tensor byte accounting; --bytes-only stops after it (no weights).
// --prefix-hit H also times the prefill of the same N tokens as a hit on a
// snapshot of the first H (Session::prefillPrefix untimed, then
// prefillFrom: the time to first token of a prompt whose prefix is cached,
// issue 13) and says whether its logits equal the cold prefill's, bytes.
// --decode-rows R (R >= 2) makes each timed step advance R tokens in one call
// (Session::extend: the M-row step of DSpark verification and batched decode;
// needs a --ced=full plan); the step's bytes are the weights once, routed
// experts counted as min(R * topk, E) of E (at most that many distinct
// experts are read: the roofline's bytes; weight_bytes_per_step_min is the
// one-row count: topk experts and one row's table lookups), plus the R
// rows' KV reads.
// --sessions B [--shared-prefix N] runs the serving mode instead
// (tools/dsc-bench/Sessions.h): B requests of --prefill-len prompt tokens
// (the first N shared) and --decode-steps new tokens through the runtime's
// Scheduler, all running at once; the JSON's "serving" object has the run's
// time, tokens per second, the decode steps' rows per second, time to first
// token and the prefix cache's tokens.
// --logits-out writes the timed sequence's logits, float32 [1 + M, vocab]
// (the prefill's last row, then each decode step's), so that two kernel
// variants can be compared byte for byte at released widths (cmp).
// The JSON's device_arena_bytes gives each program's device activation arena
// (Session::deviceArenaBytes, after the timed run; 0 on the CPU backend).
// The --cuda-* flags (and, below them, the DSC_CUDA_* variables) set the CUDA
// backend's switches (tools/common/CudaFlags.h).
// Exit status: 0, 1 on errors, 2 on usage errors, 3 when logits are not finite.
// Links no MLIR/LLVM.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Engine.h"
#include "tools/common/CommandLine.h"
#include "tools/dsc-bench/BenchJson.h"
#include "tools/dsc-bench/Sessions.h"
#include "tools/common/CudaFlags.h"
#include "dsc/runtime/PlanFile.h"
#include "dsc/runtime/Npy.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <exception>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <vector>

using namespace dsc::runtime;

namespace {

using dsc::tools::bench::Clock;
using dsc::tools::bench::num;
using dsc::tools::bench::seconds;

int usage(const std::string &message) {
  std::fprintf(stderr,
               "dsc-bench: error: %s\n"
               "usage: dsc-bench PLAN (--weights CKPT | --synthetic-weights SEED) "
               "[--backend cpu|cuda]\n"
               "                 [--prefill-len N] [--decode-steps M] [--warmup K] "
               "[--json OUT.json] [--logits-out OUT.npy] [--decode-rows R] [--prefix-hit H]\n"
               "                 [--sessions B [--shared-prefix N]] [--list-bytes] [--bytes-only]\n"
               "                 %s\n",
               message.c_str(), dsc::tools::kCudaUsage);
  return 2;
}

int fail(const std::string &message) {
  std::fprintf(stderr, "dsc-bench: error: %s\n", message.c_str());
  return 1;
}

uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

/// Synthetic token id i (deterministic, uniform over the vocabulary).
int32_t syntheticId(uint64_t i, int64_t vocab) { return int32_t(mix64(0x5eed0000ull + i) % uint64_t(vocab)); }

std::string jsonString(const std::string &s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\')
      out += '\\', out += c;
    else if (uint8_t(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\u%04x", c);
      out += buf;
    } else
      out += c;
  }
  return out + "\"";
}

int64_t tensorBytes(const TensorBinding &b) {
  int64_t n = 1;
  for (int64_t d : b.shape)
    n *= d;
  return n * int64_t(dtypeSize(b.dtype));
}

/// Bytes one decode step must move (docs/bench.md, "Roofline").
struct StepBytes {
  struct Tensor {
    std::string name, rule;
    double bytes = 0;
  };
  std::vector<Tensor> tensors; ///< weights the decode program touches
  double weights = 0;
  double weightsMin = 0;       ///< with topk experts per routed tensor, whatever the rows
  int64_t topk = 0;            ///< routed experts per token (moe_gate topk)
  /// (layer, state) pairs decode reads KV from.
  std::vector<std::pair<int64_t, int64_t>> kvReads;

  /// KV bytes read by the step that decodes the token at `position`.
  double kv(const Plan &plan, int64_t position) const {
    double total = 0;
    for (auto [layer, index] : kvReads) {
      const StateBuffer &s = plan.states[index];
      int64_t entries = 0;
      switch (s.kind) {
      case StateKind::MainKv:
      case StateKind::IndexKeys:
        entries = s.ratio > 0 ? (position + 1) / s.ratio : 0;
        break;
      case StateKind::WindowRing:
      case StateKind::DSparkRing:
        entries = std::min<int64_t>(position + 1, s.capacity);
        break;
      default:
        break;
      }
      total += double(entries) * s.layout.entryBytes;
    }
    return total;
  }
};

/// The bytes of one decode step of `rows` rows (--decode-rows).
StepBytes decodeBytes(const Plan &plan, int64_t rows = 1) {
  StepBytes result;
  const Program *decode = plan.program("decode");
  if (!decode)
    return result;
  for (const KernelSpec &k : plan.kernels)
    if (const auto *gate = k.as<dsc::abi::MoeGateParams>())
      result.topk = std::max<int64_t>(result.topk, gate->topk);
  // Weights read by embedding / Engram lookup kernels count only the rows read.
  std::map<int64_t, int64_t> lookupRows; // tensor -> rows read per token (per row of a step)
  std::set<std::pair<int64_t, int64_t>> kv;
  for (const Launch &launch : decode->launches) {
    const KernelSpec &kernel = plan.kernels[launch.kernel];
    bool embedding = kernel.name.find("embed") != std::string::npos;
    bool engram = kernel.name == "engram_lookup";
    // Rows read per token: one embedding row; Engram reads C rows of its table
    // (output [S, C * hd] over a table [N, hd]).
    int64_t lookups = 1;
    if (engram && !launch.outputs.empty() && !launch.inputs.empty()) {
      const ValueSlot &out = decode->values[launch.outputs.front()];
      for (int64_t v : launch.inputs) {
        const ValueSlot &in = decode->values[v];
        if (in.kind == ValueKind::Weight && in.shape.size() == 2 && in.shape[1] > 0 &&
            out.shape.size() == 2 && out.shape[1] > 0 && out.shape[1] % in.shape[1] == 0) {
          lookups = out.shape[1] / in.shape[1];
          break;
        }
      }
    }
    for (int64_t v : launch.inputs) {
      const ValueSlot &slot = decode->values[v];
      if (slot.kind == ValueKind::Weight && (embedding || engram)) {
        const TensorBinding &b = plan.tensors[slot.tensor];
        if (!b.shape.empty() && b.shape[0] > lookups)
          lookupRows[slot.tensor] = lookups;
      }
      if (slot.kind == ValueKind::State)
        kv.insert({launch.layer, slot.state});
    }
  }
  std::set<int64_t> seen;
  for (const ValueSlot &slot : decode->values) {
    if (slot.kind != ValueKind::Weight || !seen.insert(slot.tensor).second)
      continue;
    const TensorBinding &b = plan.tensors[slot.tensor];
    StepBytes::Tensor t{b.name, "full", double(tensorBytes(b))};
    double least = t.bytes;
    if (b.experts > 0 && result.topk > 0) {
      const int64_t chosen = std::min(result.topk * rows, b.experts);
      least = t.bytes * double(std::min(result.topk, b.experts)) / double(b.experts);
      t.bytes = t.bytes * double(chosen) / double(b.experts);
      t.rule = (rows > 1 ? "min(R*k,E)/E=" : "k/E=") + std::to_string(chosen) + "/" +
               std::to_string(b.experts);
    } else if (auto it = lookupRows.find(slot.tensor); it != lookupRows.end()) {
      const double full = t.bytes;
      t.bytes = full * double(std::min(it->second * rows, b.shape[0])) / double(b.shape[0]);
      least = full * double(std::min(it->second, b.shape[0])) / double(b.shape[0]);
      t.rule = std::to_string(std::min(it->second * rows, b.shape[0])) + " row(s)";
    }
    result.weights += t.bytes;
    result.weightsMin += least;
    result.tensors.push_back(std::move(t));
  }
  result.kvReads.assign(kv.begin(), kv.end());
  // Only record-based states are KV reads.
  std::erase_if(result.kvReads, [&](const std::pair<int64_t, int64_t> &p) {
    StateKind k = plan.states[p.second].kind;
    return k != StateKind::MainKv && k != StateKind::IndexKeys && k != StateKind::WindowRing &&
           k != StateKind::DSparkRing;
  });
  return result;
}

/// Host memcpy bandwidth (bytes read + written), the CPU backend's roofline.
double hostCopyBandwidth() {
  size_t bytes = size_t(256) << 20;
  std::vector<char> a(bytes, 1), b(bytes, 0);
  std::memcpy(b.data(), a.data(), bytes); // warm-up (page faults)
  int iterations = 4;
  auto start = Clock::now();
  for (int i = 0; i < iterations; ++i)
    std::memcpy(i % 2 ? a.data() : b.data(), i % 2 ? b.data() : a.data(), bytes);
  double s = seconds(start, Clock::now());
  volatile char sink = a[bytes / 2] + b[bytes / 3];
  (void)sink;
  return s > 0 ? 2.0 * double(bytes) * iterations / s / 1e9 : 0;
}

std::string humanBytes(double b) {
  char buf[64];
  if (b >= 1e9)
    std::snprintf(buf, sizeof(buf), "%.3f GB", b / 1e9);
  else if (b >= 1e6)
    std::snprintf(buf, sizeof(buf), "%.3f MB", b / 1e6);
  else
    std::snprintf(buf, sizeof(buf), "%.1f kB", b / 1e3);
  return buf;
}

} // namespace

static int runMain(int argc, char **argv) {
  dsc::tools::CommandLine cl = dsc::tools::parseCommandLine(
      argc, argv,
      dsc::tools::withOptions({"--weights", "--synthetic-weights", "--backend", "--prefill-len",
                               "--decode-steps", "--warmup", "--json", "--logits-out",
                               "--decode-rows", "--prefix-hit", "--sessions", "--shared-prefix"},
                              dsc::tools::kCudaValuedOptions),
      dsc::tools::withOptions({"--list-bytes", "--bytes-only", "--help", "-h"},
                              dsc::tools::kCudaFlags));
  if (cl.flags.count("--help") || cl.flags.count("-h")) {
    usage("help");
    return 0;
  }
  if (!cl.error.empty())
    return usage(cl.error);
  std::string planPath = cl.positional;
  std::map<std::string, std::string> &options = cl.options;
  bool listBytes = cl.flags.count("--list-bytes") > 0, bytesOnly = cl.flags.count("--bytes-only") > 0;
  if (planPath.empty())
    return usage("no plan given");
  bool synthetic = options.count("--synthetic-weights");
  if (synthetic == bool(options.count("--weights")))
    return usage("give exactly one of --weights CKPT and --synthetic-weights SEED");
  bool ok = true;
  auto count = [&](const char *key, int64_t fallback) {
    if (!options.count(key))
      return fallback;
    bool good = true;
    int64_t v = dsc::tools::parseCount(options[key], good);
    if (!good)
      ok = false;
    return v;
  };
  int64_t prefillLen = count("--prefill-len", 128);
  int64_t decodeSteps = count("--decode-steps", 32);
  int64_t warmup = count("--warmup", 2);
  uint64_t seed = uint64_t(count("--synthetic-weights", 1));
  int64_t rowsPerStep = count("--decode-rows", 1);
  const int64_t prefixHit = count("--prefix-hit", 0);
  const int64_t sessions = count("--sessions", 0), sharedPrefix = count("--shared-prefix", 0);
  if (!ok)
    return usage("--prefill-len, --decode-steps, --decode-rows, --prefix-hit, --sessions, "
                 "--shared-prefix, --warmup and --synthetic-weights take non-negative integers");
  if (options.count("--sessions") &&
      (sessions < 1 || sessions > 4096 || rowsPerStep != 1 || prefixHit ||
       options.count("--logits-out")))
    return usage("--sessions takes 1..4096 and goes without --decode-rows, --prefix-hit and "
                 "--logits-out");
  if (options.count("--shared-prefix") && (!options.count("--sessions") || sharedPrefix < 1 ||
                                           sharedPrefix > count("--prefill-len", 128)))
    return usage("--shared-prefix goes with --sessions and takes 1..--prefill-len tokens");
  if (rowsPerStep < 1)
    return usage("--decode-rows must be at least 1");
  if (prefillLen < 1)
    return usage("--prefill-len must be at least 1");
  EngineOptions engineOptions;
  if (options.count("--backend"))
    engineOptions.backend = options["--backend"];
  if (std::string bad = dsc::tools::applyCudaFlags(cl, engineOptions.cuda); !bad.empty())
    return usage(bad);
  if (std::string bad = dsc::tools::applyCpuFlags(cl, engineOptions); !bad.empty())
    return usage(bad);

  Expected<Plan> planModel = readPlanFile(planPath);
  if (!planModel)
    return fail(planModel.status().message());
  if (prefillLen + decodeSteps * rowsPerStep > planModel->model.maxSeqLen)
    return fail(std::to_string(prefillLen + decodeSteps * rowsPerStep) +
                " tokens (prefill + decode steps x rows) exceed the plan's max_seq_len " +
                std::to_string(planModel->model.maxSeqLen));
  if (!planModel->program("decode") && decodeSteps > 0)
    return fail(planPath + ": the plan has no decode program");
  {
    int64_t total = 0;
    for (const TensorBinding &b : planModel->tensors)
      total += tensorBytes(b);
    std::fprintf(stderr, "dsc-bench: plan %s: %s, %zu tensors (%s), backend %s\n", planPath.c_str(),
                 planModel->model.name.c_str(), planModel->tensors.size(),
                 humanBytes(double(total)).c_str(), engineOptions.backend.c_str());
  }

  StepBytes bytes = decodeBytes(*planModel, rowsPerStep);
  if (listBytes || bytesOnly) {
    const Plan &plan = *planModel;
    std::fprintf(stderr, "\ndecode bytes per step (topk %lld):\n", (long long)bytes.topk);
    for (const StepBytes::Tensor &t : bytes.tensors)
      std::fprintf(stderr, "  %-48s %14.0f  %s\n", t.name.c_str(), t.bytes, t.rule.c_str());
    for (auto [layer, index] : bytes.kvReads) {
      const StateBuffer &s = plan.states[index];
      std::fprintf(stderr, "  kv: layer %-3lld reads %-32s %lld B/entry, ratio %lld, capacity %lld\n",
                   (long long)layer, s.name.c_str(), (long long)s.layout.entryBytes,
                   (long long)s.ratio, (long long)s.capacity);
    }
  }
  if (bytesOnly) {
    double kv = 0; // each row of a step reads its position's KV
    for (int64_t s = 0; s < decodeSteps * rowsPerStep; ++s)
      kv += bytes.kv(*planModel, prefillLen + s);
    kv = decodeSteps ? kv / double(decodeSteps) : 0;
    std::fprintf(stderr, "  total: weights %s + KV %s per decode step (mean over %lld steps after %lld)\n",
                 humanBytes(bytes.weights).c_str(), humanBytes(kv).c_str(), (long long)decodeSteps,
                 (long long)prefillLen);
    std::printf("{\"plan\": %s, \"decode\": {\"steps\": %lld, \"rows_per_step\": %lld, "
                "\"bytes_per_step\": %s, \"weight_bytes_per_step\": %s, "
                "\"weight_bytes_per_step_min\": %s, \"kv_bytes_per_step\": %s, \"topk\": %lld}}\n",
                jsonString(planPath).c_str(), (long long)decodeSteps, (long long)rowsPerStep,
                num(bytes.weights + kv).c_str(), num(bytes.weights).c_str(),
                num(bytes.weightsMin).c_str(), num(kv).c_str(), (long long)bytes.topk);
    return 0;
  }

  // Load.
  auto loadStart = Clock::now();
  auto load = [&]() -> Expected<std::unique_ptr<Engine>> {
  if (synthetic) {
    SyntheticWeightOptions so;
    so.seed = seed;
    int lastPercent = -1;
    so.progress = [&](const std::string &name, uint64_t done, uint64_t total) {
      int percent = total ? int(100 * done / total) : 100;
      if (percent / 10 != lastPercent / 10 || done == total) {
        lastPercent = percent;
        std::fprintf(stderr, "dsc-bench: synthetic weights %3d%% (%s of %s, %.1f s)\n", percent,
                     humanBytes(double(done)).c_str(), humanBytes(double(total)).c_str(),
                     seconds(loadStart, Clock::now()));
      }
    };
    return Engine::createSynthetic(std::move(planModel.value()), so, engineOptions);
  }
  std::fprintf(stderr, "dsc-bench: loading %s\n", options["--weights"].c_str());
  return Engine::create(std::move(planModel.value()), options["--weights"], engineOptions);
  };
  Expected<std::unique_ptr<Engine>> engine = load();
  if (!engine)
    return fail(engine.status().message());
  double loadSeconds = seconds(loadStart, Clock::now());
  const Plan &plan = (*engine)->plan();
  Backend &backend = (*engine)->backend();
  std::string deviceName = backend.deviceName();
  std::fprintf(stderr, "dsc-bench: weights ready in %.2f s on %s\n", loadSeconds, deviceName.c_str());

  std::vector<int32_t> ids(size_t(prefillLen + decodeSteps * rowsPerStep));
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = syntheticId(i, plan.model.vocabSize);

  if (sessions > 0) { // the serving mode (Sessions.h)
    dsc::tools::SessionsBench sb;
    sb.sessions = sessions;
    sb.sharedPrefix = sharedPrefix;
    sb.promptTokens = prefillLen;
    sb.newTokens = decodeSteps;
    const int64_t vocab = plan.model.vocabSize;
    sb.id = [&](int64_t r, int64_t i) {
      return syntheticId(uint64_t(i < sharedPrefix ? i : i + (r + 1) * 1000003), vocab);
    };
    Expected<std::string> result = dsc::tools::runSessionsBench(**engine, sb);
    if (!result)
      return fail(result.status().message());
    const std::string json = "{\"plan\": " + jsonString(planPath) + ", \"device\": " +
                             jsonString(deviceName) + ", \"serving\": " + *result + "}";
    std::printf("%s\n", json.c_str());
    if (options.count("--json")) {
      std::ofstream out(options["--json"]);
      out << json << "\n";
      if (!out)
        return fail(options["--json"] + ": cannot write");
    }
    return 0;
  }

  std::unique_ptr<Session> session = (*engine)->newSession();
  int64_t nonFinite = 0, checked = 0;
  const bool keepLogits = options.count("--logits-out") > 0;
  std::vector<float> kept; // --logits-out: the last row of each timed call
  auto keep = [&](const HostTensor &logits) {
    if (!keepLogits || logits.dtype() != DType::F32 || logits.shape().empty())
      return;
    const int64_t vocab = logits.dim(logits.shape().size() - 1);
    const float *last = logits.data<float>() + (logits.numElements() - vocab);
    kept.insert(kept.end(), last, last + vocab);
  };
  auto checkLogits = [&](const HostTensor &logits) {
    if (logits.dtype() != DType::F32)
      return;
    for (float v : logits.span<const float>())
      nonFinite += !std::isfinite(v);
    checked += logits.numElements();
  };

  // One timed step: a decode of one token, or an extend of rowsPerStep.
  auto step = [&](int64_t s) -> Expected<HostTensor> {
    const int64_t at = prefillLen + s * rowsPerStep;
    if (rowsPerStep == 1)
      return session->decode(ids[size_t(at)]);
    return session->extend(std::span<const int32_t>(ids.data() + at, size_t(rowsPerStep)));
  };

  // Warm-up: module loads, allocations, first-touch.
  for (int64_t w = 0; w < warmup; ++w) {
    std::fprintf(stderr, "dsc-bench: warm-up %lld/%lld\n", (long long)(w + 1), (long long)warmup);
    session->reset();
    Expected<HostTensor> logits = session->prefill(std::span<const int32_t>(ids.data(), prefillLen));
    if (!logits)
      return fail("warm-up prefill: " + logits.status().message());
    for (int64_t s = 0; s < std::min<int64_t>(decodeSteps, 2); ++s) {
      logits = step(s);
      if (!logits)
        return fail("warm-up decode: " + logits.status().message());
    }
  }

  // Timed run.
  session->reset();
  if (Status s = backend.synchronize(); !s)
    return fail(s.message());
  std::fprintf(stderr, "dsc-bench: prefill %lld tokens\n", (long long)prefillLen);
  auto t0 = Clock::now();
  Expected<HostTensor> logits = session->prefill(std::span<const int32_t>(ids.data(), prefillLen));
  if (!logits)
    return fail("prefill: " + logits.status().message());
  if (Status s = backend.synchronize(); !s)
    return fail(s.message());
  double prefillSeconds = seconds(t0, Clock::now());
  const HostTensor coldLogits = *logits; // --prefix-hit compares with it
  checkLogits(*logits);
  keep(*logits);
  std::fprintf(stderr, "dsc-bench: decode %lld steps\n", (long long)decodeSteps);
  std::vector<double> stepMs;
  for (int64_t s = 0; s < decodeSteps; ++s) {
    auto a = Clock::now();
    logits = step(s);
    if (!logits)
      return fail("decode step " + std::to_string(s) + ": " + logits.status().message());
    if (Status st = backend.synchronize(); !st)
      return fail(st.message());
    stepMs.push_back(1e3 * seconds(a, Clock::now()));
    checkLogits(*logits);
    keep(*logits);
  }
  bool logitsFinite = nonFinite == 0 && checked > 0;

  // The same prompt as a prefix hit (--prefix-hit H): the snapshot of the
  // first H tokens untimed, one untimed hit (warm-up), then the timed one.
  std::string prefixJson;
  if (prefixHit > 0) {
    if (prefixHit + session->minPrefixTail() > prefillLen)
      return fail("--prefix-hit " + std::to_string(prefixHit) + " leaves less than the plan's " +
                  std::to_string(session->minPrefixTail()) + "-token last chunk of the " +
                  std::to_string(prefillLen) + "-token prompt");
    Session *hitSession = session.get(); // no second set of states and arenas
    std::span<const int32_t> prompt(ids.data(), size_t(prefillLen));
    Expected<SessionSnapshot> snapshot = hitSession->prefillPrefix(prompt.first(size_t(prefixHit)));
    if (!snapshot)
      return fail("--prefix-hit: " + snapshot.status().message());
    Expected<HostTensor> warm = hitSession->prefillFrom(*snapshot, prompt);
    if (!warm)
      return fail("--prefix-hit: " + warm.status().message());
    if (Status s = backend.synchronize(); !s)
      return fail(s.message());
    auto h0 = Clock::now();
    Expected<HostTensor> hit = hitSession->prefillFrom(*snapshot, prompt);
    if (!hit)
      return fail("--prefix-hit: " + hit.status().message());
    if (Status s = backend.synchronize(); !s)
      return fail(s.message());
    const double hitSeconds = seconds(h0, Clock::now());
    const bool same = hit->byteSize() == coldLogits.byteSize() &&
                      std::memcmp(hit->bytes(), coldLogits.bytes(), coldLogits.byteSize()) == 0;
    std::fprintf(stderr,
                 "  prefix hit        %lld of %lld tokens cached: %.3f ms (cold %.3f ms); "
                 "snapshot %s; logits %s the cold prefill's\n",
                 (long long)prefixHit, (long long)prefillLen, 1e3 * hitSeconds,
                 1e3 * prefillSeconds, humanBytes(double(snapshot->bytes())).c_str(),
                 same ? "equal" : "DIFFER FROM");
    prefixJson = ", \"prefix_hit\": {\"cached_tokens\": " + std::to_string(prefixHit) +
                 ", \"seconds\": " + num(hitSeconds) + ", \"cold_seconds\": " +
                 num(prefillSeconds) + ", \"snapshot_bytes\": " +
                 std::to_string(snapshot->bytes()) + ", \"logits_equal_cold\": " +
                 (same ? "true" : "false") + "}";
  }

  // Bandwidth.
  double bandwidth = 0;
  std::string bandwidthSource;
  if (backend.deviceResident()) {
    std::fprintf(stderr, "dsc-bench: measuring device copy bandwidth (1 GiB device-to-device)\n");
    Expected<DeviceCopyBandwidth> bw = measureDeviceCopyBandwidth();
    if (!bw)
      return fail("bandwidth: " + bw.status().message());
    bandwidth = bw->gbps;
    bandwidthSource = "device-to-device copy, 1 GiB x " + std::to_string(bw->iterations) +
                      ", read + written";
  } else {
    bandwidth = hostCopyBandwidth();
    bandwidthSource = "host memcpy, 256 MiB x 4, read + written";
  }

  // Roofline.
  double kvBytes = 0; // each row of a step reads its position's KV
  for (int64_t s = 0; s < decodeSteps * rowsPerStep; ++s)
    kvBytes += bytes.kv(plan, prefillLen + s);
  kvBytes = decodeSteps ? kvBytes / double(decodeSteps) : 0;
  double stepBytes = bytes.weights + kvBytes;
  double rooflineMs = bandwidth > 0 ? stepBytes / (bandwidth * 1e9) * 1e3 : NAN;
  const Program *decodeProgram = plan.program("decode");
  // Kernel launches of the plan (a fused kernel counts once) and the steps
  // the backends run today (a fused kernel's steps one by one).
  int64_t launches = 0, steps = decodeProgram ? int64_t(decodeProgram->launches.size()) : 0;
  if (decodeProgram)
    for (auto [layer, n] : launchesByLayer(*decodeProgram))
      launches += n;

  std::vector<double> sorted = stepMs;
  std::sort(sorted.begin(), sorted.end());
  double meanMs = NAN, p50Ms = NAN, minMs = NAN;
  if (!sorted.empty()) {
    double sum = 0;
    for (double v : sorted)
      sum += v;
    meanMs = sum / double(sorted.size());
    size_t n = sorted.size();
    p50Ms = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    minMs = sorted.front();
  }
  double overRoofline = rooflineMs > 0 ? meanMs / rooflineMs : NAN;

  std::fprintf(stderr,
               "\n"
               "  plan              %s\n"
               "  backend / device  %s / %s\n"
               "  weights           %s (ready in %.2f s)\n"
               "  prefill           %lld tokens in %.3f ms = %.1f tokens/s\n"
               "  decode            %lld steps: mean %.3f ms, p50 %.3f ms, min %.3f ms (%.1f tokens/s)\n"
               "  launches / step   %lld (plan kernel launches; %lld steps run)\n"
               "  bytes / step      %s (weights %s + KV %s, mean over steps)\n"
               "  bandwidth         %.1f GB/s (%s)\n"
               "  roofline / step   %.4f ms; measured / roofline = %.2f\n"
               "  logits finite     %s (%lld non-finite of %lld)\n\n",
               planPath.c_str(), backend.name(), deviceName.c_str(),
               synthetic ? ("synthetic, seed " + std::to_string(seed)).c_str()
                         : options["--weights"].c_str(),
               loadSeconds, (long long)prefillLen, 1e3 * prefillSeconds,
               prefillSeconds > 0 ? double(prefillLen) / prefillSeconds : 0.0,
               (long long)decodeSteps, meanMs, p50Ms, minMs,
               meanMs > 0 ? 1e3 * double(rowsPerStep) / meanMs : 0.0,
               (long long)launches, (long long)steps, humanBytes(stepBytes).c_str(), humanBytes(bytes.weights).c_str(),
               humanBytes(kvBytes).c_str(), bandwidth, bandwidthSource.c_str(), rooflineMs,
               overRoofline, logitsFinite ? "yes" : "NO", (long long)nonFinite, (long long)checked);

  // Device activation arenas of the session (Session::deviceArenaBytes; 0 on
  // the host backend).
  std::string arenaJson = "{";
  for (const Program &p : plan.programs)
    arenaJson += (arenaJson.size() > 1 ? ", " : "") + jsonString(p.name) + ": " +
                 std::to_string(session->deviceArenaBytes(p.name));
  arenaJson += "}";
  std::fprintf(stderr, "  device arenas     %s\n\n", arenaJson.c_str());

  std::string json =
      "{\"plan\": " + jsonString(planPath) + ", \"backend\": " + jsonString(backend.name()) +
      ", \"device\": " + jsonString(deviceName) + ", \"weights\": " +
      jsonString(synthetic ? "synthetic:" + std::to_string(seed) : options["--weights"]) +
      ", \"load_seconds\": " + num(loadSeconds) + ", \"prefill\": {\"tokens\": " +
      std::to_string(prefillLen) + ", \"seconds\": " + num(prefillSeconds) +
      ", \"tokens_per_s\": " + num(prefillSeconds > 0 ? double(prefillLen) / prefillSeconds : NAN) +
      "}, \"decode\": {\"steps\": " + std::to_string(decodeSteps) + ", \"rows_per_step\": " +
      std::to_string(rowsPerStep) + ", \"mean_ms\": " + num(meanMs) +
      ", \"p50_ms\": " + num(p50Ms) + ", \"min_ms\": " + num(minMs) +
      ", \"launches_per_step\": " + std::to_string(launches) +
      ", \"steps_per_step\": " + std::to_string(steps) + ", \"bytes_per_step\": " +
      num(stepBytes) + ", \"weight_bytes_per_step\": " + num(bytes.weights) +
      ", \"weight_bytes_per_step_min\": " + num(bytes.weightsMin) +
      ", \"kv_bytes_per_step\": " + num(kvBytes) + ", \"topk\": " + std::to_string(bytes.topk) +
      ", \"roofline_ms\": " + num(rooflineMs) + ", \"measured_over_roofline\": " +
      num(overRoofline) + "}, \"bandwidth_gbps\": " + num(bandwidth) +
      ", \"bandwidth_source\": " + jsonString(bandwidthSource) +
      ", \"device_arena_bytes\": " + arenaJson + prefixJson +
      ", \"logits_finite\": " + (logitsFinite ? "true" : "false") + "}";
  std::printf("%s\n", json.c_str());
  std::fflush(stdout);
  if (keepLogits && !kept.empty()) {
    const int64_t vocab = plan.model.vocabSize, rows = int64_t(kept.size()) / vocab;
    HostTensor all(DType::F32, {rows, vocab});
    std::copy(kept.begin(), kept.end(), all.data<float>());
    if (Status s = writeNpy(options["--logits-out"], all); !s)
      return fail(s.message());
  }
  if (options.count("--json")) {
    std::ofstream out(options["--json"]);
    out << json << "\n";
    if (!out)
      return fail(options["--json"] + ": cannot write");
  }
  return logitsFinite ? 0 : 3;
}

int main(int argc, char **argv) {
  return dsc::tools::guardedMain("dsc-bench", [&] { return runMain(argc, argv); });
}
