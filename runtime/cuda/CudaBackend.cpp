//===- CudaBackend.cpp - runtime::Backend on the CUDA HAL -------------------===//
//
// What: the CUDA backend's entry points. Each takes the Engine-wide mutex,
// makes the primary context current on the calling thread and delegates:
// resources shared by the Engine's Sessions (device, stream, modules,
// constants, weights' device copies) live in CudaEngineState; everything of
// one Session (states' device copies, one activation arena per program, call
// states, scratch per launch site, graphs per (program, call shape)) in its
// CudaSession, which the Session owns (openSession) and destroys with itself.
// Launches are bound to device memory by BoundLaunch (CudaLaunch.h) and run
// by the adapters in CudaAdapters*.cpp. Device copies are found by plan
// indices (TensorRef), never by host addresses.
//
// Calls: weights are uploaded once by the Engine, states when a Session
// resets, token ids per call. A call's Input and Activation values live in
// their session's arena for the program (bindArena, the call's capacity
// plan, MemoryPlan.h): decode's layout is the same for every call, so its
// addresses never change; prefill's is re-planned per prompt length and
// grown when it needs more. Each value is zeroed (async memset on the stream,
// its whole capacity) right before its first writing launch, inputs at the
// call's first launch. The call state {startPos, tokens, prefill-like ? 1 +
// ring rows : 0} is written before every call (beginLaunches); CED replayed
// launches read a second one. Kernels read p from it, grids are sized by
// capacity, scratch persists per launch site and constants are uploaded
// once, so decode's device addresses are fixed.
//
// Graphs: with no observer (graphable), a session's first decode of a call
// shape runs eagerly, the second is captured (hal::GraphCapture) and every
// later one replays the graph after the call state and token id are written
// on the stream (GraphCache.h). CudaOptions::graphs = false (or
// syncEachLaunch) disables graphs; syncEachLaunch synchronises after every
// launch so that a fault names its launch. The backend reads no environment
// variable (the tools map DSC_CUDA_* onto CudaOptions).
//
// Threading: Sessions of one Engine may run on different threads; every
// entry point (and a CudaSession's destructor) takes the mutex, so launches
// of concurrent sessions are serialised on the one stream, and while one
// session captures a graph the others wait for the capture to end.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaBackend.h"
#include "runtime/cuda/CudaLaunch.h"
#include "runtime/cuda/CudaSession.h"

#include <algorithm>
#include <memory>

namespace dsc::cuda {
namespace {

using runtime::Expected;
using runtime::HostTensor;
using runtime::TensorRef;

class CudaBackend final : public runtime::Backend {
public:
  static Expected<std::unique_ptr<runtime::Backend>> create(const CudaDriver &driver,
                                                            const runtime::CudaOptions &options) {
    Expected<hal::Device> device = hal::Device::open(driver, 0);
    if (!device)
      return device.status();
    return std::unique_ptr<runtime::Backend>(new CudaBackend(std::move(device.value()), options));
  }

  ~CudaBackend() override {
    // Every Session (and its CudaSession) is gone: an Engine outlives them.
    std::lock_guard<std::mutex> lock(engine_->mutex);
    if (engine_->device.makeCurrent())
      (void)engine_->device.synchronize();
    // engine_ then frees weights, constants and modules, and last the device.
  }

  const char *name() const override { return "cuda"; }
  bool deviceResident() const override { return true; }
  uint64_t privateArenaBytes() const override {
    return engine_->privateSmallArenas ? runtime::kPrivateArenaBytes : 0;
  }
  /// Device copies are per slot: row views made per tile have none, so
  /// row-tiled fusions run whole here (untiled memory plan).
  bool runsRowTiles() const override { return false; }
  std::string deviceName() const override { return engine_->device.name(); }

  Status check(const runtime::Plan &plan) const override {
    auto compiled = [&](int64_t module) {
      return module >= 0 && size_t(module) < plan.modules.size() &&
             !plan.modules[size_t(module)].cubin.empty();
    };
    for (const runtime::KernelSpec &kernel : plan.kernels) {
      if (!engine_->table.count(kernel.name))
        return runtime::failedPrecondition("the CUDA backend has no kernel '" + kernel.name + "'");
      if (!compiled(kernel.module))
        return runtime::failedPrecondition("kernel '" + kernel.name +
                                           "' has no compiled module in the plan: compile it "
                                           "with dsc-compile --gpu-arch=sm_90a");
    }
    for (const runtime::Program &program : plan.programs)
      for (const runtime::Fusion &fusion : program.fusions)
        if (!fusion.executable.empty()) {
          if (!findNativeHostFn(fusion.executable))
            return runtime::failedPrecondition("the CUDA backend has no native executable '" +
                                               fusion.executable + "'");
          if (!compiled(fusion.module))
            return runtime::failedPrecondition("native executable '" + fusion.executable +
                                               "' has no compiled module in the plan");
        }
    return Status::ok();
  }

  Expected<std::unique_ptr<runtime::BackendSession>> openSession(const runtime::Plan &plan) override {
    return std::unique_ptr<runtime::BackendSession>(new CudaSession(*engine_, plan));
  }

  Status bindArena(runtime::BackendSession &session, const runtime::Program &program,
                   const runtime::MemoryPlan &plan) override {
    Entry entry(*this, &session);
    if (!entry)
      return entry.status;
    CudaSession &s = cuda(session);
    const size_t index = programIndex(s, program);
    if (index >= s.programCount())
      return runtime::internalError("bindArena: '" + program.name + "' is not the session's");
    return s.bindArena(index, program, plan);
  }

  uint64_t arenaBytes(const runtime::BackendSession &session,
                      const std::string &program) const override {
    std::lock_guard<std::mutex> lock(engine_->mutex);
    const CudaSession::Program *p = static_cast<const CudaSession &>(session).program(program);
    return p ? p->arena.size() : 0;
  }

  Status toDevice(runtime::BackendSession *session, TensorRef ref, HostTensor &t) override {
    Entry entry(*this, session);
    if (!entry)
      return entry.status;
    Expected<DeviceRange> range = resolve(session, ref, t.byteSize());
    if (!range)
      return range.status();
    if (!t.byteSize() || !t.hasStorage()) // a described tensor: only allocated
      return Status::ok();
    if (session) // the copy overwrites t entirely: its pending zeroing is dropped
      cuda(*session).dropZeroing(range->ptr);
    const CudaDriver &d = engine_->driver();
    if (Status s = d.check(d.cuMemcpyHtoDAsync(range->ptr, t.bytes(), t.byteSize(), engine_->stream()),
                           "cuMemcpyHtoDAsync");
        !s)
      return s;
    return engine_->device.synchronize();
  }

  Status uploadChunk(TensorRef ref, HostTensor &t, size_t offset, const void *data,
                     size_t bytes) override {
    Entry entry(*this, nullptr);
    if (!entry)
      return entry.status;
    if (offset > t.byteSize() || bytes > t.byteSize() - offset)
      return runtime::invalidArgument("uploadChunk: bytes [" + std::to_string(offset) + ", " +
                                      std::to_string(offset + bytes) + ") outside a tensor of " +
                                      std::to_string(t.byteSize()) + " bytes");
    if (ref.kind != TensorRef::Kind::Weight)
      return runtime::internalError("uploadChunk: only weights are uploaded in chunks");
    Expected<CUdeviceptr> ptr = engine_->weight(ref.index, t.byteSize());
    if (!ptr)
      return ptr.status();
    if (!bytes)
      return Status::ok();
    const CudaDriver &d = engine_->driver();
    if (Status s = d.check(d.cuMemcpyHtoDAsync(*ptr + offset, data, bytes, engine_->stream()),
                           "cuMemcpyHtoDAsync (chunk)");
        !s)
      return s;
    return engine_->device.synchronize();
  }

  Status toHost(runtime::BackendSession *session, TensorRef ref, HostTensor &t) override {
    Entry entry(*this, session);
    if (!entry)
      return entry.status;
    DeviceRange storage;
    const DeviceRange *range = nullptr;
    if (ref.kind == TensorRef::Kind::Weight) {
      if (const hal::DeviceBuffer *b = engine_->findWeight(ref.index)) {
        storage = {b->ptr(), b->size()};
        range = &storage;
      }
    } else if (session) {
      range = cuda(*session).find(ref, storage);
    }
    if (!range || !t.byteSize())
      return Status::ok(); // no device copy: nothing to read back
    if (!t.hasStorage())
      return runtime::failedPrecondition(
          "toHost: the tensor has no host storage (a device-only weight)");
    if (t.byteSize() > range->bytes)
      return runtime::internalError("toHost: a tensor of " + std::to_string(t.byteSize()) +
                                    " bytes from a device copy of " + std::to_string(range->bytes));
    if (session)
      if (Status s = cuda(*session).flushZeroing(); !s)
        return s;
    const CudaDriver &d = engine_->driver();
    if (Status s = d.check(d.cuMemcpyDtoHAsync(t.bytes(), range->ptr, t.byteSize(), engine_->stream()),
                           "cuMemcpyDtoHAsync");
        !s)
      return s;
    return engine_->device.synchronize();
  }

  Status synchronize() override {
    Entry entry(*this, nullptr);
    if (!entry)
      return entry.status;
    return engine_->device.synchronize();
  }

  Expected<bool> beginLaunches(runtime::BackendSession &session, const runtime::Plan &plan,
                               const runtime::CallPlan &callPlan, const runtime::CallInfo &call,
                               const runtime::Program &program,
                               std::span<HostTensor *const> values, bool graphable) override {
    Entry entry(*this, &session);
    if (!entry)
      return entry.status;
    CudaSession &s = cuda(session);
    const size_t index = programIndex(s, program);
    if (index >= s.programCount() || program.inputs.empty() ||
        size_t(program.inputs.front()) >= values.size() || !values[size_t(program.inputs.front())])
      return runtime::internalError("beginLaunches: the program has no token input");
    // Slots with a p-dependent size have their capacity in the arena.
    for (size_t i = 0; i < program.values.size() && i < values.size(); ++i)
      if (values[i] && (program.values[i].kind == runtime::ValueKind::Activation ||
                        program.values[i].kind == runtime::ValueKind::Input))
        if (Expected<DeviceRange> r =
                s.resolve(TensorRef::value(int64_t(index), int64_t(i)),
                          capacityBytes(plan, program.values[i], *values[i], call));
            !r)
          return r.status();
    if (Expected<CUdeviceptr> state = s.writeCallState(index, call); !state)
      return state.status();
    s.program(index).inCall = true;
    const bool decode = graphable && engine_->graphs && program.name == "decode" && call.tokens == 1;
    if (!decode) {
      if (Status st = s.flushZeroing(); !st)
        return st;
      return false;
    }
    GraphCache::Entry &graph = s.graphs().entry(int64_t(index), callPlan.shape);
    switch (GraphCache::next(graph)) {
    case GraphCache::Action::Replay: // the graph zeroes and launches everything
      s.clearZeroing();
      if (Status st = graph.graph.launch(engine_->stream()); !st)
        return st;
      ++graph.replays;
      return true;
    case GraphCache::Action::Capture: {
      // Independent steps on their own streams: graph branches.
      const runtime::MemoryPlan &memory = callPlan.hasDevicePlan ? callPlan.device : callPlan.host;
      runtime::StepStreams branches = runtime::scheduleSteps(
          runtime::launchGraph(program, memory), callPlan.steps, engine_->streams);
      if (Status st = s.beginCapture(graph, index, std::move(branches)); !st)
        return st;
      if (Status st = s.flushZeroing(); !st)
        return st;
      if (Status st = s.forkBranches(); !st)
        return st;
      return false;
    }
    case GraphCache::Action::Eager:
      break;
    }
    if (Status st = s.flushZeroing(); !st)
      return st;
    return false;
  }

  Status endLaunches(runtime::BackendSession &session, const runtime::CallInfo &call,
                     const runtime::Program &program) override {
    Entry entry(*this, &session);
    CudaSession &s = cuda(session);
    if (const size_t index = programIndex(s, program); index < s.programCount())
      s.program(index).inCall = false;
    if (!entry) {
      s.abandonCapture();
      return entry.status;
    }
    return s.endCapture((long long)call.startPos);
  }

  std::span<const int64_t> issueOrder(const runtime::BackendSession &session) const override {
    return static_cast<const CudaSession &>(session).captureOrder();
  }

  Status launch(runtime::LaunchContext &c) override {
    Entry entry(*this, c.session);
    if (!entry)
      return entry.status;
    if (!c.session)
      return runtime::internalError("a CUDA launch outside a Session");
    auto it = engine_->table.find(c.kernel.name);
    if (it == engine_->table.end())
      return runtime::failedPrecondition("the CUDA backend has no kernel '" + c.kernel.name + "'");
    CudaSession &session = cuda(*c.session);
    const size_t program = session.indexOf(c.program);
    const size_t at = size_t(&c.launch - c.program.launches.data());
    Status status = session.enterLaunch(program, at);
    if (status) {
      BoundLaunch bound(session, c);
      status = bound.prepare();
      if (status)
        status = it->second(bound);
    }
    if (status)
      status = session.leaveLaunch(program, at);
    return finish(status, c.kernel.name);
  }

  /// Native executables: the plan names them (Fusion::executable, chosen by
  /// ds-select-executables); nothing is matched here.
  bool runsFusion(const runtime::Plan &, const runtime::Program &program, size_t first,
                  size_t count) const override {
    if (!count || first >= program.launches.size())
      return false;
    const int64_t f = program.launches[first].fusion;
    if (f < 0 || size_t(f) >= program.fusions.size())
      return false;
    const runtime::Fusion &fusion = program.fusions[size_t(f)];
    return !fusion.executable.empty() && findNativeHostFn(fusion.executable) && fusion.module >= 0;
  }

  Status launchFusion(std::span<runtime::LaunchContext> steps) override {
    Entry entry(*this, steps.empty() ? nullptr : steps[0].session);
    if (!entry)
      return entry.status;
    if (steps.empty() || steps[0].launch.fusion < 0 ||
        size_t(steps[0].launch.fusion) >= steps[0].program.fusions.size())
      return runtime::internalError("launchFusion: the steps are no fusion's");
    if (!steps[0].session)
      return runtime::internalError("a CUDA launch outside a Session");
    const runtime::Fusion &fusion = steps[0].program.fusions[size_t(steps[0].launch.fusion)];
    const NativeHostFn native = findNativeHostFn(fusion.executable);
    if (!native)
      return runtime::internalError("launchFusion: no native executable '" + fusion.executable +
                                    "'");
    CudaSession &session = cuda(*steps[0].session);
    const size_t program = session.indexOf(steps[0].program);
    const size_t first = size_t(&steps[0].launch - steps[0].program.launches.data());
    std::vector<std::unique_ptr<BoundLaunch>> contexts;
    NativeLaunch launch{fusion, {}, {}};
    Status status = session.enterLaunch(program, first); // the whole fusion is one step
    for (runtime::LaunchContext &step : steps) {
      contexts.push_back(std::make_unique<BoundLaunch>(session, step));
      if (status)
        status = contexts.back()->prepare();
      launch.steps.push_back(contexts.back().get());
    }
    launch.runStep = [&](size_t i) -> Status {
      if (i >= contexts.size())
        return runtime::internalError("native executable: no step " + std::to_string(i));
      auto it = engine_->table.find(contexts[i]->kernel.name);
      if (it == engine_->table.end())
        return runtime::failedPrecondition("the CUDA backend has no kernel '" +
                                           contexts[i]->kernel.name + "'");
      return it->second(*contexts[i]);
    };
    if (status)
      status = native(launch);
    if (status)
      status = session.leaveLaunch(program, first + steps.size() - 1);
    return finish(status, fusion.executable + " (native)");
  }

private:
  CudaBackend(hal::Device device, const runtime::CudaOptions &options)
      : engine_(std::make_unique<CudaEngineState>(std::move(device), options)) {}

  /// An entry point's lock and current context (`status` says whether the
  /// context could be made current). While one session's capture is open on
  /// the stream, every other caller waits until it ends (what it issued
  /// would be recorded into that graph, and a synchronisation would break
  /// the capture); the capturing session's own calls go on.
  struct Entry {
    Entry(CudaBackend &backend, const runtime::BackendSession *session)
        : lock(backend.engine_->mutex) {
      CudaEngineState &e = *backend.engine_;
      e.captureEnded.wait(lock, [&] { return !e.capturing || e.capturing == session; });
      status = e.device.makeCurrent();
    }
    explicit operator bool() const { return status.isOk(); }
    std::unique_lock<std::mutex> lock;
    Status status;
  };

  static CudaSession &cuda(runtime::BackendSession &session) {
    return static_cast<CudaSession &>(session);
  }
  static size_t programIndex(const CudaSession &session, const runtime::Program &program) {
    return session.indexOf(program);
  }

  Expected<DeviceRange> resolve(runtime::BackendSession *session, TensorRef ref, size_t bytes) {
    if (ref.kind == TensorRef::Kind::Weight) {
      Expected<CUdeviceptr> p = engine_->weight(ref.index, bytes);
      if (!p)
        return p.status();
      return DeviceRange{*p, std::max<size_t>(bytes, 1)};
    }
    if (!session)
      return runtime::internalError("a state or value without its session");
    return cuda(*session).resolve(ref, bytes);
  }

  /// Device bytes of a slot: slots with a kCompressed* dim are sized for
  /// the plan's capacity so their address never changes with p.
  static size_t capacityBytes(const runtime::Plan &plan, const runtime::ValueSlot &slot,
                              const HostTensor &t, const runtime::CallInfo &call) {
    if (slot.shape.size() != t.shape().size())
      return t.byteSize();
    bool symbolic = false;
    size_t n = 1;
    for (size_t i = 0; i < slot.shape.size(); ++i) {
      int64_t d = t.shape()[i];
      if (slot.shape[i] == runtime::kCompressedLength && slot.ratio > 0) {
        d = plan.model.maxSeqLen / slot.ratio;
        symbolic = true;
      } else if (slot.shape[i] == runtime::kCompressedTokens && slot.ratio > 0) {
        d = CudaLaunchContext::compressedTokensCapacity(call.tokens, slot.ratio);
        symbolic = true;
      }
      n *= size_t(std::max<int64_t>(d, 0));
    }
    if (!symbolic)
      return t.byteSize();
    return std::max(t.byteSize(), n * runtime::dtypeSize(t.dtype()));
  }

  /// After a launch: CudaOptions::syncEachLaunch, and a failed capture
  /// abandoned (graphs then stay off for that session's call shape).
  Status finish(Status status, const std::string &what) {
    if (status && engine_->syncEachLaunch) {
      const CudaDriver &d = engine_->driver();
      status = d.check(d.cuStreamSynchronize(engine_->stream()), "launch of '" + what + "'");
    }
    if (!status && engine_->capturing)
      engine_->capturing->abandonCapture();
    return status;
  }

  std::unique_ptr<CudaEngineState> engine_;
};

} // namespace

runtime::Expected<std::unique_ptr<runtime::Backend>>
createCudaBackendOn(const CudaDriver &driver, const runtime::CudaOptions &options) {
  return CudaBackend::create(driver, options);
}

} // namespace dsc::cuda

dsc::runtime::Expected<std::unique_ptr<dsc::runtime::Backend>>
dsc::runtime::createCudaBackend(const CudaOptions &options) {
  Expected<const dsc::cuda::CudaDriver *> driver = dsc::cuda::CudaDriver::get();
  if (!driver)
    return driver.status();
  return dsc::cuda::createCudaBackendOn(*driver.value(), options);
}
