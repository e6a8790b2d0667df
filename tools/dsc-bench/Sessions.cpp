//===- Sessions.cpp - dsc-bench --sessions (Sessions.h) -------------------===//
#include "Sessions.h"
#include "BenchJson.h"

#include "dsc/runtime/Scheduler.h"
#include "dsc/runtime/SnapshotCache.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

namespace dsc::tools {

using namespace dsc::runtime;

namespace {

using bench::Clock;
using bench::msSince;
using bench::num;
/// Cache blocks: the shared prefix is saved at a multiple of this.
constexpr int64_t kCacheBlock = 16;

} // namespace

Expected<std::string> runSessionsBench(Engine &engine, const SessionsBench &b) {
  if (b.sessions < 1 || b.sharedPrefix < 0 || b.sharedPrefix > b.promptTokens)
    return invalidArgument("--sessions must be at least 1 and --shared-prefix within the prompt");
  SnapshotCache cache(kCacheBlock, uint64_t(64) << 30);
  SchedulerOptions o;
  o.maxRunning = b.sessions;
  o.prefixCache = b.sharedPrefix > 0 ? &cache : nullptr;
  Expected<std::unique_ptr<Scheduler>> made = Scheduler::create(engine, o);
  if (!made)
    return made.status();
  Scheduler &s = **made;
  auto prompt = [&](int64_t r) {
    std::vector<int32_t> ids(size_t(b.promptTokens));
    for (int64_t i = 0; i < b.promptTokens; ++i)
      ids[size_t(i)] = b.id(r, i);
    return ids;
  };
  // Steps until idle; with `timed`, the pure decode steps' times and rows,
  // and each request's first token time since t0.
  struct Timing {
    std::vector<double> decodeMs, firstMs;
    std::vector<int64_t> decodeRows;
  };
  auto drain = [&](Timing *timed, const std::vector<uint64_t> &ids,
                   Clock::time_point t0) -> Status {
    while (!s.idle()) {
      auto a = Clock::now();
      Expected<Scheduler::StepReport> r = s.step();
      if (!r)
        return r.status();
      const double ms = msSince(a);
      if (!timed)
        continue;
      if (r->prefilled == 0 && r->decoded > 0) {
        timed->decodeMs.push_back(ms);
        timed->decodeRows.push_back(r->decoded);
      }
      for (size_t i = 0; i < ids.size(); ++i)
        if (timed->firstMs[i] < 0) {
          Expected<GenerationResult> g = s.result(ids[i]);
          if (g && !g->outputIds.empty())
            timed->firstMs[i] = msSince(t0);
        }
    }
    return Status::ok();
  };
  // Warm-up: one request of another prompt (no prefix shared with the timed ones).
  {
    std::vector<int32_t> warm = prompt(b.sessions);
    for (int64_t i = 0; i < std::min<int64_t>(b.sharedPrefix, b.promptTokens); ++i)
      warm[size_t(i)] = b.id(b.sessions, b.promptTokens + i); // not the shared ids
    Expected<uint64_t> id = s.submit({warm, std::min<int64_t>(b.newTokens, 2), 0});
    if (!id)
      return id.status();
    if (Status st = drain(nullptr, {}, Clock::now()); !st)
      return st;
    if (Expected<GenerationResult> r = s.take(*id); !r || r->state != RequestState::Finished)
      return !r ? r.status() : (r->error.message().empty() ? internalError("warm-up did not finish") : r->error);
  }
  std::vector<uint64_t> ids;
  const auto t0 = Clock::now();
  for (int64_t r = 0; r < b.sessions; ++r) {
    Expected<uint64_t> id = s.submit({prompt(r), b.newTokens, b.sharedPrefix});
    if (!id)
      return id.status();
    ids.push_back(*id);
  }
  Timing timing;
  timing.firstMs.assign(ids.size(), -1.0);
  if (Status st = drain(&timing, ids, t0); !st)
    return st;
  const std::vector<double> &decodeMs = timing.decodeMs, &firstMs = timing.firstMs;
  const std::vector<int64_t> &decodeRows = timing.decodeRows;
  const double totalMs = msSince(t0);
  int64_t tokens = 0, hitTokens = 0;
  for (uint64_t id : ids) {
    Expected<GenerationResult> r = s.take(id);
    if (!r)
      return r.status();
    if (r->state != RequestState::Finished)
      return r->error.withContext("request " + std::to_string(id) + ": ");
    tokens += int64_t(r->outputIds.size());
    hitTokens += r->prefixHitTokens;
  }
  double stepMs = 0, rows = 0;
  for (size_t i = 0; i < decodeMs.size(); ++i) {
    stepMs += decodeMs[i];
    rows += double(decodeRows[i]);
  }
  double ttftMean = 0, ttftMax = 0;
  for (double v : firstMs) {
    ttftMean += v / double(firstMs.size());
    ttftMax = std::max(ttftMax, v);
  }
  std::fprintf(stderr,
               "dsc-bench: %lld sessions x (%lld prompt + %lld new tokens), shared prefix %lld: "
               "%.1f ms, %lld tokens (%.1f tokens/s); decode steps %.1f rows/s (%zu steps, mean "
               "%.3f ms); time to first token mean %.1f ms, max %.1f ms; %lld prompt tokens from "
               "the prefix cache\n",
               (long long)b.sessions, (long long)b.promptTokens, (long long)b.newTokens,
               (long long)b.sharedPrefix, totalMs, (long long)tokens, 1e3 * double(tokens) / totalMs,
               stepMs > 0 ? 1e3 * rows / stepMs : 0.0, decodeMs.size(),
               decodeMs.empty() ? 0.0 : stepMs / double(decodeMs.size()), ttftMean, ttftMax,
               (long long)hitTokens);
  return std::string("{\"sessions\": ") + std::to_string(b.sessions) +
         ", \"shared_prefix\": " + std::to_string(b.sharedPrefix) +
         ", \"prompt_tokens\": " + std::to_string(b.promptTokens) +
         ", \"new_tokens\": " + std::to_string(b.newTokens) + ", \"total_ms\": " + num(totalMs) +
         ", \"tokens\": " + std::to_string(tokens) +
         ", \"tokens_per_s\": " + num(1e3 * double(tokens) / totalMs) +
         ", \"decode_steps\": " + std::to_string(decodeMs.size()) +
         ", \"decode_step_ms_mean\": " + num(decodeMs.empty() ? 0.0 : stepMs / double(decodeMs.size())) +
         ", \"decode_rows_per_s\": " + num(stepMs > 0 ? 1e3 * rows / stepMs : 0.0) +
         ", \"ttft_ms_mean\": " + num(ttftMean) + ", \"ttft_ms_max\": " + num(ttftMax) +
         ", \"prefix_hit_tokens\": " + std::to_string(hitTokens) + "}";
}

} // namespace dsc::tools
