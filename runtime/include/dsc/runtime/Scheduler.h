//===- Scheduler.h - Continuous batching of generation requests -----------===//
//
// What: the serving runtime's request scheduler (issue 13): requests (a
// prompt's token ids and how many tokens to generate, greedily) are
// submitted from any thread, wait in a FIFO queue, are admitted between
// steps while the running set stays within `maxRunning` sessions and
// `memoryLimit` bytes of session states, and leave on their own when they
// have their tokens, fail or are cancelled. Each step() advances every
// running request by one call: the prompt's prefill (through an optional
// SnapshotCache: exact prefix reuse) for a request admitted in this step,
// else one decode.
// Why: agentic serving is many sequences at once; joining and leaving
// between steps (continuous batching) keeps a long generation from holding
// the others back, and admission by memory never over-commits the device.
// Today the running requests' calls of a step still run one after another,
// each on its own Session: the outputs are the serial runs', bit for bit
// (the test). The batched decode plans (one launch sequence for every row)
// replace the inside of step() later; the API and its semantics stay.
// Invariants: a request's outputs never depend on which others ran beside
// it; a request that fails (its error kept in its result) or is cancelled
// leaves the others running; a session returns to the pool only reset;
// submit validates before queueing (ids in the vocabulary, prompt + new
// tokens within max_seq_len), so a bad request is refused, never run.
// submit, cancel, result and take are safe from any thread; step() runs on
// one thread at a time (a second caller waits).
// Bound: maxRunning sessions of planStateBytes each; the queue holds what
// was submitted (the caller bounds it).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_SCHEDULER_H
#define DSC_RUNTIME_SCHEDULER_H

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/SnapshotCache.h"

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

namespace dsc::runtime {

/// The greedy rule every generation path uses: the argmax of the last row of
/// `logits` (F32, vocabulary last), the lowest id on ties.
int32_t greedyToken(const HostTensor &logits);

struct GenerationRequest {
  std::vector<int32_t> promptIds;
  int64_t maxNewTokens = 0;
  /// A cache breakpoint: with a prefix cache, save the states after (at
  /// most) this many prompt tokens, a shared system prompt's end, instead of
  /// the cache's own save point (SnapshotCache::savePoint: the prompt's
  /// last whole block), so that prompts sharing only that prefix hit. 0: the
  /// cache's save point. Rounded down to the cache's blocks and never past
  /// its save point.
  int64_t cachePrefix = 0;
};

/// A request's life (the C API's dsc_request_state has the same values).
enum class RequestState { Queued, Running, Finished, Cancelled, Failed };

struct GenerationResult {
  RequestState state = RequestState::Queued;
  std::vector<int32_t> outputIds;   ///< the greedy tokens so far
  int64_t prefixHitTokens = 0;      ///< prompt tokens served by the snapshot cache
  Status error = Status::ok();      ///< Failed: why
};

struct SchedulerOptions {
  /// Requests running at once; 0: the plan's max_batch.
  int64_t maxRunning = 0;
  /// Bytes of session states the running requests may hold (planStateBytes
  /// each); 0: no limit beyond maxRunning.
  uint64_t memoryLimit = 0;
  /// Exact prefix reuse (owned by the caller, shared by the requests); null:
  /// every prompt prefills cold. Used only where the backend runs prefill
  /// chunks (Backend::runsPrefillChunks).
  SnapshotCache *prefixCache = nullptr;
};

class Scheduler {
public:
  /// InvalidArgument when the options cannot run one request (maxRunning <
  /// 0, or memoryLimit below one session's states).
  static Expected<std::unique_ptr<Scheduler>> create(Engine &engine, SchedulerOptions options);

  /// Queues a request; its id names it to cancel, result and take. A prompt
  /// that is empty, holds an id outside the vocabulary or with its new
  /// tokens exceeds max_seq_len is refused (InvalidArgument naming it).
  Expected<uint64_t> submit(GenerationRequest request);
  /// Cancels a queued or running request (its session goes back to the
  /// pool; its tokens so far stay in its result). A finished one is left as
  /// it is; an unknown id is NotFound.
  Status cancel(uint64_t id);

  struct StepReport {
    int64_t admitted = 0, prefilled = 0, decoded = 0, finished = 0, failed = 0;
    int64_t running = 0, queued = 0; ///< after the step
  };
  /// One round: admit, then one call per running request. Request errors go
  /// to their results; the step itself fails only on an internal error.
  Expected<StepReport> step();
  /// Nothing queued or running.
  bool idle() const;

  /// A request's state and tokens so far; NotFound once taken or unknown.
  Expected<GenerationResult> result(uint64_t id) const;
  /// The result of a request that has ended (Finished, Cancelled, Failed),
  /// forgotten afterwards; FailedPrecondition while it is queued or running.
  Expected<GenerationResult> take(uint64_t id);

  Engine &engine() const { return engine_; }
  int64_t maxRunning() const { return maxRunning_; }
  uint64_t sessionBytes() const { return sessionBytes_; }

private:
  struct Active {
    uint64_t id = 0;
    GenerationRequest request;
    std::unique_ptr<Session> session;
    bool prefilled = false;
    int32_t next = 0; ///< the token decode() feeds next
  };
  Scheduler(Engine &engine, SchedulerOptions options, int64_t maxRunning, uint64_t sessionBytes);
  /// One call of `a` (prefill or decode) into its result; false when it ended.
  bool advance(Active &a, StepReport &report);
  Status prefill(Active &a, GenerationResult &r, int32_t &first);
  void finish(Active &a, RequestState state, Status error = Status::ok());

  Engine &engine_;
  SchedulerOptions options_;
  int64_t maxRunning_ = 1;
  uint64_t sessionBytes_ = 0;
  std::mutex stepMutex_;                       ///< one step() at a time
  mutable std::mutex mutex_;                   ///< everything below
  uint64_t nextId_ = 1;
  std::deque<std::pair<uint64_t, GenerationRequest>> queue_;
  std::vector<Active> running_;                ///< in admission order
  std::map<uint64_t, GenerationResult> results_;
  std::vector<std::unique_ptr<Session>> pool_; ///< reset sessions to reuse
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_SCHEDULER_H
