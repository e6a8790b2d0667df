//===- Prompts.cpp - dsc-run --prompts (Prompts.h) ------------------------===//
#include "Prompts.h"

#include "dsc/runtime/Backend.h"
#include "dsc/runtime/InputFile.h"
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

int32_t argmaxLast(const HostTensor &logits) {
  const int64_t vocab = logits.dim(int64_t(logits.shape().size()) - 1);
  const float *row = logits.data<float>() + (logits.numElements() - vocab);
  return int32_t(std::max_element(row, row + vocab) - row);
}

} // namespace

Status runPrompts(Engine &engine, const PromptsOptions &options) {
  // A regular file of bounded size (a FIFO or a device is refused, not read).
  Expected<std::string> file = readRegularFile(options.path, "prompts file", kMaxPromptsBytes);
  if (!file)
    return file.status();
  std::istringstream in(*file);
  const PlanFacts &model = engine.plan().model;
  std::unique_ptr<Session> session = engine.newSession();
  // A snapshot holds every state at the plan's capacity: when one would not
  // fit the budget, saving it would only cost a read-back and a copy.
  uint64_t snapshotBytes = 0;
  for (size_t i = 0; i < engine.plan().states.size(); ++i)
    snapshotBytes += uint64_t(session->state(int64_t(i)).byteSize());
  bool reuse = options.prefixCache && engine.backend().runsPrefillChunks();
  if (reuse && snapshotBytes > options.cacheBytes) {
    std::fprintf(stderr,
                 "dsc-run: prefix cache off: a snapshot of this plan holds %llu bytes, more than "
                 "the %llu-byte budget (--prefix-cache-mib)\n",
                 (unsigned long long)snapshotBytes, (unsigned long long)options.cacheBytes);
    reuse = false;
  }
  SnapshotCache cache(options.prefixBlock, options.cacheBytes);
  const int64_t tail = session->minPrefixTail();
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos)
      continue; // blank lines carry no prompt
    const std::string where = options.path + ":" + std::to_string(number);
    Expected<PromptLine> line = parseLine(text, where, options.maxNewTokens);
    if (!line)
      return line.status();
    const int64_t n = int64_t(line->ids.size());
    if (n > model.maxSeqLen || line->maxNewTokens > model.maxSeqLen - n)
      return invalidArgument(where + ": " + std::to_string(n) + " prompt + " +
                             std::to_string(line->maxNewTokens) +
                             " new tokens exceed the plan's max_seq_len " +
                             std::to_string(model.maxSeqLen));
    std::shared_ptr<const SessionSnapshot> hit = reuse ? cache.lookup(line->ids, tail) : nullptr;
    const int64_t held = hit ? int64_t(hit->ids.size()) : 0;
    const int64_t cut = reuse ? cache.savePoint(n, tail) : 0;
    Expected<HostTensor> logits = failedPrecondition("no prefill ran");
    if (cut > held) { // serve and save the longer prefix on the way
      SessionSnapshot saved;
      logits = session->prefillSaving(hit.get(), line->ids, cut, saved);
      if (logits)
        if (Status s = cache.insert(std::move(saved)); !s)
          return s.withContext(where + ": ");
    } else if (hit) {
      logits = session->prefillFrom(*hit, line->ids);
    } else {
      session->reset();
      logits = session->prefill(line->ids);
    }
    if (!logits)
      return logits.status().withContext(where + ": ");
    nlohmann::json out;
    out["output_ids"] = nlohmann::json::array();
    int32_t next = argmaxLast(*logits);
    for (int64_t step = 0; step < line->maxNewTokens; ++step) {
      out["output_ids"].push_back(next);
      if (step + 1 == line->maxNewTokens)
        break;
      Expected<HostTensor> d = session->decode(next);
      if (!d)
        return d.status().withContext(where + ": decode step " + std::to_string(step) + ": ");
      next = argmaxLast(*d);
    }
    out["prefix_hit_tokens"] = held;
    std::printf("%s\n", out.dump().c_str());
    std::fflush(stdout);
  }
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
