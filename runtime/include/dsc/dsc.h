/*===- dsc.h - C API of the dsc runtime ------------------------------------===*
 *
 * For services that embed dsc from C or another language. Every function
 * returns a dsc_status (0 = ok); on failure dsc_last_error() gives a message
 * naming what is wrong (thread-local, valid until the next call on the same
 * thread). No C++ exception crosses this API. Handles are opaque; destroy
 * what you create. Logits are float32 [rows, vocab] copied into the caller's
 * buffer.
 *
 * Threading: one call at a time per session; an engine must outlive its
 * sessions; sessions of one engine may run on different threads at once.
 * A prefill/decode that fails partway leaves the session failed: later calls
 * return DSC_FAILED_PRECONDITION until dsc_session_reset(). DSC_UNAVAILABLE
 * from dsc_engine_load means the backend (CUDA driver or GPU) is missing.
 *
 *   dsc_engine *engine;
 *   if (dsc_engine_load("model.dscp", "ckpt/", "cpu", &engine)) fail(dsc_last_error());
 *   dsc_session *session;
 *   dsc_session_create(engine, &session);
 *   dsc_session_prefill(session, ids, n, logits, vocab, &rows);
 *   dsc_session_decode(session, next_id, logits, vocab, &rows);
 *   dsc_session_extend(session, more_ids, m, logits, vocab, &rows); // m rows in one call
 *   dsc_snapshot *prefix;                          // exact prefix reuse
 *   dsc_session_prefill_prefix(session, ids, h, &prefix);
 *   dsc_session_prefill_from(session, prefix, ids, n, logits, vocab, &rows); // == prefill(ids, n)
 *   dsc_snapshot_destroy(prefix);
 *   dsc_session_destroy(session); dsc_engine_destroy(engine);
 *===----------------------------------------------------------------------===*/
#ifndef DSC_DSC_H
#define DSC_DSC_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum dsc_status {
  DSC_OK = 0,
  DSC_INVALID_ARGUMENT = 1,
  DSC_NOT_FOUND = 2,
  DSC_DATA_LOSS = 3,
  DSC_FAILED_PRECONDITION = 4,
  DSC_UNAVAILABLE = 5,
  DSC_INTERNAL = 6
} dsc_status;

typedef struct dsc_engine dsc_engine;
typedef struct dsc_session dsc_session;
/** A sequence's states after a prompt prefix (Session::prefillPrefix), for
 *  exact prefix reuse by any session of the same engine. Immutable. */
typedef struct dsc_snapshot dsc_snapshot;

/** The message of the last failure on this thread ("" if none). */
const char *dsc_last_error(void);

/** Loads and verifies a plan and binds a checkpoint; backend "cpu" or
 *  "cuda" (NULL: "cpu"). */
dsc_status dsc_engine_load(const char *plan_path, const char *checkpoint_path,
                           const char *backend, dsc_engine **out);
void dsc_engine_destroy(dsc_engine *engine);
/** The model's vocabulary size (logits row width). */
int64_t dsc_engine_vocab_size(const dsc_engine *engine);
/** The plan's longest sequence. */
int64_t dsc_engine_max_seq_len(const dsc_engine *engine);

dsc_status dsc_session_create(dsc_engine *engine, dsc_session **out);
void dsc_session_destroy(dsc_session *session);
/** Forgets the sequence and clears a failure (a failure to re-create the
 *  states is reported by the next prefill). */
void dsc_session_reset(dsc_session *session);

/** Prefills `count` ids from position 0. Writes the logits rows the plan
 *  returns (1, or count in conformance plans) into `logits` (capacity
 *  `logits_capacity` floats) and their number into `rows`. Every call that
 *  writes logits refuses a buffer too small for the rows it is sure to
 *  return (one, vocab floats) with DSC_INVALID_ARGUMENT before anything
 *  runs: the session and its position are unchanged. */
dsc_status dsc_session_prefill(dsc_session *session, const int32_t *ids, size_t count,
                               float *logits, size_t logits_capacity, size_t *rows);
/** Decodes one id at the next position; writes one logits row. */
dsc_status dsc_session_decode(dsc_session *session, int32_t id, float *logits,
                              size_t logits_capacity, size_t *rows);
/** Runs `count` ids at the next positions in one call (Session::extend: a
 *  continuation of the prefilled sequence; needs a plan without CED replay).
 *  Writes the logits rows the plan returns, as dsc_session_prefill. */
dsc_status dsc_session_extend(dsc_session *session, const int32_t *ids, size_t count,
                              float *logits, size_t logits_capacity, size_t *rows);
/** The session's next position (tokens seen so far). */
int64_t dsc_session_position(const dsc_session *session);

/** Prefills `count` ids from position 0 as the leading chunk(s) of a longer
 *  prompt and returns their states as a snapshot (the session is reset). */
dsc_status dsc_session_prefill_prefix(dsc_session *session, const int32_t *ids, size_t count,
                                      dsc_snapshot **out);
/** Prefill of the whole prompt ids[0, count) continued from `prefix` (ids
 *  must start with the prefix's tokens, and leave at least
 *  dsc_session_min_prefix_tail() after them): the same logits and states as
 *  dsc_session_prefill of the whole prompt, bit for bit on the CPU backend.
 *  Writes the logits rows as dsc_session_prefill. */
dsc_status dsc_session_prefill_from(dsc_session *session, const dsc_snapshot *prefix,
                                    const int32_t *ids, size_t count, float *logits,
                                    size_t logits_capacity, size_t *rows);
/** The fewest tokens dsc_session_prefill_from runs after a prefix. */
int64_t dsc_session_min_prefix_tail(const dsc_session *session);

/* Continuous batching (Scheduler.h): requests submitted from any thread,
 * admitted between steps within max_running sessions (0: the plan's
 * max_batch) and memory_limit bytes of session states (0: no limit), each
 * step advancing every running request by one call (greedy tokens). */
typedef struct dsc_scheduler dsc_scheduler;
typedef enum dsc_request_state {
  DSC_REQUEST_QUEUED = 0,
  DSC_REQUEST_RUNNING = 1,
  DSC_REQUEST_FINISHED = 2,
  DSC_REQUEST_CANCELLED = 3,
  DSC_REQUEST_FAILED = 4
} dsc_request_state;
dsc_status dsc_scheduler_create(dsc_engine *engine, int64_t max_running, uint64_t memory_limit,
                                dsc_scheduler **out);
/** The engine must outlive its schedulers. */
void dsc_scheduler_destroy(dsc_scheduler *scheduler);
/** Queues `count` prompt ids and `max_new_tokens`; *id names the request.
 *  A bad request (no tokens, an id outside the vocabulary, too long) is
 *  refused before it queues. */
dsc_status dsc_scheduler_submit(dsc_scheduler *scheduler, const int32_t *ids, size_t count,
                                int64_t max_new_tokens, uint64_t *id);
/** Cancels a queued or running request (its tokens so far are kept). */
dsc_status dsc_scheduler_cancel(dsc_scheduler *scheduler, uint64_t id);
/** One round: admit, then one call per running request. *running and
 *  *queued (either may be NULL): the counts after the step. */
dsc_status dsc_scheduler_step(dsc_scheduler *scheduler, int64_t *running, int64_t *queued);
/** A request's state and tokens so far: up to `capacity` ids into `out_ids`
 *  (NULL with capacity 0 asks for the count only), their count into *count;
 *  DSC_INVALID_ARGUMENT when they do not fit (nothing written then). A
 *  failed request's error is dsc_last_error() after this call. Ended
 *  requests are forgotten by dsc_scheduler_release. */
dsc_status dsc_scheduler_result(dsc_scheduler *scheduler, uint64_t id, dsc_request_state *state,
                                int32_t *out_ids, size_t capacity, size_t *count);
/** Forgets an ended request (DSC_FAILED_PRECONDITION while it runs). */
dsc_status dsc_scheduler_release(dsc_scheduler *scheduler, uint64_t id);
/** Tokens of the prefix a snapshot holds, and its host bytes. */
int64_t dsc_snapshot_tokens(const dsc_snapshot *snapshot);
uint64_t dsc_snapshot_bytes(const dsc_snapshot *snapshot);
void dsc_snapshot_destroy(dsc_snapshot *snapshot);

#ifdef __cplusplus
}
#endif

#endif /* DSC_DSC_H */
