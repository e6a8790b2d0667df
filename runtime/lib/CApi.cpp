//===- CApi.cpp - The C API over Engine / Session ----------------------------===//
//
// Every entry point catches what the C++ side could throw (allocation
// failure) so nothing crosses into C; errors become a dsc_status plus a
// thread-local message.
//===----------------------------------------------------------------------===//
#include "dsc/dsc.h"

#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Scheduler.h"

#include <algorithm>
#include <cstring>
#include <exception>
#include <new>
#include <string>

using namespace dsc::runtime;

struct dsc_engine {
  std::unique_ptr<Engine> engine;
};
struct dsc_session {
  std::unique_ptr<Session> session;
  const Engine *engine; ///< the engine it came from (it outlives its sessions)
};
struct dsc_snapshot {
  SessionSnapshot snapshot;
};
struct dsc_scheduler {
  std::unique_ptr<Scheduler> scheduler;
};

namespace {

thread_local std::string lastError;

dsc_status fromStatus(const Status &status) {
  lastError = status.message();
  switch (status.code()) {
  case StatusCode::Ok: return DSC_OK;
  case StatusCode::InvalidArgument: return DSC_INVALID_ARGUMENT;
  case StatusCode::NotFound: return DSC_NOT_FOUND;
  case StatusCode::DataLoss: return DSC_DATA_LOSS;
  case StatusCode::FailedPrecondition: return DSC_FAILED_PRECONDITION;
  case StatusCode::Unavailable: return DSC_UNAVAILABLE;
  case StatusCode::Internal: return DSC_INTERNAL;
  }
  return DSC_INTERNAL;
}

dsc_status invalid(const char *message) {
  lastError = message;
  return DSC_INVALID_ARGUMENT;
}

template <typename Fn> dsc_status guarded(Fn &&fn) {
  try {
    return fn();
  } catch (const std::bad_alloc &) {
    lastError = "out of memory";
    return DSC_INTERNAL;
  } catch (const std::exception &e) {
    lastError = std::string("internal error: ") + e.what();
    return DSC_INTERNAL;
  } catch (...) {
    lastError = "internal error";
    return DSC_INTERNAL;
  }
}

/// Refuses a call whose logits buffer cannot hold the rows `program` is
/// sure to return (its logits output's first dimension: 1, or at least one
/// row when it is the tokens'), before anything runs: the session keeps its
/// position and the token is not consumed (issue 15: a too-small buffer was
/// found only after the call had run). copyLogits still checks the rows a
/// call did return.
dsc_status checkLogitsCapacity(const dsc_session *session, const char *entry,
                               const char *program, size_t capacity) {
  const Plan &plan = session->engine->plan();
  const Program *p = plan.program(program);
  if (!p || p->outputs.empty())
    return DSC_OK; // the call itself reports a plan without the program
  const std::vector<int64_t> &shape = p->values[size_t(p->outputs.front())].shape;
  const size_t rows = !shape.empty() && shape[0] > 0 ? size_t(shape[0]) : 1;
  const size_t vocab = size_t(plan.model.vocabSize);
  if (vocab != 0 && capacity / vocab < rows) {
    lastError = std::string(entry) + ": logits buffer too small: " +
                std::to_string(rows * vocab) + " floats needed, capacity " +
                std::to_string(capacity) + " (nothing ran)";
    return DSC_INVALID_ARGUMENT;
  }
  return DSC_OK;
}

dsc_status copyLogits(const Expected<HostTensor> &logits, float *out, size_t capacity,
                      size_t *rows) {
  if (!logits)
    return fromStatus(logits.status());
  size_t n = size_t(logits->numElements());
  if (logits->dtype() != DType::F32 || logits->shape().size() != 2) {
    lastError = "logits are not float32 of rank 2";
    return DSC_INTERNAL;
  }
  if (n > capacity) {
    lastError = "logits buffer too small: " + std::to_string(n) + " floats needed, capacity " +
                std::to_string(capacity);
    return DSC_INVALID_ARGUMENT;
  }
  std::copy(logits->data<float>(), logits->data<float>() + n, out);
  *rows = size_t(logits->dim(0));
  lastError.clear();
  return DSC_OK;
}

} // namespace

extern "C" {

const char *dsc_last_error(void) { return lastError.c_str(); }

dsc_status dsc_engine_load(const char *plan_path, const char *checkpoint_path, const char *backend,
                           dsc_engine **out) {
  if (!plan_path || !checkpoint_path || !out)
    return invalid("dsc_engine_load: null argument");
  return guarded([&] {
    EngineOptions options;
    if (backend)
      options.backend = backend;
    auto engine = Engine::load(plan_path, checkpoint_path, options);
    if (!engine)
      return fromStatus(engine.status());
    *out = new dsc_engine{std::move(engine.value())};
    lastError.clear();
    return DSC_OK;
  });
}

void dsc_engine_destroy(dsc_engine *engine) { delete engine; }

int64_t dsc_engine_vocab_size(const dsc_engine *engine) {
  return engine ? engine->engine->plan().model.vocabSize : 0;
}

int64_t dsc_engine_max_seq_len(const dsc_engine *engine) {
  return engine ? engine->engine->plan().model.maxSeqLen : 0;
}

dsc_status dsc_session_create(dsc_engine *engine, dsc_session **out) {
  if (!engine || !out)
    return invalid("dsc_session_create: null argument");
  return guarded([&] {
    *out = new dsc_session{engine->engine->newSession(), engine->engine.get()};
    lastError.clear();
    return DSC_OK;
  });
}

void dsc_session_destroy(dsc_session *session) { delete session; }

void dsc_session_reset(dsc_session *session) {
  if (!session)
    return;
  (void)guarded([&] {
    session->session->reset();
    return DSC_OK;
  });
}

dsc_status dsc_session_prefill(dsc_session *session, const int32_t *ids, size_t count,
                               float *logits, size_t logits_capacity, size_t *rows) {
  if (!session || !ids || !logits || !rows)
    return invalid("dsc_session_prefill: null argument");
  return guarded([&] {
    if (dsc_status s = checkLogitsCapacity(session, "dsc_session_prefill", "prefill", logits_capacity);
        s != DSC_OK)
      return s;
    return copyLogits(session->session->prefill(std::span<const int32_t>(ids, count)), logits,
                      logits_capacity, rows);
  });
}

dsc_status dsc_session_decode(dsc_session *session, int32_t id, float *logits,
                              size_t logits_capacity, size_t *rows) {
  if (!session || !logits || !rows)
    return invalid("dsc_session_decode: null argument");
  return guarded([&] {
    if (dsc_status s = checkLogitsCapacity(session, "dsc_session_decode", "decode", logits_capacity);
        s != DSC_OK)
      return s;
    return copyLogits(session->session->decode(id), logits, logits_capacity, rows);
  });
}

dsc_status dsc_session_extend(dsc_session *session, const int32_t *ids, size_t count,
                              float *logits, size_t logits_capacity, size_t *rows) {
  if (!session || !ids || !logits || !rows)
    return invalid("dsc_session_extend: null argument");
  return guarded([&] {
    if (dsc_status s = checkLogitsCapacity(session, "dsc_session_extend", "prefill", logits_capacity);
        s != DSC_OK)
      return s;
    return copyLogits(session->session->extend(std::span<const int32_t>(ids, count)), logits,
                      logits_capacity, rows);
  });
}

int64_t dsc_session_position(const dsc_session *session) {
  return session ? session->session->position() : 0;
}

dsc_status dsc_session_prefill_prefix(dsc_session *session, const int32_t *ids, size_t count,
                                      dsc_snapshot **out) {
  if (!session || !ids || !out)
    return invalid("dsc_session_prefill_prefix: null argument");
  return guarded([&] {
    Expected<SessionSnapshot> snapshot =
        session->session->prefillPrefix(std::span<const int32_t>(ids, count));
    if (!snapshot)
      return fromStatus(snapshot.status());
    *out = new dsc_snapshot{std::move(snapshot.value())};
    lastError.clear();
    return DSC_OK;
  });
}

dsc_status dsc_session_prefill_from(dsc_session *session, const dsc_snapshot *prefix,
                                    const int32_t *ids, size_t count, float *logits,
                                    size_t logits_capacity, size_t *rows) {
  if (!session || !prefix || !ids || !logits || !rows)
    return invalid("dsc_session_prefill_from: null argument");
  return guarded([&] {
    if (dsc_status s = checkLogitsCapacity(session, "dsc_session_prefill_from", "prefill", logits_capacity);
        s != DSC_OK)
      return s;
    return copyLogits(
        session->session->prefillFrom(prefix->snapshot, std::span<const int32_t>(ids, count)),
        logits, logits_capacity, rows);
  });
}

int64_t dsc_session_min_prefix_tail(const dsc_session *session) {
  return session ? session->session->minPrefixTail() : 0;
}

int64_t dsc_snapshot_tokens(const dsc_snapshot *snapshot) {
  return snapshot ? int64_t(snapshot->snapshot.ids.size()) : 0;
}

uint64_t dsc_snapshot_bytes(const dsc_snapshot *snapshot) {
  return snapshot ? snapshot->snapshot.bytes() : 0;
}

void dsc_snapshot_destroy(dsc_snapshot *snapshot) { delete snapshot; }

dsc_status dsc_scheduler_create(dsc_engine *engine, int64_t max_running, uint64_t memory_limit,
                                dsc_scheduler **out) {
  if (!engine || !out)
    return invalid("dsc_scheduler_create: null argument");
  return guarded([&] {
    SchedulerOptions options;
    options.maxRunning = max_running;
    options.memoryLimit = memory_limit;
    Expected<std::unique_ptr<Scheduler>> s = Scheduler::create(*engine->engine, options);
    if (!s)
      return fromStatus(s.status());
    *out = new dsc_scheduler{std::move(s.value())};
    return DSC_OK;
  });
}

void dsc_scheduler_destroy(dsc_scheduler *scheduler) { delete scheduler; }

dsc_status dsc_scheduler_submit(dsc_scheduler *scheduler, const int32_t *ids, size_t count,
                                int64_t max_new_tokens, uint64_t *id) {
  if (!scheduler || (!ids && count) || !id)
    return invalid("dsc_scheduler_submit: null argument");
  return guarded([&] {
    // The size is checked before the copy: a count no plan holds is refused
    // without reading the caller's buffer (issue 15).
    const Plan &plan = scheduler->scheduler->engine().plan();
    if (count > uint64_t(plan.model.maxSeqLen))
      return fromStatus(invalidArgument("request: " + std::to_string(count) +
                                        " prompt tokens exceed the plan's max_seq_len " +
                                        std::to_string(plan.model.maxSeqLen)));
    Expected<uint64_t> r = scheduler->scheduler->submit(
        GenerationRequest{std::vector<int32_t>(ids, ids + count), max_new_tokens});
    if (!r)
      return fromStatus(r.status());
    *id = *r;
    return DSC_OK;
  });
}

dsc_status dsc_scheduler_cancel(dsc_scheduler *scheduler, uint64_t id) {
  if (!scheduler)
    return invalid("dsc_scheduler_cancel: null argument");
  return guarded([&] { return fromStatus(scheduler->scheduler->cancel(id)); });
}

dsc_status dsc_scheduler_step(dsc_scheduler *scheduler, int64_t *running, int64_t *queued) {
  if (!scheduler)
    return invalid("dsc_scheduler_step: null argument");
  return guarded([&] {
    Expected<Scheduler::StepReport> r = scheduler->scheduler->step();
    if (!r)
      return fromStatus(r.status());
    if (running)
      *running = r->running;
    if (queued)
      *queued = r->queued;
    return DSC_OK;
  });
}

dsc_status dsc_scheduler_result(dsc_scheduler *scheduler, uint64_t id, dsc_request_state *state,
                                int32_t *out_ids, size_t capacity, size_t *count) {
  if (!scheduler || !state || !count || (!out_ids && capacity))
    return invalid("dsc_scheduler_result: null argument");
  return guarded([&] {
    Expected<GenerationResult> r = scheduler->scheduler->result(id);
    if (!r)
      return fromStatus(r.status());
    if (r->outputIds.size() > capacity && out_ids)
      return invalid("dsc_scheduler_result: the request has more tokens than the buffer holds");
    *state = dsc_request_state(int(r->state));
    *count = r->outputIds.size();
    if (out_ids)
      std::copy(r->outputIds.begin(), r->outputIds.end(), out_ids);
    lastError = r->state == RequestState::Failed ? r->error.message() : "";
    return DSC_OK;
  });
}

dsc_status dsc_scheduler_release(dsc_scheduler *scheduler, uint64_t id) {
  if (!scheduler)
    return invalid("dsc_scheduler_release: null argument");
  return guarded([&] {
    Expected<GenerationResult> r = scheduler->scheduler->take(id);
    return r ? DSC_OK : fromStatus(r.status());
  });
}

} // extern "C"
