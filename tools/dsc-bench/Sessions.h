//===- Sessions.h - dsc-bench --sessions: many requests through the scheduler ===//
//
// What: dsc-bench's serving mode (issue 13's `--sessions B [--shared-prefix
// N]`): B requests, each a prompt of --prefill-len synthetic ids (the first N
// shared by all, the rest the request's own) generating --decode-steps
// tokens greedily, submitted together to the runtime's Scheduler (B running
// at once; with N > 0 a SnapshotCache and each request's cache breakpoint at
// N, so that every request after the first prefills only its tail). Times
// the whole run and every step: time to first token per request, the
// decode steps' rows per second (generated tokens of steps that ran no
// prefill over their time), total tokens per second, prefix hits. One
// warm-up request runs first (module loads, first touch), untimed.
// Today a step's requests run one after another (Scheduler.h), so the rows
// per second of B sessions is the one-session rate: the number the batched
// decode plans are to raise.
//===----------------------------------------------------------------------===//
#ifndef DSC_TOOLS_DSC_BENCH_SESSIONS_H
#define DSC_TOOLS_DSC_BENCH_SESSIONS_H

#include "dsc/runtime/Engine.h"

#include <cstdint>
#include <functional>
#include <string>

namespace dsc::tools {

struct SessionsBench {
  int64_t sessions = 1;     ///< --sessions
  int64_t sharedPrefix = 0; ///< --shared-prefix
  int64_t promptTokens = 0; ///< --prefill-len
  int64_t newTokens = 0;    ///< --decode-steps
  /// Token id i of request r's prompt (ids [0, sharedPrefix) are the same
  /// for every r).
  std::function<int32_t(int64_t r, int64_t i)> id;
};

/// Runs the bench; returns the JSON object of its results (or the error).
runtime::Expected<std::string> runSessionsBench(runtime::Engine &engine, const SessionsBench &b);

} // namespace dsc::tools

#endif // DSC_TOOLS_DSC_BENCH_SESSIONS_H
