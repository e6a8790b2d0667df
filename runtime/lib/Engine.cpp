//===- Engine.cpp - Engine and Session -------------------------------------===//
//
// The Session allocates every value slot of a program for the call's token
// count (symbolic dims resolved by resolveDim), runs the launches in order
// through the backend, calls the observer, and advances the position.
// States are zero-initialised except compressor scores (-inf, reference-spec
// §9.4) and the Engram history (-1 = nothing yet).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Checkpoint.h"
#include "dsc/runtime/PlanFile.h"
#include "dsc/runtime/StateLayout.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace dsc::runtime {

int64_t resolveDim(int64_t dim, int64_t ratio, int64_t startPos, int64_t tokens) {
  switch (dim) {
  case kTokens:
    return tokens;
  case kCompressedTokens:
    return (startPos + tokens) / ratio - startPos / ratio;
  case kCompressedLength:
    return (startPos + tokens) / ratio;
  case kWindowRows:
    return startPos == 0 ? tokens : ratio;
  default:
    return dim;
  }
}

Expected<std::unique_ptr<Engine>> Engine::load(const std::string &planPath,
                                               const std::string &checkpointPath,
                                               EngineOptions options) {
  Expected<PlanModel> plan = readPlanFile(planPath);
  if (!plan)
    return plan.status();
  return create(std::move(plan.value()), checkpointPath, std::move(options));
}

Expected<std::unique_ptr<Engine>> Engine::create(PlanModel plan, const std::string &checkpointPath,
                                                 EngineOptions options) {
  if (Status status = verifyPlan(plan); !status)
    return status;
  std::unique_ptr<Engine> engine(new Engine());
  if (options.backend == "cpu") {
    engine->backend_ = createCpuBackend();
  } else if (options.backend == "cuda") {
    Expected<std::unique_ptr<Backend>> cuda = createCudaBackend();
    if (!cuda)
      return cuda.status();
    engine->backend_ = std::move(cuda.value());
  } else {
    return invalidArgument("unknown backend '" + options.backend + "' (available: cpu, cuda)");
  }
  if (Status status = engine->backend_->check(plan); !status)
    return status;

  Expected<Checkpoint> checkpoint = Checkpoint::open(checkpointPath);
  if (!checkpoint)
    return checkpoint.status();
  if (Status status = checkpoint->check(plan.tensors); !status)
    return status;
  engine->weights_.resize(plan.tensors.size());
  for (size_t i = 0; i < plan.tensors.size(); ++i) {
    const TensorBinding &binding = plan.tensors[i];
    Expected<std::vector<std::byte>> bytes = checkpoint->gather(binding);
    if (!bytes)
      return bytes.status();
    HostTensor &tensor = engine->weights_[i];
    tensor.reset(binding.dtype, binding.shape);
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

Engine::~Engine() = default;

std::unique_ptr<Session> Engine::newSession() { return std::make_unique<Session>(*this); }

Session::Session(Engine &engine) : engine_(engine) {
  activations_.resize(engine_.plan().programs.size());
  reset();
}

Session::~Session() = default;

void Session::reset() {
  const PlanModel &plan = engine_.plan();
  position_ = 0;
  decodeSteps_ = 0;
  states_.resize(plan.states.size());
  for (size_t i = 0; i < plan.states.size(); ++i) {
    const StateBuffer &s = plan.states[i];
    HostTensor &t = states_[i];
    switch (s.kind) {
    case StateKind::WindowRing:
    case StateKind::DSparkRing:
    case StateKind::MainKv:
    case StateKind::IndexKeys:
      t.reset(DType::U8, {stateBytes(s)});
      break;
    case StateKind::CompressorState: {
      // [2, ratio, dim]: kv (zeros) then score (-inf).
      int64_t dim = 0;
      for (const Program &p : plan.programs)
        for (const ValueSlot &v : p.values)
          if (v.state == int64_t(i) && v.shape.size() == 3)
            dim = v.shape[2];
      t.reset(DType::F32, {2, s.ratio, dim});
      float *score = t.data<float>() + s.ratio * dim;
      std::fill(score, score + s.ratio * dim, -std::numeric_limits<float>::infinity());
      break;
    }
    case StateKind::EngramHistory:
      t.reset(DType::I64, {s.capacity});
      std::fill(t.data<int64_t>(), t.data<int64_t>() + s.capacity, int64_t(-1));
      break;
    }
    stateError_ = engine_.backend().toDevice(t);
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

Expected<HostTensor> Session::prefill(std::span<const int32_t> ids) {
  if (position_ != 0)
    return failedPrecondition("prefill starts a sequence: call reset() first (position is " +
                              std::to_string(position_) + ")");
  CallInfo call;
  call.phase = "prefill";
  call.program = "prefill";
  call.startPos = 0;
  call.tokens = int64_t(ids.size());
  return run("prefill", ids, std::move(call));
}

Expected<HostTensor> Session::decode(int32_t id) {
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
                                  CallInfo call) {
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
  Backend &backend = engine_.backend();
  bool syncForObserver = observer_ && backend.deviceResident();
  // Allocate every slot for this call.
  std::vector<HostTensor> &values = activations_[programIndex];
  values.resize(program->values.size());
  std::vector<HostTensor *> resolved(program->values.size(), nullptr);
  for (size_t i = 0; i < program->values.size(); ++i) {
    const ValueSlot &slot = program->values[i];
    switch (slot.kind) {
    case ValueKind::Weight:
      resolved[i] = const_cast<HostTensor *>(&engine_.weights()[slot.tensor]);
      break;
    case ValueKind::State:
      resolved[i] = &states_[slot.state];
      break;
    case ValueKind::Input:
    case ValueKind::Activation: {
      std::vector<int64_t> shape = slot.shape;
      for (int64_t &d : shape)
        d = resolveDim(d, slot.ratio, call.startPos, call.tokens);
      values[i].reset(slot.dtype, std::move(shape));
      resolved[i] = &values[i];
      break;
    }
    }
  }
  if (program->inputs.empty())
    return internalError(programName + ": the program takes no token ids");
  HostTensor &input = *resolved[program->inputs.front()];
  if (input.dtype() != DType::I32 || input.numElements() != int64_t(ids.size()))
    return internalError(programName + ": token input slot does not match the call");
  std::copy(ids.begin(), ids.end(), input.data<int32_t>());
  {
    std::vector<HostTensor *> activations;
    for (size_t i = 0; i < program->values.size(); ++i)
      if (program->values[i].kind == ValueKind::Input ||
          program->values[i].kind == ValueKind::Activation)
        activations.push_back(resolved[i]);
    if (Status s = backend.beginCall(activations); !s)
      return s;
    if (Status s = backend.toDevice(input); !s)
      return s;
  }

  size_t nextBoundary = 0;
  for (size_t l = 0; l < program->launches.size(); ++l) {
    const Launch &launch = program->launches[l];
    LaunchContext context{plan, *program, launch, plan.kernels[launch.kernel], call, {}, {}, {}, {}};
    for (int64_t v : launch.inputs) {
      context.inputs.push_back(resolved[v]);
      context.inputSlots.push_back(&program->values[v]);
    }
    for (int64_t v : launch.outputs) {
      context.outputs.push_back(resolved[v]);
      context.outputSlots.push_back(&program->values[v]);
    }
    if (Status status = backend.launch(context); !status)
      return status.withContext(programName + " launch " + std::to_string(l) + " (" +
                                context.kernel.name + ", layer " + std::to_string(launch.layer) +
                                "): ");
    if (syncForObserver)
      for (HostTensor *out : context.outputs)
        if (Status s = backend.toHost(*out); !s)
          return s;
    if (observer_)
      observer_->afterLaunch(call, *program, launch, context.kernel,
                             std::span<const HostTensor *const>(context.outputs.data(),
                                                                context.outputs.size()));
    while (nextBoundary < program->boundaries.size() &&
           program->boundaries[nextBoundary].afterLaunch == int64_t(l)) {
      const LayerBoundary &b = program->boundaries[nextBoundary++];
      if (observer_ && model.layerBoundaries) {
        if (Status status = observer_->atBoundary(call, b.layer, *resolved[b.stream], *resolved[b.mix]);
            !status)
          return status;
        if (syncForObserver) {
          if (Status s = backend.toDevice(*resolved[b.stream]); !s)
            return s;
          if (Status s = backend.toDevice(*resolved[b.mix]); !s)
            return s;
        }
      }
    }
  }
  position_ = call.startPos + call.tokens;
  if (call.decodeStep >= 0)
    ++decodeSteps_;
  if (program->outputs.empty())
    return internalError(programName + ": the program has no outputs");
  if (Status s = backend.toHost(*resolved[program->outputs.front()]); !s)
    return s;
  HostTensor logits = std::move(*resolved[program->outputs.front()]);
  values[program->outputs.front()] = HostTensor();
  return logits;
}

} // namespace dsc::runtime
