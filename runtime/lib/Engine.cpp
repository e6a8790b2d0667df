//===- Engine.cpp - Engine and Session -------------------------------------===//
//
// A Session call finds its CallPlan (CallPlan.h: made once per call shape,
// cached per program, moved to the call's start position), lays the
// activations out as views into one host arena per program as the plan says
// (or, with EngineOptions::arena = false, one allocation per slot), hands a
// device backend the plan's capacity layout, and runs the plan's steps in
// order through the backend (CallRun), calling the observer; then it
// advances the position. A value is zeroed right before its first writing
// launch (inputs before the first launch, the plan's zeroing schedule), so
// every launch sees what a fresh zeroed slot would hold. States are
// zero-initialised except compressor scores (-inf, reference-spec §9.4) and
// the Engram history (-1 = nothing yet).
//
// Ownership: the Session holds its BackendSession (Backend::openSession, made
// by reset()) for its lifetime and passes it to every backend hook and launch;
// the backend finds device copies by TensorRef (weight binding, state index,
// program slot), so no host tensor has to be "released" when it goes.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/PlanFile.h"
#include "dsc/runtime/StateLayout.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>

namespace dsc::runtime {

namespace {

/// The first of ids[from, end) outside [0, vocab): an InvalidArgument naming
/// `what`, the token's index and its id.
Status checkVocabulary(std::span<const int32_t> ids, size_t from, int64_t vocab,
                       const std::string &what) {
  for (size_t i = from; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= vocab)
      return invalidArgument(what + ": token " + std::to_string(i) + " has id " +
                             std::to_string(ids[i]) + ", outside the vocabulary [0, " +
                             std::to_string(vocab) + ")");
  return Status::ok();
}

/// Plan and checkpoint reading report an I/O error other than "missing" as
/// Unavailable; the Engine reserves Unavailable for "the backend (driver or
/// GPU) is missing", so such errors become FailedPrecondition here.
Status notBackend(Status status) {
  if (status.code() == StatusCode::Unavailable)
    return failedPrecondition(status.message());
  return status;
}

} // namespace

Expected<std::unique_ptr<Backend>> Engine::makeBackend(const EngineOptions &options) {
  if (options.backend == "cpu")
    return createCpuBackend(options.cpuThreads);
  if (options.backend == "cuda") {
    Expected<std::unique_ptr<Backend>> cuda = createCudaBackend(options.cuda);
    if (!cuda) // Unavailable: no driver or no GPU
      return cuda.status();
    return std::move(cuda.value());
  }
  return invalidArgument("unknown backend '" + options.backend + "' (available: cpu, cuda)");
}

Expected<std::unique_ptr<Engine>> Engine::load(const std::string &planPath,
                                               const std::string &checkpointPath,
                                               EngineOptions options) {
  // The backend first: a missing driver or GPU is reported (as Unavailable)
  // before any file is read.
  Expected<std::unique_ptr<Backend>> backend = makeBackend(options);
  if (!backend)
    return backend.status();
  Expected<Plan> plan = readPlanFile(planPath);
  if (!plan)
    return notBackend(plan.status());
  Expected<std::unique_ptr<Engine>> engine = bind(std::move(backend.value()), std::move(plan.value()),
                                                  checkpointPath, options.sessionMemoryLimit);
  if (engine)
    (*engine)->options_ = std::move(options);
  return engine;
}

Expected<std::unique_ptr<Engine>> Engine::create(Plan plan, const std::string &checkpointPath,
                                                 EngineOptions options) {
  Expected<std::unique_ptr<Backend>> backend = makeBackend(options);
  if (!backend)
    return backend.status();
  Expected<std::unique_ptr<Engine>> engine =
      bind(std::move(backend.value()), std::move(plan), checkpointPath, options.sessionMemoryLimit);
  if (engine)
    (*engine)->options_ = std::move(options);
  return engine;
}

Expected<std::unique_ptr<Engine>> Engine::bind(std::unique_ptr<Backend> backend, Plan plan,
                                               const std::string &checkpointPath,
                                               uint64_t sessionMemoryLimit) {
  if (Status status = verifyPlan(plan); !status)
    return status;
  if (Status status = checkSessionMemory(plan, sessionMemoryLimit); !status)
    return status;
  std::unique_ptr<Engine> engine(new Engine());
  engine->backend_ = std::move(backend);
  if (Status status = engine->backend_->check(plan); !status)
    return status;

  Expected<Checkpoint> checkpoint = Checkpoint::open(checkpointPath);
  if (!checkpoint)
    return notBackend(checkpoint.status());
  if (Status status = checkpoint->check(plan.tensors); !status)
    return notBackend(status);
  engine->weights_.resize(plan.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorBinding &binding = plan.tensors[i];
    HostTensor &tensor = engine->weights_[i];
    if (Status s = tensor.resetChecked(binding.dtype, binding.shape); !s)
      return s.withContext("tensor '" + binding.name + "': ");
    Expected<std::vector<std::byte>> bytes = checkpoint->gather(binding);
    if (!bytes)
      return notBackend(bytes.status());
    if (bytes->size() != tensor.byteSize())
      return internalError("tensor '" + binding.name + "': gathered " +
                           std::to_string(bytes->size()) + " bytes, expected " +
                           std::to_string(tensor.byteSize()));
    std::copy(bytes->begin(), bytes->end(), tensor.bytes());
    if (Status status = engine->backend_->toDevice(nullptr, TensorRef::weight(int64_t(i)), tensor);
        !status)
      return status.withContext("uploading '" + binding.name + "': ");
  }
  engine->plan_ = std::move(plan);
  return engine;
}

// The backend (and with it the weights' device copies) goes first, then the
// host weights; every Session is gone by now (an Engine outlives them).
Engine::~Engine() = default;

std::unique_ptr<Session> Engine::newSession() { return std::make_unique<Session>(*this); }

Session::Session(Engine &engine) : engine_(engine), traits_(traitsOf(engine.backend())) {
  activations_.resize(engine_.plan().programs.size());
  memory_.resize(engine_.plan().programs.size());
  for (size_t p = 0; p < memory_.size(); ++p) {
    const std::vector<Launch> &launches = engine_.plan().programs[p].launches;
    memory_[p].replays =
        std::any_of(launches.begin(), launches.end(), [](const Launch &l) { return l.replay; });
  }
  reset();
}

// backendSession_ frees the session's device memory and graphs (RAII).
Session::~Session() = default;

void Session::reset() {
  const Plan &plan = engine_.plan();
  position_ = 0;
  decodeSteps_ = 0;
  failure_.clear();
  stateError_ = Status::ok();
  auto keepFirst = [&](Status s) {
    if (stateError_ && !s)
      stateError_ = std::move(s);
  };
  if (!backendSession_) {
    Expected<std::unique_ptr<BackendSession>> opened = engine_.backend().openSession(plan);
    if (opened && *opened)
      backendSession_ = std::move(opened.value());
    else
      keepFirst(opened ? internalError("the backend opened no session")
                       : opened.status().withContext("opening the backend session: "));
  }
  states_.resize(plan.states.size());
  for (size_t i = 0; i < plan.states.size(); ++i) {
    const StateBuffer &s = plan.states[i];
    HostTensor &t = states_[i];
    switch (s.kind) {
    case StateKind::WindowRing:
    case StateKind::DSparkRing:
    case StateKind::MainKv:
    case StateKind::IndexKeys: {
      Expected<int64_t> bytes = stateBytes(s);
      if (!bytes) {
        keepFirst(bytes.status());
        continue;
      }
      if (Status st = t.resetChecked(DType::U8, {*bytes}); !st) {
        keepFirst(st.withContext("state '" + s.name + "': "));
        continue;
      }
      break;
    }
    case StateKind::CompressorState: {
      // [2, ratio, dim]: kv rows (zeros) then score rows (-inf).
      int64_t dim = s.dim;
      if (dim <= 0) // plans from before StateBuffer::dim: the slot's shape
        for (const Program &p : plan.programs)
          for (const ValueSlot &v : p.values)
            if (v.state == int64_t(i) && v.shape.size() == 3)
              dim = v.shape[2];
      if (Status st = t.resetChecked(DType::F32, {2, s.ratio, dim}); !st) {
        keepFirst(st.withContext("state '" + s.name + "': "));
        continue;
      }
      float *score = t.data<float>() + s.ratio * dim;
      std::fill(score, score + s.ratio * dim, -std::numeric_limits<float>::infinity());
      break;
    }
    case StateKind::EngramHistory:
      if (Status st = t.resetChecked(DType::I64, {s.capacity}); !st) {
        keepFirst(st.withContext("state '" + s.name + "': "));
        continue;
      }
      std::fill(t.data<int64_t>(), t.data<int64_t>() + s.capacity, int64_t(-1));
      break;
    }
    if (backendSession_)
      keepFirst(engine_.backend()
                    .toDevice(backendSession_.get(), TensorRef::state(int64_t(i)), t)
                    .withContext("uploading state '" + s.name + "': "));
  }
}

Status Session::syncStates() {
  if (!backendSession_)
    return stateError_;
  for (size_t i = 0; i < states_.size(); ++i)
    if (Status s = engine_.backend().toHost(backendSession_.get(), TensorRef::state(int64_t(i)),
                                            states_[i]);
        !s)
      return s;
  return Status::ok();
}

uint64_t Session::deviceArenaBytes(const std::string &program) const {
  return backendSession_ ? engine_.backend().arenaBytes(*backendSession_, program) : 0;
}

const HostTensor *Session::value(const std::string &program, int64_t slot) const {
  const Plan &plan = engine_.plan();
  for (size_t p = 0; p < plan.programs.size(); ++p)
    if (plan.programs[p].name == program && slot >= 0 &&
        size_t(slot) < activations_[p].size())
      return &activations_[p][slot];
  return nullptr;
}

const SessionMemoryStats *Session::memoryStats(const std::string &program) const {
  const Plan &plan = engine_.plan();
  for (size_t p = 0; p < plan.programs.size(); ++p)
    if (plan.programs[p].name == program && memory_[p].called)
      return &memory_[p].stats;
  return nullptr;
}

Status Session::checkTokenCount(std::span<const int32_t> ids, const char *who) const {
  const int64_t limit = engine_.plan().model.maxSeqLen;
  if (limit < 0 || ids.size() > uint64_t(limit))
    return invalidArgument(std::string(who) + ": " + std::to_string(ids.size()) +
                           " tokens exceed the plan's max_seq_len " + std::to_string(limit));
  return Status::ok();
}

Expected<HostTensor> Session::prefill(std::span<const int32_t> ids) {
  if (Status s = checkTokenCount(ids, "prefill"); !s)
    return s;
  if (!failure_.empty())
    return failedPrecondition(failure_);
  if (position_ != 0)
    return failedPrecondition("prefill starts a sequence: call reset() first (position is " +
                              std::to_string(position_) + ")");
  const PlanFacts &model = engine_.plan().model;
  if (int64_t(ids.size()) > model.maxSeqLen)
    return invalidArgument("prefill: position " + std::to_string(ids.size()) +
                           " exceeds the plan's max_seq_len " + std::to_string(model.maxSeqLen));
  return prefillSpan(ids, 0, /*finish=*/true);
}

Expected<HostTensor> Session::prefillSpan(std::span<const int32_t> ids, int64_t from,
                                          bool finish) {
  const PlanFacts &model = engine_.plan().model;
  // Chunked prefill (PlanFacts::prefillChunk): each chunk continues the
  // states of the one before; a continuation chunk's window also reads the
  // ring's last rows; only the last chunk runs a CED plan's replayed
  // launches (it holds >= 2R' rows) and its logits are the result.
  std::vector<PrefillChunk> chunks =
      prefillChunks(int64_t(ids.size()) - from,
                    engine_.backend().runsPrefillChunks() ? model.prefillChunk : 0);
  for (PrefillChunk &c : chunks)
    c.startPos += from;
  // What a chunk would reject is checked for the whole prompt first, so that
  // a rejected prefill leaves the session as it was.
  if (chunks.size() > 1 || from > 0)
    if (Status s = checkVocabulary(ids, size_t(from), model.vocabSize, "prefill"); !s)
      return s;
  Expected<HostTensor> logits = failedPrecondition("prefill: no chunk ran");
  for (size_t i = 0; i < chunks.size(); ++i) {
    const PrefillChunk &chunk = chunks[i];
    CallInfo call;
    call.phase = "prefill";
    call.program = "prefill";
    call.startPos = chunk.startPos;
    call.tokens = chunk.tokens;
    call.prefillLike = true; // ring rows and window rows: the call's plan
    const bool last = i + 1 == chunks.size();
    logits = run("prefill", ids.subspan(size_t(chunk.startPos), size_t(chunk.tokens)),
                 std::move(call), /*runReplay=*/last && finish);
    if (!logits) {
      // Earlier chunks changed the states: the sequence is half prefilled.
      if ((i > 0 || from > 0) && failure_.empty())
        failure_ = "the session failed at prefill chunk " + std::to_string(i) + " (positions " +
                   std::to_string(chunk.startPos) + ".." +
                   std::to_string(chunk.startPos + chunk.tokens - 1) + "): " +
                   logits.status().message() + "; call reset()";
      return logits.status().withContext(chunks.size() > 1 ? "prefill chunk " + std::to_string(i) +
                                                                 " of " +
                                                                 std::to_string(chunks.size()) +
                                                                 ": "
                                                           : std::string());
    }
  }
  return logits;
}

uint64_t SessionSnapshot::bytes() const {
  uint64_t total = 0;
  for (const HostTensor &t : states)
    total += uint64_t(t.byteSize());
  return total;
}

int64_t Session::minPrefixTail() const {
  const PlanFacts &model = engine_.plan().model;
  return std::max<int64_t>({1, 2 * model.cedReplayTokens, 2 * model.windowSize});
}

Expected<SessionSnapshot> Session::prefillPrefix(std::span<const int32_t> ids) {
  if (Status s = checkTokenCount(ids, "prefillPrefix"); !s)
    return s;
  const PlanFacts &model = engine_.plan().model;
  if (ids.empty())
    return invalidArgument("prefillPrefix: no tokens");
  if (int64_t(ids.size()) + minPrefixTail() > model.maxSeqLen)
    return invalidArgument("prefillPrefix: a prefix of " + std::to_string(ids.size()) +
                           " tokens leaves less than the " + std::to_string(minPrefixTail()) +
                           "-token tail prefillFrom needs within the plan's max_seq_len " +
                           std::to_string(model.maxSeqLen));
  if (!engine_.backend().runsPrefillChunks())
    return failedPrecondition(std::string("prefillPrefix: the ") + engine_.backend().name() +
                              " backend runs no continuation chunks");
  reset();
  if (!stateError_)
    return stateError_;
  Expected<HostTensor> ran = prefillSpan(ids, 0, /*finish=*/false);
  if (!ran) {
    reset();
    return ran.status().withContext("prefillPrefix: ");
  }
  SessionSnapshot snapshot;
  Status synced = syncStates();
  if (synced) {
    snapshot.ids.assign(ids.begin(), ids.end());
    snapshot.states = states_;
  }
  reset();
  if (!synced)
    return synced.withContext("prefillPrefix: reading the states back: ");
  return snapshot;
}

Status Session::checkContinuation(const SessionSnapshot &prefix,
                                  std::span<const int32_t> ids) const {
  const Plan &plan = engine_.plan();
  if (Status s = checkTokenCount(ids, "prefillFrom"); !s)
    return s;
  if (Status s = checkTokenCount(prefix.ids, "prefillFrom (the snapshot)"); !s)
    return s;
  const int64_t held = int64_t(prefix.ids.size()), n = int64_t(ids.size());
  if (!engine_.backend().runsPrefillChunks())
    return failedPrecondition(std::string("prefillFrom: the ") + engine_.backend().name() +
                              " backend runs no continuation chunks");
  if (held == 0)
    return invalidArgument("prefillFrom: the snapshot holds no prefix (use prefill)");
  if (n - held < minPrefixTail())
    return invalidArgument("prefillFrom: " + std::to_string(n - held) +
                           " tokens after the cached prefix of " + std::to_string(held) +
                           "; the plan's last prefill chunk needs at least " +
                           std::to_string(minPrefixTail()));
  if (n > plan.model.maxSeqLen)
    return invalidArgument("prefillFrom: position " + std::to_string(n) +
                           " exceeds the plan's max_seq_len " +
                           std::to_string(plan.model.maxSeqLen));
  if (Status s = checkVocabulary(ids, size_t(held), plan.model.vocabSize, "prefillFrom"); !s)
    return s;
  if (!std::equal(prefix.ids.begin(), prefix.ids.end(), ids.begin()))
    return invalidArgument("prefillFrom: the prompt does not start with the snapshot's " +
                           std::to_string(held) + " tokens");
  if (prefix.states.size() != plan.states.size())
    return invalidArgument("prefillFrom: the snapshot holds " +
                           std::to_string(prefix.states.size()) + " states, the plan " +
                           std::to_string(plan.states.size()));
  for (size_t i = 0; i < prefix.states.size(); ++i)
    if (prefix.states[i].byteSize() != states_[i].byteSize() ||
        prefix.states[i].dtype() != states_[i].dtype())
      return invalidArgument("prefillFrom: the snapshot's state '" + plan.states[i].name +
                             "' holds " + std::to_string(prefix.states[i].byteSize()) +
                             " bytes, this plan's " + std::to_string(states_[i].byteSize()));
  return Status::ok();
}

Status Session::restoreSnapshot(const SessionSnapshot &prefix) {
  const Plan &plan = engine_.plan();
  if (!backendSession_ || !stateError_) // a reset that failed: retry it first
    reset();
  if (!stateError_)
    return stateError_;
  // reset()'s bookkeeping without its zeroed states: every state is
  // overwritten below (checkContinuation matched their sizes and dtypes).
  position_ = 0;
  decodeSteps_ = 0;
  failure_.clear();
  for (size_t i = 0; i < states_.size(); ++i) {
    states_[i] = prefix.states[i];
    if (Status s = engine_.backend().toDevice(backendSession_.get(), TensorRef::state(int64_t(i)),
                                              states_[i]);
        !s) {
      reset();
      return s.withContext("uploading state '" + plan.states[i].name + "': ");
    }
  }
  position_ = int64_t(prefix.ids.size());
  return Status::ok();
}

Expected<HostTensor> Session::prefillFrom(const SessionSnapshot &prefix,
                                          std::span<const int32_t> ids) {
  if (Status s = checkContinuation(prefix, ids); !s)
    return s;
  if (Status s = restoreSnapshot(prefix); !s)
    return s.withContext("prefillFrom: ");
  return prefillSpan(ids, position_, /*finish=*/true);
}

Expected<HostTensor> Session::prefillSaving(const SessionSnapshot *from,
                                            std::span<const int32_t> ids, int64_t saveAt,
                                            SessionSnapshot &saved) {
  if (Status s = checkTokenCount(ids, "prefillSaving"); !s)
    return s;
  const int64_t held = from ? int64_t(from->ids.size()) : 0, n = int64_t(ids.size());
  if (from)
    if (Status s = checkContinuation(*from, ids); !s)
      return s.withContext("prefillSaving: ");
  if (saveAt <= held || n - saveAt < minPrefixTail())
    return invalidArgument("prefillSaving: a snapshot at " + std::to_string(saveAt) +
                           " must lie after the " + std::to_string(held) +
                           " tokens it starts from and leave at least " +
                           std::to_string(minPrefixTail()) + " of the " + std::to_string(n));
  const PlanFacts &model = engine_.plan().model;
  if (!from && n > model.maxSeqLen)
    return invalidArgument("prefillSaving: position " + std::to_string(n) +
                           " exceeds the plan's max_seq_len " + std::to_string(model.maxSeqLen));
  if (!from) // (checkContinuation checked a continuation's): nothing runs before all are
    if (Status s = checkVocabulary(ids, 0, model.vocabSize, "prefillSaving"); !s)
      return s;
  if (!engine_.backend().runsPrefillChunks())
    return failedPrecondition(std::string("prefillSaving: the ") + engine_.backend().name() +
                              " backend runs no continuation chunks");
  if (from) {
    if (Status s = restoreSnapshot(*from); !s)
      return s.withContext("prefillSaving: ");
  } else {
    reset();
    if (!stateError_)
      return stateError_;
  }
  // The states at saveAt are those of a chunk boundary of a chunked prefill.
  Expected<HostTensor> head = prefillSpan(ids.first(size_t(saveAt)), held, /*finish=*/false);
  if (!head)
    return head.status();
  if (Status s = syncStates(); !s) {
    reset(); // the sequence stopped at a chunk boundary: nothing may continue it
    return s.withContext("prefillSaving: reading the states back: ");
  }
  saved.ids.assign(ids.begin(), ids.begin() + saveAt);
  saved.states = states_;
  return prefillSpan(ids, saveAt, /*finish=*/true);
}

Expected<HostTensor> Session::decode(int32_t id) {
  if (!failure_.empty())
    return failedPrecondition(failure_);
  if (position_ == 0)
    return failedPrecondition("decode needs a prefilled sequence");
  CallInfo call;
  call.phase = "decode" + std::to_string(decodeSteps_);
  call.program = "decode";
  call.startPos = position_;
  call.tokens = 1;
  call.decodeStep = decodeSteps_;
  int32_t one[1] = {id};
  return run("decode", std::span<const int32_t>(one, 1), std::move(call));
}

Expected<HostTensor> Session::extend(std::span<const int32_t> ids) {
  if (Status s = checkTokenCount(ids, "extend"); !s)
    return s;
  if (!failure_.empty())
    return failedPrecondition(failure_);
  if (position_ == 0)
    return failedPrecondition("extend continues a prefilled sequence: call prefill() first");
  if (ids.empty())
    return invalidArgument("extend: no tokens");
  const PlanFacts &model = engine_.plan().model;
  if (model.cedReplayTokens > 0)
    return failedPrecondition("extend: the plan replays the last " +
                              std::to_string(model.cedReplayTokens) +
                              " prompt rows (CED); compile it with --ced=full to extend a sequence");
  if (!engine_.backend().runsPrefillChunks())
    return failedPrecondition(std::string("extend: the ") + engine_.backend().name() +
                              " backend runs no continuation chunks");
  CallInfo call;
  call.phase = "extend";
  call.program = "prefill";
  call.startPos = position_;
  call.tokens = int64_t(ids.size());
  call.prefillLike = true; // ring rows and window rows: the call's plan
  return run("prefill", ids, std::move(call));
}

const CallPlan *Session::lastCallPlan(const std::string &program) const {
  const Plan &plan = engine_.plan();
  for (size_t p = 0; p < plan.programs.size(); ++p)
    if (plan.programs[p].name == program && memory_[p].called && !memory_[p].plans.empty())
      return memory_[p].plans.front().get();
  return nullptr;
}

Expected<const CallPlan *> Session::callPlanFor(size_t programIndex, const CallShape &shape) {
  const Plan &plan = engine_.plan();
  const Program &program = plan.programs[programIndex];
  std::vector<std::unique_ptr<CallPlan>> &plans = memory_[programIndex].plans;
  for (size_t i = 0; i < plans.size(); ++i) {
    if (!sameCallClass(plans[i]->shape, shape))
      continue;
    std::rotate(plans.begin(), plans.begin() + ptrdiff_t(i), plans.begin() + ptrdiff_t(i) + 1);
    CallPlan &hit = *plans.front();
    ++planStats_.plansReused;
    if (hit.shape.startPos != shape.startPos) {
      const uint64_t placements = hit.hostPlacements;
      if (Status s = resolveStart(hit, plan, program, shape.startPos, traits_); !s)
        return s;
      ++planStats_.startsResolved;
      planStats_.hostPlacements += hit.hostPlacements - placements;
    }
    return &hit;
  }
  Expected<CallPlan> made = planCall(plan, program, shape, traits_);
  if (!made)
    return made.status();
  ++planStats_.plansMade;
  planStats_.hostPlacements += made->hostPlacements;
  plans.insert(plans.begin(), std::make_unique<CallPlan>(std::move(made.value())));
  if (plans.size() > kCallPlansPerProgram)
    plans.pop_back(); // the least recently used
  return plans.front().get();
}

namespace {

/// One call's run of its CallPlan's steps (Session::run): the tensors of
/// every slot, the observed live bytes, the observer and the backend.
class CallRun {
public:
  CallRun(const Plan &plan, const Program &program, const CallPlan &callPlan,
          const CallInfo &call, std::vector<HostTensor *> values, bool zeroArena,
          Backend &backend, BackendSession &session, SessionObserver *observer,
          SessionMemoryStats &stats)
      : plan_(plan), program_(program),
        programIndex_(size_t(&program - plan.programs.data())), cp_(callPlan), call_(call),
        values_(std::move(values)), zeroArena_(zeroArena), backend_(backend), session_(session),
        observer_(observer), stats_(stats),
        syncForObserver_(observer && backend.deviceResident()),
        allocated_(program.values.size(), 0) {
    replayCall_ = call;
    static_cast<CallGeometry &>(replayCall_) = callPlan.replay;
  }

  std::span<HostTensor *const> values() const { return values_; }
  HostTensor &value(size_t slot) { return *values_[slot]; }
  /// The launch a failure is reported at (Session::failure_).
  size_t at() const { return at_; }

  /// Zeroes what lives from the start and counts the inputs as live.
  void start() {
    if (zeroArena_)
      for (int64_t v : cp_.zeroAtStart)
        zero(*values_[size_t(v)]);
    for (int64_t v : program_.inputs)
      if (isActivation(v) && !allocated_[size_t(v)]) {
        allocated_[size_t(v)] = 1;
        liveBytes_ += values_[size_t(v)]->byteSize();
      }
    livePeak_ = liveBytes_;
    for (int64_t v : program_.inputs) // inputs no launch reads die at once
      if (isActivation(v) && allocated_[size_t(v)] == 1 && cp_.lastUse[size_t(v)] < 0) {
        allocated_[size_t(v)] = 2;
        liveBytes_ -= values_[size_t(v)]->byteSize();
      }
    stats_.observedPeakBytes = livePeak_;
  }

  /// The steps, from the first (or none: the backend replayed the program),
  /// in `order` when the backend gives one (Backend::issueOrder).
  Status runSteps(bool replayedByBackend, std::span<const int64_t> order) {
    if (replayedByBackend) {
      at_ = program_.launches.size();
      return Status::ok();
    }
    if (order.empty()) {
      for (const CallStep &step : cp_.steps)
        if (Status s = runStep(step); !s)
          return s;
      return Status::ok();
    }
    std::vector<uint8_t> seen(cp_.steps.size(), 0);
    for (int64_t i : order)
      if (i < 0 || size_t(i) >= seen.size() || seen[size_t(i)]++)
        return internalError("the backend's issue order is no permutation of the call's " +
                             std::to_string(cp_.steps.size()) + " steps (step " +
                             std::to_string(i) + ")");
    if (order.size() != cp_.steps.size())
      return internalError("the backend's issue order has " + std::to_string(order.size()) +
                           " steps, the call " + std::to_string(cp_.steps.size()));
    for (int64_t i : order)
      if (Status s = runStep(cp_.steps[size_t(i)]); !s)
        return s;
    return Status::ok();
  }

private:
  bool isActivation(int64_t v) const {
    const ValueKind kind = program_.values[size_t(v)].kind;
    return kind == ValueKind::Input || kind == ValueKind::Activation;
  }
  static void zero(HostTensor &t) {
    if (t.byteSize())
      std::memset(t.bytes(), 0, t.byteSize());
  }
  const CallInfo &infoOf(const CallStep &step) const { return step.replay ? replayCall_ : call_; }
  TensorRef refOf(int64_t slot) const { return TensorRef::ofSlot(plan_, programIndex_, size_t(slot)); }

  /// Launch k's values are born: zeroed (arena) and counted live.
  void born(size_t k) {
    if (zeroArena_)
      for (int64_t v : cp_.zeroBefore[k])
        zero(*values_[size_t(v)]);
    for (int64_t v : program_.launches[k].outputs)
      if (isActivation(v) && !allocated_[size_t(v)]) {
        allocated_[size_t(v)] = 1;
        liveBytes_ += values_[size_t(v)]->byteSize();
      }
    livePeak_ = std::max(livePeak_, liveBytes_);
    stats_.observedPeakBytes = livePeak_;
  }
  void retire(size_t k) {
    for (int64_t v : cp_.dieAfter[k])
      if (allocated_[size_t(v)] == 1) {
        allocated_[size_t(v)] = 2;
        liveBytes_ -= values_[size_t(v)]->byteSize();
      }
  }

  /// The context of launch k on the call's whole tensors.
  LaunchContext contextOf(size_t k, const CallInfo &info) const {
    const Launch &at = program_.launches[k];
    LaunchContext context{plan_, program_, at, plan_.kernels[size_t(at.kernel)], info, {}, {}, {}, {},
                          &call_, &session_};
    for (int64_t v : at.inputs) {
      context.inputs.push_back(values_[size_t(v)]);
      context.inputSlots.push_back(&program_.values[size_t(v)]);
    }
    for (int64_t v : at.outputs) {
      context.outputs.push_back(values_[size_t(v)]);
      context.outputSlots.push_back(&program_.values[size_t(v)]);
    }
    return context;
  }
  Status launchError(size_t k, const Status &status) const {
    const Launch &at = program_.launches[k];
    return status.withContext(program_.name + " launch " + std::to_string(k) + " (" +
                              plan_.kernels[size_t(at.kernel)].name + ", layer " +
                              std::to_string(at.layer) + "): ");
  }

  Status runStep(const CallStep &step) {
    const CallInfo &info = infoOf(step);
    at_ = step.first;
    switch (step.kind) {
    case CallStep::Kind::SkipReplay: // its slots stay zero and unread; its boundary is not reached
      for (size_t k = step.first; k < step.end; ++k)
        retire(k);
      return Status::ok();
    case CallStep::Kind::Launch: {
      born(step.first);
      LaunchContext context = contextOf(step.first, info);
      if (Status s = backend_.launch(context); !s)
        return launchError(step.first, s);
      break;
    }
    case CallStep::Kind::NativeFusion: {
      for (size_t k = step.first; k < step.end; ++k)
        born(k);
      std::vector<LaunchContext> contexts;
      contexts.reserve(step.end - step.first);
      for (size_t k = step.first; k < step.end; ++k)
        contexts.push_back(contextOf(k, info));
      if (Status s = backend_.launchFusion(contexts); !s)
        return launchError(step.first, s);
      break;
    }
    case CallStep::Kind::RowTiles:
      for (size_t k = step.first; k < step.end; ++k)
        born(k);
      if (Status s = runRowTiles(step, info); !s)
        return s;
      break;
    }
    // Observers see every launch's outputs whole, then the boundaries.
    for (size_t k = step.first; k < step.end; ++k) {
      at_ = k;
      if (Status s = observe(k, info); !s)
        return s;
      retire(k);
    }
    return Status::ok();
  }

  Status observe(size_t k, const CallInfo &info) {
    if (observer_) {
      LaunchContext context = contextOf(k, info);
      if (syncForObserver_)
        for (size_t i = 0; i < context.outputs.size(); ++i)
          if (Status s = backend_.toHost(&session_, refOf(program_.launches[k].outputs[i]),
                                         *context.outputs[i]);
              !s)
            return s;
      observer_->afterLaunch(info, program_, context.launch, context.kernel,
                             std::span<const HostTensor *const>(context.outputs.data(),
                                                                context.outputs.size()));
    }
    if (!observer_ || !plan_.model.layerBoundaries)
      return Status::ok();
    for (size_t index : cp_.boundariesAfter[k]) {
      const LayerBoundary &b = program_.boundaries[index];
      HostTensor &stream = *values_[size_t(b.stream)], &mix = *values_[size_t(b.mix)];
      if (Status s = observer_->atBoundary(call_, b.layer, stream, mix); !s)
        return s;
      if (syncForObserver_) {
        if (Status s = backend_.toDevice(&session_, refOf(b.stream), stream); !s)
          return s;
        if (Status s = backend_.toDevice(&session_, refOf(b.mix), mix); !s)
          return s;
      }
    }
    return Status::ok();
  }

  /// Launches [first, end) of a row-tiled fusion, tile by tile: operands
  /// with symbolic rows are row views (an internal value holds one tile).
  Status runRowTiles(const CallStep &step, const CallInfo &base) {
    for (const RowTile &rowTile : step.tiles) {
      CallInfo tile = base;
      static_cast<CallGeometry &>(tile) = tileGeometry(base, rowTile);
      const int64_t r0 = rowTile.offset, rows = rowTile.rows;
      std::deque<HostTensor> views; // stable addresses for the contexts
      auto operand = [&](int64_t v) -> Expected<HostTensor *> {
        const ValueSlot &slot = program_.values[size_t(v)];
        HostTensor *whole = values_[size_t(v)];
        if (!isActivation(v) || slot.shape.empty() ||
            (slot.shape[0] != kTokens && slot.shape[0] != kReplayTokens))
          return whole;
        const int64_t from = cp_.tileRows[size_t(v)] > 0 ? 0 : r0; // an internal value holds one tile
        std::vector<int64_t> shape = whole->shape();
        if (shape.empty() || from + rows > shape[0])
          return internalError("row tile [" + std::to_string(r0) + ", " +
                               std::to_string(r0 + rows) + ") outside value '" + slot.name + "'");
        const size_t rowBytes = shape[0] > 0 ? whole->byteSize() / size_t(shape[0]) : 0;
        shape[0] = rows;
        HostTensor &view = views.emplace_back();
        if (Status st = view.viewChecked(whole->dtype(), shape,
                                         whole->bytes() + size_t(from) * rowBytes,
                                         whole->byteSize() - size_t(from) * rowBytes,
                                         /*alignment=*/std::max<size_t>(1, dtypeSize(whole->dtype())));
            !st)
          return st;
        return &view;
      };
      for (size_t k = step.first; k < step.end; ++k) {
        const Launch &launch = program_.launches[k];
        LaunchContext context{plan_, program_, launch, plan_.kernels[size_t(launch.kernel)], tile,
                              {}, {}, {}, {}, &call_, &session_};
        for (int64_t v : launch.inputs) {
          Expected<HostTensor *> t = operand(v);
          if (!t)
            return launchError(k, t.status());
          context.inputs.push_back(*t);
          context.inputSlots.push_back(&program_.values[size_t(v)]);
        }
        for (int64_t v : launch.outputs) {
          Expected<HostTensor *> t = operand(v);
          if (!t)
            return launchError(k, t.status());
          if (cp_.tileRows[size_t(v)] > 0) // a fresh tile of an internal value
            zero(**t);
          context.outputs.push_back(*t);
          context.outputSlots.push_back(&program_.values[size_t(v)]);
        }
        if (Status status = backend_.launch(context); !status)
          return launchError(k, status);
      }
    }
    return Status::ok();
  }

  const Plan &plan_;
  const Program &program_;
  size_t programIndex_;
  const CallPlan &cp_;
  const CallInfo &call_;
  CallInfo replayCall_;
  std::vector<HostTensor *> values_; ///< per slot
  bool zeroArena_;
  Backend &backend_;
  BackendSession &session_;
  SessionObserver *observer_;
  SessionMemoryStats &stats_;
  bool syncForObserver_;
  std::vector<char> allocated_; ///< 0: not yet, 1: live, 2: freed
  uint64_t liveBytes_ = 0, livePeak_ = 0;
  size_t at_ = 0;
};

} // namespace

Expected<HostTensor> Session::run(const std::string &programName, std::span<const int32_t> ids,
                                  CallInfo call, bool runReplay) {
  const Plan &plan = engine_.plan();
  const Program *program = plan.program(programName);
  if (!program)
    return failedPrecondition("the plan has no '" + programName + "' program");
  const size_t programIndex = size_t(program - plan.programs.data());
  const PlanFacts &model = plan.model;
  if (ids.empty())
    return invalidArgument(programName + ": no tokens");
  if (call.startPos + call.tokens > model.maxSeqLen)
    return invalidArgument(programName + ": position " + std::to_string(call.startPos + call.tokens) +
                           " exceeds the plan's max_seq_len " + std::to_string(model.maxSeqLen));
  if (Status s = checkVocabulary(ids, 0, model.vocabSize, programName); !s)
    return s;
  if (!stateError_)
    return stateError_;

  // The call's plan (cached per shape; CallPlan.h) and its geometry.
  CallShape shape;
  shape.tokens = call.tokens;
  shape.startPos = call.startPos;
  shape.prefillLike = call.prefillLike;
  shape.runReplay = runReplay || !memory_[programIndex].replays;
  shape.observed = observer_ != nullptr;
  Expected<const CallPlan *> planned = callPlanFor(programIndex, shape);
  if (!planned)
    return planned.status();
  const CallPlan &callPlan = **planned;
  static_cast<CallGeometry &>(call) = callPlan.call;

  // Every slot's tensor: weights, states, and the call's activations as
  // views into the program's host arena (or one allocation each).
  Backend &backend = engine_.backend();
  const bool useArena = engine_.options().arena;
  ProgramMemory &memory = memory_[programIndex];
  if (useArena && memory.arena.byteSize() < callPlan.host.peakBytes)
    if (Status s = memory.arena.resetChecked(DType::U8, {int64_t(callPlan.host.peakBytes)}); !s)
      return s.withContext(programName + ": activation arena: ");
  std::vector<HostTensor> &values = activations_[programIndex];
  values.resize(program->values.size());
  std::vector<HostTensor *> resolved(program->values.size(), nullptr);
  for (size_t i = 0; i < program->values.size(); ++i) {
    const ValueSlot &slot = program->values[i];
    switch (slot.kind) {
    case ValueKind::Weight:
      resolved[i] = const_cast<HostTensor *>(&engine_.weights()[size_t(slot.tensor)]);
      break;
    case ValueKind::State:
      resolved[i] = &states_[size_t(slot.state)];
      break;
    case ValueKind::Input:
    case ValueKind::Activation: {
      const ValueMemory &m = callPlan.host.values[i];
      Status s = useArena ? values[i].viewChecked(slot.dtype, m.shape,
                                                  memory.arena.bytes() + m.offset,
                                                  memory.arena.byteSize() - m.offset)
                          : values[i].resetChecked(slot.dtype, m.shape);
      if (!s)
        return s.withContext(programName + ": value slot " + std::to_string(i) + " ('" +
                             slot.name + "'): ");
      resolved[i] = &values[i];
      break;
    }
    }
  }
  CallRun runner(plan, *program, callPlan, call, std::move(resolved), useArena, backend,
                 *backendSession_, observer_, memory.stats);
  HostTensor &input = runner.value(callPlan.tokenInput);
  memory.called = true;
  memory.stats = SessionMemoryStats();
  memory.stats.arena = useArena;
  memory.stats.arenaBytes = useArena ? memory.arena.byteSize() : 0;
  memory.stats.plannedPeakBytes = callPlan.host.peakBytes;
  memory.stats.plannedSumBytes = callPlan.host.sumBytes;
  runner.start();
  std::copy(ids.begin(), ids.end(), input.data<int32_t>());

  // From here on launches update the states: a failure leaves them
  // half-updated, so the session refuses further calls until reset().
  auto failAt = [&](Status status) -> Status {
    failure_ = "the session failed at " + programName + " launch " + std::to_string(runner.at()) +
               "; call reset()";
    return status;
  };
  // A device backend lays the activations out in one device arena (the
  // plan's capacity layout: one for every decode call).
  BackendSession &session = *backendSession_;
  if (callPlan.hasDevicePlan)
    if (Status s = backend.bindArena(session, *program, callPlan.device); !s)
      return failAt(s.withContext(programName + ": device arena: "));
  if (Status s = backend.toDevice(&session,
                                  TensorRef::ofSlot(plan, programIndex, callPlan.tokenInput), input);
      !s)
    return failAt(s);
  // The backend may run the whole program itself (a replayed CUDA graph,
  // docs/runtime.md); only without an observer.
  Expected<bool> replayed =
      backend.beginLaunches(session, plan, callPlan, call, *program, runner.values(), !observer_);
  if (!replayed)
    return failAt(replayed.status());
  if (Status s = runner.runSteps(*replayed, *replayed ? std::span<const int64_t>()
                                                      : backend.issueOrder(session));
      !s)
    return failAt(s);
  if (Status s = backend.endLaunches(session, call, *program); !s)
    return failAt(s);
  position_ = call.startPos + call.tokens;
  if (call.decodeStep >= 0)
    ++decodeSteps_;
  HostTensor &out = runner.value(callPlan.logitsOutput);
  if (Status s = backend.toHost(&session,
                                TensorRef::ofSlot(plan, programIndex, callPlan.logitsOutput), out);
      !s)
    return s;
  if (out.dtype() != DType::F32 || out.shape().size() != 2)
    return internalError(programName + ": output 0 is not F32 of rank 2");
  // Only an activation of this call may be moved out; a weight or a state
  // output is copied (never move out of the engine's weights or the states).
  if (program->values[callPlan.logitsOutput].kind != ValueKind::Activation || out.isView())
    return HostTensor(out); // an arena view is copied: the arena is reused
  HostTensor logits = std::move(out);
  return logits;
}

} // namespace dsc::runtime
