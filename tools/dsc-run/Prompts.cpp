//===- Prompts.cpp - dsc-run --prompts (Prompts.h) ------------------------===//
#include "Prompts.h"

#include "dsc/runtime/Backend.h"
#include "dsc/runtime/InputFile.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/Scheduler.h"
#include "dsc/runtime/SnapshotCache.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <memory>

namespace dsc::tools {

using namespace dsc::runtime;

namespace {

/// The largest prompts file read (JSONL of token ids).
constexpr uint64_t kMaxPromptsBytes = 1ull << 30;

struct PromptLine {
  std::vector<int32_t> ids;
  int64_t maxNewTokens = 0;
};

/// Line `number` of `path`: {"prompt_ids": [ints], "max_new_tokens": n?}.
Expected<PromptLine> parseLine(const std::string &text, const std::string &where,
                               int64_t defaultNew) {
  nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return invalidArgument(where + ": not a JSON object");
  auto ids = j.find("prompt_ids");
  if (ids == j.end() || !ids->is_array() || ids->empty())
    return invalidArgument(where + ": \"prompt_ids\" must be a non-empty array of token ids");
  PromptLine line;
  line.maxNewTokens = defaultNew;
  for (size_t i = 0; i < ids->size(); ++i) {
    const nlohmann::json &v = (*ids)[i];
    if (!v.is_number_integer() || v.get<int64_t>() < 0 || v.get<int64_t>() > INT32_MAX)
      return invalidArgument(where + ": prompt_ids[" + std::to_string(i) + "] is not a token id");
    line.ids.push_back(int32_t(v.get<int64_t>()));
  }
  if (auto n = j.find("max_new_tokens"); n != j.end()) {
    if (!n->is_number_integer() || n->get<int64_t>() < 0)
      return invalidArgument(where + ": \"max_new_tokens\" must be a non-negative integer");
    line.maxNewTokens = n->get<int64_t>();
  }
  return line;
}

} // namespace

Status runPrompts(Engine &engine, const PromptsOptions &options) {
  // A regular file of bounded size (a FIFO or a device is refused, not read).
  Expected<std::string> file = readRegularFile(options.path, "prompts file", kMaxPromptsBytes);
  if (!file)
    return file.status();
  // Every line first: a bad one is an error before anything runs.
  std::istringstream in(*file);
  std::vector<PromptLine> lines;
  std::vector<std::string> where;
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos)
      continue; // blank lines carry no prompt
    where.push_back(options.path + ":" + std::to_string(number));
    Expected<PromptLine> line = parseLine(text, where.back(), options.maxNewTokens);
    if (!line)
      return line.status();
    lines.push_back(std::move(*line));
  }
  // A snapshot holds every state at the plan's capacity: when one would not
  // fit the budget, saving it would only cost a read-back and a copy.
  Expected<uint64_t> snapshotBytes = planStateBytes(engine.plan());
  if (!snapshotBytes)
    return snapshotBytes.status();
  bool reuse = options.prefixCache && engine.backend().runsPrefillChunks();
  if (reuse && *snapshotBytes > options.cacheBytes) {
    std::fprintf(stderr,
                 "dsc-run: prefix cache off: a snapshot of this plan holds %llu bytes, more than "
                 "the %llu-byte budget (--prefix-cache-mib)\n",
                 (unsigned long long)*snapshotBytes, (unsigned long long)options.cacheBytes);
    reuse = false;
  }
  SnapshotCache cache(options.prefixBlock, options.cacheBytes);
  SchedulerOptions so;
  so.maxRunning = options.sequential ? 1 : options.maxRunning;
  so.prefixCache = reuse ? &cache : nullptr;
  Expected<std::unique_ptr<Scheduler>> scheduler = Scheduler::create(engine, so);
  if (!scheduler)
    return scheduler.status();
  std::vector<uint64_t> ids;
  for (size_t i = 0; i < lines.size(); ++i) {
    Expected<uint64_t> id =
        (*scheduler)->submit(GenerationRequest{std::move(lines[i].ids), lines[i].maxNewTokens});
    if (!id)
      return id.status().withContext(where[i] + ": ");
    ids.push_back(*id);
  }
  // Step until every prompt has ended, printing the results in file order
  // as soon as each one and all before it are done.
  size_t printed = 0;
  auto flush = [&]() -> Status {
    for (; printed < ids.size(); ++printed) {
      Expected<GenerationResult> r = (*scheduler)->result(ids[printed]);
      if (!r)
        return r.status();
      if (r->state == RequestState::Queued || r->state == RequestState::Running)
        return Status::ok();
      if (r->state == RequestState::Failed)
        return r->error.withContext(where[printed] + ": ");
      nlohmann::json out;
      out["output_ids"] = r->outputIds;
      out["prefix_hit_tokens"] = r->prefixHitTokens;
      std::printf("%s\n", out.dump().c_str());
      std::fflush(stdout);
    }
    return Status::ok();
  };
  while (!(*scheduler)->idle()) {
    Expected<Scheduler::StepReport> step = (*scheduler)->step();
    if (!step)
      return step.status();
    if (Status s = flush(); !s)
      return s;
  }
  if (Status s = flush(); !s)
    return s;
  if (reuse) {
    const SnapshotCache::Stats s = cache.stats();
    std::fprintf(stderr,
                 "dsc-run: prefix cache: %lld of %lld prompts hit, %lld prompt tokens reused, "
                 "%lld snapshots (%llu bytes), %lld evicted\n",
                 (long long)s.hits, (long long)s.lookups, (long long)s.hitTokens,
                 (long long)s.entries, (unsigned long long)s.bytes, (long long)s.evictions);
  }
  return Status::ok();
}

} // namespace dsc::tools
