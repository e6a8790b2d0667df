//===- Prompts.h - dsc-run --prompts: many prompts with prefix reuse ------===//
//
// What: dsc-run's --prompts mode (issue 13's command line): a JSONL file of
// {"prompt_ids": [...], "max_new_tokens": N} (the field optional: the
// --max-new-tokens default), each prompt prefilled and greedily decoded; one
// JSONL line per prompt on stdout, in order: {"output_ids": [...],
// "prefix_hit_tokens": H}. With --prefix-cache on (the default) a
// SnapshotCache (runtime/include/dsc/runtime/SnapshotCache.h) of the
// prompts' prefixes lets a later prompt start from an earlier one's states:
// exact, so the outputs equal --prefix-cache off bit for bit. Today prompts
// run one after another (the batching scheduler is to come), so every
// prompt sees the cache the earlier ones filled (--sequential says so).
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
};

/// Runs every prompt of options.path on `engine`, writing one JSONL line per
/// prompt to stdout; returns the first error.
runtime::Status runPrompts(runtime::Engine &engine, const PromptsOptions &options);

} // namespace dsc::tools

#endif // DSC_TOOLS_DSC_RUN_PROMPTS_H
