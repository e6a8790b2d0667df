//===- Prompts.h - dsc-run --prompts: many prompts with prefix reuse ------===//
//
// What: dsc-run's --prompts mode (issue 13's command line): a JSONL file of
// {"prompt_ids": [...], "max_new_tokens": N} (the field optional: the
// --max-new-tokens default), each prompt prefilled and greedily decoded; one
// JSONL line per prompt on stdout, in order: {"output_ids": [...],
// "prefix_hit_tokens": H}. Every prompt goes through the runtime's Scheduler
// (Scheduler.h: continuous batching, --max-running requests at once, default
// the plan's max_batch; --sequential: one at a time, so a later prompt sees
// the prefixes every earlier one cached). With --prefix-cache on (the
// default) a SnapshotCache (SnapshotCache.h) of the prompts' prefixes lets a
// prompt start from an earlier one's states: exact, so the outputs equal
// --prefix-cache off, and every --max-running, bit for bit.
// Bad input (a line that is no JSON object, ids outside the vocabulary, a
// prompt longer than the plan allows) is an error naming the file and line.
//===----------------------------------------------------------------------===//
#ifndef DSC_TOOLS_DSC_RUN_PROMPTS_H
#define DSC_TOOLS_DSC_RUN_PROMPTS_H

#include "dsc/runtime/Engine.h"

#include <cstdint>
#include <string>

namespace dsc::tools {

struct PromptsOptions {
  std::string path;           ///< the JSONL file
  int64_t maxNewTokens = 16;  ///< for lines without "max_new_tokens"
  bool prefixCache = true;    ///< --prefix-cache on|off
  int64_t prefixBlock = 64;   ///< --prefix-block: snapshot cut granularity (tokens)
  uint64_t cacheBytes = uint64_t(4) << 30; ///< --prefix-cache-mib
  bool sequential = false;    ///< --sequential: one prompt at a time
  int64_t maxRunning = 0;     ///< --max-running (0: the plan's max_batch)
};

/// Runs every prompt of options.path on `engine`, writing one JSONL line per
/// prompt to stdout; returns the first error.
runtime::Status runPrompts(runtime::Engine &engine, const PromptsOptions &options);

} // namespace dsc::tools

#endif // DSC_TOOLS_DSC_RUN_PROMPTS_H
