//===- Engine.cpp - Engine and Session -------------------------------------===//
//
// The Session sizes every value slot of a program for the call's token count
// (planMemory, MemoryPlan.h: symbolic dims resolved by resolveDim), lays the
// activations out as views into one host arena per program (or, with
// EngineOptions::arena = false, one allocation per slot), runs the launches in
// order through the backend, calls the observer, and advances the position.
// A value is zeroed right before its first writing launch (inputs before the
// first launch), so every launch sees what a fresh zeroed slot would hold.
// States are zero-initialised except compressor scores (-inf, reference-spec
// §9.4) and the Engram history (-1 = nothing yet).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/PlanFile.h"
#include "dsc/runtime/StateLayout.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>

namespace dsc::runtime {

namespace {

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
    return createCpuBackend();
  if (options.backend == "cuda") {
    Expected<std::unique_ptr<Backend>> cuda = createCudaBackend();
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
  Expected<PlanModel> plan = readPlanFile(planPath);
  if (!plan)
    return notBackend(plan.status());
  Expected<std::unique_ptr<Engine>> engine =
      bind(std::move(backend.value()), std::move(plan.value()), checkpointPath);
  if (engine)
    (*engine)->options_ = std::move(options);
  return engine;
}

Expected<std::unique_ptr<Engine>> Engine::create(PlanModel plan, const std::string &checkpointPath,
                                                 EngineOptions options) {
  Expected<std::unique_ptr<Backend>> backend = makeBackend(options);
  if (!backend)
    return backend.status();
  Expected<std::unique_ptr<Engine>> engine =
      bind(std::move(backend.value()), std::move(plan), checkpointPath);
  if (engine)
    (*engine)->options_ = std::move(options);
  return engine;
}

Expected<std::unique_ptr<Engine>> Engine::bind(std::unique_ptr<Backend> backend, PlanModel plan,
                                               const std::string &checkpointPath) {
  if (Status status = verifyPlan(plan); !status)
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
    if (Status status = engine->backend_->toDevice(tensor); !status)
      return status.withContext("uploading '" + binding.name + "': ");
  }
  engine->plan_ = std::move(plan);
  return engine;
}

Engine::~Engine() {
  // Free the weights' device twins before the backend goes.
  if (backend_)
    for (const HostTensor &t : weights_)
      backend_->release(t);
}

std::unique_ptr<Session> Engine::newSession() { return std::make_unique<Session>(*this); }

Session::Session(Engine &engine) : engine_(engine) {
  activations_.resize(engine_.plan().programs.size());
  memory_.resize(engine_.plan().programs.size());
  reset();
}

Session::~Session() {
  // Device twins of this session's tensors are freed, so that a later
  // tensor at a reused address never inherits a stale buffer.
  Backend &backend = engine_.backend();
  for (const HostTensor &t : states_)
    backend.release(t);
  for (const std::vector<HostTensor> &program : activations_)
    for (const HostTensor &t : program)
      backend.release(t);
}

void Session::reset() {
  const PlanModel &plan = engine_.plan();
  position_ = 0;
  decodeSteps_ = 0;
  failure_.clear();
  stateError_ = Status::ok();
  auto keepFirst = [&](Status s) {
    if (stateError_ && !s)
      stateError_ = std::move(s);
  };
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
    keepFirst(engine_.backend().toDevice(t).withContext("uploading state '" + s.name + "': "));
  }
}

Status Session::syncStates() {
  for (HostTensor &t : states_)
    if (Status s = engine_.backend().toHost(t); !s)
      return s;
  return Status::ok();
}

const HostTensor *Session::value(const std::string &program, int64_t slot) const {
  const PlanModel &plan = engine_.plan();
  for (size_t p = 0; p < plan.programs.size(); ++p)
    if (plan.programs[p].name == program && slot >= 0 &&
        size_t(slot) < activations_[p].size())
      return &activations_[p][slot];
  return nullptr;
}

const SessionMemoryStats *Session::memoryStats(const std::string &program) const {
  const PlanModel &plan = engine_.plan();
  for (size_t p = 0; p < plan.programs.size(); ++p)
    if (plan.programs[p].name == program && memory_[p].called)
      return &memory_[p].stats;
  return nullptr;
}

Expected<HostTensor> Session::prefill(std::span<const int32_t> ids) {
  if (!failure_.empty())
    return failedPrecondition(failure_);
  if (position_ != 0)
    return failedPrecondition("prefill starts a sequence: call reset() first (position is " +
                              std::to_string(position_) + ")");
  const PlanModelFacts &model = engine_.plan().model;
  if (int64_t(ids.size()) > model.maxSeqLen)
    return invalidArgument("prefill: position " + std::to_string(ids.size()) +
                           " exceeds the plan's max_seq_len " + std::to_string(model.maxSeqLen));
  // Chunked prefill (PlanModelFacts::prefillChunk): each chunk continues the
  // states of the one before; a continuation chunk's window also reads the
  // ring's last rows; only the last chunk runs a CED plan's replayed
  // launches (it holds >= 2R' rows) and its logits are the result.
  const std::vector<PrefillChunk> chunks =
      prefillChunks(int64_t(ids.size()),
                    engine_.backend().runsPrefillChunks() ? model.prefillChunk : 0);
  // What a chunk would reject is checked for the whole prompt first, so that
  // a rejected prefill leaves the session as it was.
  if (chunks.size() > 1)
    for (size_t i = 0; i < ids.size(); ++i)
      if (ids[i] < 0 || ids[i] >= model.vocabSize)
        return invalidArgument("prefill: token " + std::to_string(i) + " has id " +
                               std::to_string(ids[i]) + ", outside the vocabulary [0, " +
                               std::to_string(model.vocabSize) + ")");
  Expected<HostTensor> logits = failedPrecondition("prefill: no chunk ran");
  for (size_t i = 0; i < chunks.size(); ++i) {
    const PrefillChunk &chunk = chunks[i];
    CallInfo call;
    call.phase = "prefill";
    call.program = "prefill";
    call.startPos = chunk.startPos;
    call.tokens = chunk.tokens;
    call.chunk = true;
    call.ringRows = std::min(std::max<int64_t>(model.windowSize - 1, 0), chunk.startPos);
    const bool last = i + 1 == chunks.size();
    logits = run("prefill", ids.subspan(size_t(chunk.startPos), size_t(chunk.tokens)),
                 std::move(call), /*runReplay=*/last);
    if (!logits) {
      // Earlier chunks changed the states: the sequence is half prefilled.
      if (i > 0 && failure_.empty())
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

Expected<HostTensor> Session::run(const std::string &programName, std::span<const int32_t> ids,
                                  CallInfo call, bool runReplay) {
  const PlanModel &plan = engine_.plan();
  const Program *program = plan.program(programName);
  if (!program)
    return failedPrecondition("the plan has no '" + programName + "' program");
  size_t programIndex = size_t(program - plan.programs.data());
  const PlanModelFacts &model = plan.model;
  if (ids.empty())
    return invalidArgument(programName + ": no tokens");
  if (call.startPos + call.tokens > model.maxSeqLen)
    return invalidArgument(programName + ": position " + std::to_string(call.startPos + call.tokens) +
                           " exceeds the plan's max_seq_len " + std::to_string(model.maxSeqLen));
  for (size_t i = 0; i < ids.size(); ++i)
    if (ids[i] < 0 || ids[i] >= model.vocabSize)
      return invalidArgument(programName + ": token " + std::to_string(i) + " has id " +
                             std::to_string(ids[i]) + ", outside the vocabulary [0, " +
                             std::to_string(model.vocabSize) + ")");

  if (!stateError_)
    return stateError_;
  if (program->outputs.empty())
    return internalError(programName + ": the program has no outputs");
  int64_t outputSlot = program->outputs.front();
  if (outputSlot < 0 || size_t(outputSlot) >= program->values.size())
    return internalError(programName + ": output 0 is value " + std::to_string(outputSlot) +
                         ", outside the program's " + std::to_string(program->values.size()) +
                         " values");
  {
    const ValueSlot &out = program->values[outputSlot];
    if (out.dtype != DType::F32 || out.shape.size() != 2)
      return failedPrecondition(programName + ": output 0 (value " + std::to_string(outputSlot) +
                                " '" + out.name + "') is " + dtypeName(out.dtype) + " of rank " +
                                std::to_string(out.shape.size()) +
                                ", expected F32 of rank 2 (the logits)");
  }
  if (program->inputs.empty())
    return internalError(programName + ": the program takes no token ids");
  Backend &backend = engine_.backend();
  bool syncForObserver = observer_ && backend.deviceResident();
  // Size and place every activation of this call (validates every shape).
  const bool rowTiles = backend.runsRowTiles();
  Expected<MemoryPlan> memoryPlan =
      planMemory(plan, *program, call.tokens, call.startPos, /*capacity=*/false, rowTiles);
  if (!memoryPlan)
    return memoryPlan.status();
  const bool useArena = engine_.options().arena;
  ProgramMemory &memory = memory_[programIndex];
  if (useArena && memory.arena.byteSize() < memoryPlan->peakBytes)
    if (Status s = memory.arena.resetChecked(DType::U8, {int64_t(memoryPlan->peakBytes)}); !s)
      return s.withContext(programName + ": activation arena: ");
  std::vector<HostTensor> &values = activations_[programIndex];
  values.resize(program->values.size());
  std::vector<HostTensor *> resolved(program->values.size(), nullptr);
  for (size_t i = 0; i < program->values.size(); ++i) {
    const ValueSlot &slot = program->values[i];
    std::string where = programName + ": value slot " + std::to_string(i) + " ('" + slot.name + "'): ";
    switch (slot.kind) {
    case ValueKind::Weight:
      if (slot.tensor < 0 || size_t(slot.tensor) >= engine_.weights().size())
        return internalError(where + "weight " + std::to_string(slot.tensor) + " does not exist");
      resolved[i] = const_cast<HostTensor *>(&engine_.weights()[slot.tensor]);
      break;
    case ValueKind::State:
      if (slot.state < 0 || size_t(slot.state) >= states_.size())
        return internalError(where + "state " + std::to_string(slot.state) + " does not exist");
      resolved[i] = &states_[slot.state];
      break;
    case ValueKind::Input:
    case ValueKind::Activation: {
      const ValueMemory &m = memoryPlan->values[i];
      Status s = useArena ? values[i].viewChecked(slot.dtype, m.shape,
                                                  memory.arena.bytes() + m.offset,
                                                  memory.arena.byteSize() - m.offset)
                          : values[i].resetChecked(slot.dtype, m.shape);
      if (!s)
        return s.withContext(where);
      resolved[i] = &values[i];
      break;
    }
    }
  }
  for (int64_t v : program->inputs)
    if (v < 0 || size_t(v) >= resolved.size())
      return internalError(programName + ": input value " + std::to_string(v) + " does not exist");
  // Arena views are zeroed when they come alive: inputs (and untouched
  // slots) now, the others right before their first writing launch.
  std::vector<std::vector<HostTensor *>> bornAt(program->launches.size());
  if (useArena)
    for (size_t i = 0; i < program->values.size(); ++i) {
      const ValueMemory &m = memoryPlan->values[i];
      if (!m.planned || !resolved[i]->byteSize())
        continue;
      if (m.first < 0)
        std::memset(resolved[i]->bytes(), 0, resolved[i]->byteSize());
      else
        bornAt[size_t(m.first)].push_back(resolved[i]);
    }
  HostTensor &input = *resolved[program->inputs.front()];
  if (input.dtype() != DType::I32 || input.numElements() != int64_t(ids.size()))
    return internalError(programName + ": token input slot does not match the call");
  std::copy(ids.begin(), ids.end(), input.data<int32_t>());

  // Observed live bytes (independent of the planner's ranges): a slot is
  // allocated at its first write and freed after its last use.
  const bool boundariesObserved = observer_ && model.layerBoundaries;
  std::vector<int64_t> lastUse(program->values.size(), -1);
  std::vector<char> allocated(program->values.size(), 0);
  auto isActivation = [&](int64_t v) {
    return program->values[v].kind == ValueKind::Input ||
           program->values[v].kind == ValueKind::Activation;
  };
  for (size_t k = 0; k < program->launches.size(); ++k) {
    for (int64_t v : program->launches[k].inputs)
      lastUse[v] = int64_t(k);
    for (int64_t v : program->launches[k].outputs)
      lastUse[v] = int64_t(k);
  }
  if (boundariesObserved)
    for (const LayerBoundary &b : program->boundaries)
      for (int64_t v : {b.stream, b.mix})
        lastUse[v] = std::max(lastUse[v], b.afterLaunch);
  // A fusion is one launch (native, or its steps rerun per row tile): what
  // its steps touch lives to its end, as the planner assumes.
  for (const auto &[first, last] : fusionRanges(*program))
      for (int64_t k = first; k <= last; ++k)
        for (const std::vector<int64_t> *vs : {&program->launches[size_t(k)].inputs,
                                               &program->launches[size_t(k)].outputs})
          for (int64_t v : *vs)
            lastUse[v] = std::max(lastUse[v], last);
  for (int64_t v : program->outputs)
    lastUse[v] = int64_t(program->launches.size());
  uint64_t liveBytes = 0, livePeak = 0;
  for (int64_t v : program->inputs)
    if (isActivation(v) && !allocated[v]) {
      allocated[v] = 1;
      liveBytes += resolved[v]->byteSize();
    }
  livePeak = liveBytes;
  for (int64_t v : program->inputs) // inputs no launch reads die at once
    if (isActivation(v) && allocated[v] == 1 && lastUse[v] < 0) {
      allocated[v] = 2;
      liveBytes -= resolved[v]->byteSize();
    }
  memory.called = true;
  memory.stats = SessionMemoryStats();
  memory.stats.arena = useArena;
  memory.stats.arenaBytes = useArena ? memory.arena.byteSize() : 0;
  memory.stats.plannedPeakBytes = memoryPlan->peakBytes;
  memory.stats.plannedSumBytes = memoryPlan->sumBytes;
  memory.stats.observedPeakBytes = livePeak;

  // From here on launches update the states: a failure leaves them
  // half-updated, so the session refuses further calls until reset().
  size_t l = 0;
  auto failAt = [&](Status status) -> Status {
    failure_ = "the session failed at " + programName + " launch " + std::to_string(l) +
               "; call reset()";
    return status;
  };
  // A device backend lays the activations out in one device arena. Its plan
  // sizes every kCompressed* dim at capacity and, past position 0, is planned
  // at the last position (max_seq_len - S): one layout for every decode call,
  // so a captured decode graph keeps its addresses.
  if (backend.deviceResident()) {
    int64_t deviceStart = call.startPos == 0 ? 0 : model.maxSeqLen - call.tokens;
    if (!memory.haveDevicePlan || memory.devicePlan.tokens != call.tokens ||
        (memory.devicePlan.startPos == 0) != (deviceStart == 0)) {
      Expected<MemoryPlan> devicePlan =
          planMemory(plan, *program, call.tokens, deviceStart, /*capacity=*/true);
      if (!devicePlan)
        return devicePlan.status().withContext(programName + ": device arena: ");
      memory.devicePlan = std::move(devicePlan.value());
      memory.haveDevicePlan = true;
    }
    if (Status s = backend.bindArena(*program, memory.devicePlan,
                                     std::span<HostTensor *const>(resolved.data(), resolved.size()));
        !s)
      return failAt(s.withContext(programName + ": device arena: "));
  }
  {
    std::vector<HostTensor *> activations;
    for (size_t i = 0; i < program->values.size(); ++i)
      if (program->values[i].kind == ValueKind::Input ||
          program->values[i].kind == ValueKind::Activation)
        activations.push_back(resolved[i]);
    if (Status s = backend.beginCall(activations); !s)
      return failAt(s);
    if (Status s = backend.toDevice(input); !s)
      return failAt(s);
  }

  // The backend may run the whole program itself (a replayed CUDA graph,
  // docs/runtime.md); only without an observer.
  Expected<bool> replayed = backend.beginLaunches(
      plan, call, *program, std::span<HostTensor *const>(resolved.data(), resolved.size()),
      !observer_);
  if (!replayed)
    return failAt(replayed.status());
  if (*replayed)
    l = program->launches.size();
  size_t nextBoundary = 0;
  // CED replayed launches (Launch::replay) run on the last R' = min(R, S)
  // rows of the prefill, positions S - R' .. S - 1, in chunk mode.
  CallInfo replayCall = call;
  if (model.cedReplayTokens > 0) {
    int64_t rows = std::min(model.cedReplayTokens, call.tokens);
    replayCall.startPos = call.startPos + call.tokens - rows;
    replayCall.tokens = rows;
    replayCall.chunk = true;
    replayCall.ringRows = 0; // the replay's window starts at its first row
  }
  // The context of a launch on the call's whole tensors.
  auto contextOf = [&](const Launch &at, const CallInfo &info) {
    LaunchContext context{plan, *program, at, plan.kernels[at.kernel], info, {}, {}, {}, {}, &call};
    for (int64_t v : at.inputs) {
      context.inputs.push_back(resolved[v]);
      context.inputSlots.push_back(&program->values[v]);
    }
    for (int64_t v : at.outputs) {
      context.outputs.push_back(resolved[v]);
      context.outputSlots.push_back(&program->values[v]);
    }
    return context;
  };
  // Row-tiled fusions (Fusion::tileRows, the indexer) run all their steps
  // on one tile of rows at a time when the backend runs row tiles; their
  // internal values hold one tile (planMemory with rowTiles).
  const std::vector<int64_t> tiles =
      rowTiles ? rowTiledValues(*program) : std::vector<int64_t>(program->values.size(), 0);
  size_t tiledEnd = 0; // launches before it already ran in row tiles
  // Values freed after launch k: those whose last use is k.
  std::vector<std::vector<int64_t>> dieAt(program->launches.size());
  for (size_t v = 0; v < program->values.size(); ++v)
    if (lastUse[v] >= 0 && size_t(lastUse[v]) < program->launches.size())
      dieAt[size_t(lastUse[v])].push_back(int64_t(v));
  auto retireAt = [&](size_t k) {
    for (int64_t v : dieAt[k])
      if (isActivation(v) && allocated[v] == 1) {
        allocated[v] = 2;
        liveBytes -= resolved[v]->byteSize();
      }
  };
  auto bornAndAllocate = [&](size_t k) {
    for (HostTensor *t : bornAt[k])
      std::memset(t->bytes(), 0, t->byteSize());
    for (int64_t v : program->launches[k].outputs)
      if (isActivation(v) && !allocated[v]) {
        allocated[v] = 1;
        liveBytes += resolved[v]->byteSize();
      }
    livePeak = std::max(livePeak, liveBytes);
    memory.stats.observedPeakBytes = livePeak;
  };
  auto launchError = [&](size_t k, const Status &status) {
    const Launch &at = program->launches[k];
    return status.withContext(programName + " launch " + std::to_string(k) + " (" +
                              plan.kernels[at.kernel].name + ", layer " +
                              std::to_string(at.layer) + "): ");
  };
  // Runs launches [first, end) of a row-tiled fusion, tile by tile.
  auto runRowTiles = [&](size_t first, size_t end, const CallInfo &base) -> Status {
    const int64_t tileRows = program->fusions[size_t(program->launches[first].fusion)].tileRows;
    for (int64_t r0 = 0; r0 < base.tokens; r0 += tileRows) {
      const int64_t rows = std::min(tileRows, base.tokens - r0);
      CallInfo tile = base;
      tile.startPos = base.startPos + r0;
      tile.tokens = rows;
      tile.windowRows = base.chunk ? base.ringRows + base.tokens : model.windowSize;
      std::deque<HostTensor> views; // stable addresses for the contexts
      auto operand = [&](int64_t v) -> Expected<HostTensor *> {
        const ValueSlot &slot = program->values[v];
        HostTensor *whole = resolved[v];
        if (!isActivation(v) || slot.shape.empty() ||
            (slot.shape[0] != kTokens && slot.shape[0] != kReplayTokens))
          return whole;
        const int64_t from = tiles[v] > 0 ? 0 : r0; // an internal value holds one tile
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
      for (size_t k = first; k < end; ++k) {
        const Launch &step = program->launches[k];
        LaunchContext context{plan, *program, step, plan.kernels[step.kernel], tile, {}, {}, {}, {}, &call};
        for (int64_t v : step.inputs) {
          Expected<HostTensor *> t = operand(v);
          if (!t)
            return launchError(k, t.status());
          context.inputs.push_back(*t);
          context.inputSlots.push_back(&program->values[v]);
        }
        for (int64_t v : step.outputs) {
          Expected<HostTensor *> t = operand(v);
          if (!t)
            return launchError(k, t.status());
          if (tiles[v] > 0) // a fresh tile of an internal value
            std::memset((*t)->bytes(), 0, (*t)->byteSize());
          context.outputs.push_back(*t);
          context.outputSlots.push_back(&program->values[v]);
        }
        if (Status status = backend.launch(context); !status)
          return launchError(k, status);
      }
    }
    return Status::ok();
  };
  for (; l < program->launches.size(); ++l) {
    const Launch &launch = program->launches[l];
    // An earlier chunk of a chunked CED prefill: the replay is the last
    // chunk's (its slots stay zero and unread).
    if (launch.replay && !runReplay) {
      retireAt(l);
      while (nextBoundary < program->boundaries.size() &&
             program->boundaries[nextBoundary].afterLaunch == int64_t(l))
        ++nextBoundary; // a replayed layer's boundary: not reached in this chunk
      continue;
    }
    if (launch.replay && (model.cedReplayTokens <= 0 || !call.chunk))
      return failAt(internalError(programName + " launch " + std::to_string(l) +
                                  ": a replayed launch outside a CED prefill"));
    const CallInfo &launchCall = launch.replay ? replayCall : call;
    if (l >= tiledEnd && launch.fusion >= 0 && size_t(launch.fusion) < program->fusions.size() &&
        program->fusions[size_t(launch.fusion)].tileRows > 0 && rowTiles) {
      size_t end = l;
      while (end < program->launches.size() && program->launches[end].fusion == launch.fusion)
        ++end;
      for (size_t k = l; k < end; ++k)
        bornAndAllocate(k);
      if (Status status = runRowTiles(l, end, launchCall); !status)
        return failAt(status);
      tiledEnd = end;
    } else if (l >= tiledEnd && !observer_ && launch.fusion >= 0 &&
               size_t(launch.fusion) < program->fusions.size() &&
               (l == 0 || program->launches[l - 1].fusion != launch.fusion)) {
      // (With an observer attached, steps run one by one: it sees every
      // step's output, which a native kernel may never write.)
      // A fused kernel the backend runs as one kernel (Backend::runsFusion).
      size_t end = l;
      while (end < program->launches.size() && program->launches[end].fusion == launch.fusion)
        ++end;
      if (backend.runsFusion(plan, *program, l, end - l)) {
        for (size_t k = l; k < end; ++k)
          bornAndAllocate(k);
        std::vector<LaunchContext> steps;
        steps.reserve(end - l);
        for (size_t k = l; k < end; ++k)
          steps.push_back(contextOf(program->launches[k], launchCall));
        if (Status status = backend.launchFusion(steps); !status)
          return failAt(launchError(l, status));
        tiledEnd = end;
      } else {
        bornAndAllocate(l);
      }
    } else if (l >= tiledEnd) {
      bornAndAllocate(l);
    }
    LaunchContext context = contextOf(launch, launchCall);
    if (l >= tiledEnd)
      if (Status status = backend.launch(context); !status)
        return failAt(launchError(l, status));
    if (syncForObserver)
      for (HostTensor *out : context.outputs)
        if (Status s = backend.toHost(*out); !s)
          return failAt(s);
    if (observer_)
      observer_->afterLaunch(launchCall, *program, launch, context.kernel,
                             std::span<const HostTensor *const>(context.outputs.data(),
                                                                context.outputs.size()));
    while (nextBoundary < program->boundaries.size() &&
           program->boundaries[nextBoundary].afterLaunch == int64_t(l)) {
      const LayerBoundary &b = program->boundaries[nextBoundary++];
      if (observer_ && model.layerBoundaries) {
        if (Status status = observer_->atBoundary(call, b.layer, *resolved[b.stream], *resolved[b.mix]);
            !status)
          return failAt(status);
        if (syncForObserver) {
          if (Status s = backend.toDevice(*resolved[b.stream]); !s)
            return failAt(s);
          if (Status s = backend.toDevice(*resolved[b.mix]); !s)
            return failAt(s);
        }
      }
    }
    retireAt(l);
  }
  if (Status s = backend.endLaunches(call, *program); !s)
    return failAt(s);
  position_ = call.startPos + call.tokens;
  if (call.decodeStep >= 0)
    ++decodeSteps_;
  HostTensor &out = *resolved[outputSlot];
  if (Status s = backend.toHost(out); !s)
    return s;
  if (out.dtype() != DType::F32 || out.shape().size() != 2)
    return internalError(programName + ": output 0 is not F32 of rank 2");
  // Only an activation of this call may be moved out; a weight or a state
  // output is copied (never move out of the engine's weights or the states).
  if (program->values[outputSlot].kind != ValueKind::Activation || out.isView())
    return HostTensor(out); // an arena view is copied: the arena is reused
  HostTensor logits = std::move(out);
  return logits;
}

} // namespace dsc::runtime
