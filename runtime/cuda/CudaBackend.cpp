//===- CudaBackend.cpp - Runs plan launches on an NVIDIA GPU -----------------===//
//
// Weights and states have device twins of their own (allocated on first use,
// grown when a call needs more); weights are uploaded once by the Engine,
// states when a Session resets, token ids per call. A call's Input and
// Activation values live in one device arena per Session and program
// (bindArena): the Session's capacity plan (MemoryPlan.h) gives each value's
// offset, so its twin is a view `arena + offset` (no allocation per value).
// Decode's plan is the same for every call, so its arena is allocated once
// and its addresses never change; prefill's is re-planned per prompt length
// and grown when it needs more. Like the host views, each value is zeroed
// (async memset on the stream, its whole capacity) right before its first
// writing launch, inputs at the call's first launch. Kernels come
// from the plan's cubins (one module per kernel specialisation, loaded on
// first launch) and are launched by the adapters in CudaAdapters*.cpp.
// CudaOptions::syncEachLaunch synchronises after every launch so that a
// fault names its launch (the backend reads no environment variable: the
// tools map DSC_CUDA_SYNC / DSC_CUDA_GRAPHS / DSC_CUDA_TOPK_QUADRATIC onto
// CudaOptions).
//
// Stream and graphs: all work goes to one backend-owned non-blocking stream;
// toHost/toDevice synchronise it. Activation zeroing is deferred to the
// launches, so it can be part of a captured graph.
// Each Session (keyed by its token-input tensor) has a device call state
// {startPos, tokens, prefill-like + ring rows} written before every call
// (beginLaunches) from the call plan's geometry (CallGeometry); kernels read
// p and the prefill-like flag from it. A CED plan's replayed launches
// (Launch::replay, geometry {S - R', R', prefill-like}) read a second call state of
// the session, written before the first replayed launch of a call (prefill is
// never captured, so the choice is per launch). Slots with a kCompressed* dim get device twins sized for the
// plan's capacity (in the arena: the capacity plan), scratch is persistent per
// launch site and constants are uploaded once, so the decode program's device
// addresses are fixed. With no
// observer (beginLaunches' graphable), a session's first decode runs eagerly,
// the second is captured (cuStreamBeginCapture .. cuGraphInstantiate) and
// every later decode replays the graph after updating the call state and the
// token id on the stream. CudaOptions::graphs = false (or syncEachLaunch)
// disables graphs. A buffer reallocated or freed after a capture invalidates the
// graphs (generation_), a moved arena its session's graph; the next decode
// re-captures.
//
// Threading: Sessions of one Engine may run on different threads. Every entry
// point (launch, toDevice, toHost, beginCall, uploadChunk, release,
// synchronize) takes the backend's mutex and makes the primary context
// current on the calling thread. release() frees a destroyed tensor's twin,
// so a new tensor at a reused address never inherits a stale buffer.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <unordered_map>

namespace dsc::cuda {
namespace {

using runtime::Expected;
using runtime::HostTensor;

class CudaBackend final : public runtime::Backend {
public:
  static Expected<std::unique_ptr<runtime::Backend>> create(const runtime::CudaOptions &options) {
    Expected<const CudaDriver *> driver = CudaDriver::get();
    if (!driver)
      return driver.status();
    std::unique_ptr<CudaBackend> backend(new CudaBackend(*driver.value(), options));
    if (runtime::Status s = backend->init(); !s)
      return s;
    return std::unique_ptr<runtime::Backend>(std::move(backend));
  }

  ~CudaBackend() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (context_)
      logOnce(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    if (stream_)
      logOnce(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
    for (auto &[key, session] : sessions_)
      dropSession(session);
    sessions_.clear();
    for (auto &[key, buffer] : scratch_)
      if (buffer.ptr)
        logOnce(d_.cuMemFree(buffer.ptr), "cuMemFree");
    for (auto &[key, buffer] : constants_)
      if (buffer.ptr)
        logOnce(d_.cuMemFree(buffer.ptr), "cuMemFree");
    if (fallbackState_)
      logOnce(d_.cuMemFree(fallbackState_), "cuMemFree");
    for (auto &[tensor, buffer] : buffers_)
      if (buffer.ptr && !buffer.view)
        logOnce(d_.cuMemFree(buffer.ptr), "cuMemFree");
    buffers_.clear();
    for (auto &[index, module] : modules_)
      logOnce(d_.cuModuleUnload(module), "cuModuleUnload");
    if (stream_)
      logOnce(d_.cuStreamDestroy(stream_), "cuStreamDestroy");
    if (context_)
      logOnce(d_.cuDevicePrimaryCtxRelease(device_), "cuDevicePrimaryCtxRelease");
  }

  void release(const HostTensor &t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    pending_.erase(std::remove(pending_.begin(), pending_.end(), &t), pending_.end());
    if (auto s = sessions_.find(&t); s != sessions_.end()) {
      if (makeCurrent())
        dropSession(s->second);
      sessions_.erase(s);
    }
    auto it = buffers_.find(&t);
    if (it == buffers_.end())
      return;
    if (it->second.view) { // a view into its session's arena: nothing to free
      buffers_.erase(it);
      return;
    }
    ++generation_;
    if (it->second.ptr && makeCurrent()) {
      logOnce(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
      logOnce(d_.cuMemFree(it->second.ptr), "cuMemFree");
    }
    buffers_.erase(it);
  }

  const char *name() const override { return "cuda"; }
  bool deviceResident() const override { return true; }

  Status check(const runtime::Plan &plan) const override {
    auto compiled = [&](int64_t module) {
      return module >= 0 && size_t(module) < plan.modules.size() &&
             !plan.modules[size_t(module)].cubin.empty();
    };
    for (const runtime::KernelSpec &kernel : plan.kernels) {
      if (!table_.count(kernel.name))
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

  Status bindArena(const runtime::Program &program, const runtime::MemoryPlan &plan,
                   std::span<HostTensor *const> values) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    if (program.inputs.empty() || size_t(program.inputs.front()) >= values.size() ||
        !values[size_t(program.inputs.front())])
      return runtime::internalError("bindArena: the program has no token input");
    if (plan.values.size() != program.values.size() || values.size() != program.values.size())
      return runtime::internalError("bindArena: the plan does not match the program");
    if (capturing_)
      return runtime::internalError("bindArena during CUDA graph capture");
    SessionState &session = sessions_[values[size_t(program.inputs.front())]];
    session.program = program.name;
    bool moved = false;
    size_t need = std::max<size_t>(size_t(plan.peakBytes), 1);
    if (session.arena.capacity < need) {
      if (session.arena.ptr) {
        moved = true;
        if (Status s = d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize"); !s)
          return s;
        CUdeviceptr old = session.arena.ptr;
        session.arena = DeviceBuffer();
        if (Status s = d_.check(d_.cuMemFree(old), "cuMemFree(arena)"); !s)
          return s;
      }
      CUdeviceptr p = 0;
      if (Status s = d_.check(d_.cuMemAlloc(&p, need),
                              "cuMemAlloc(" + std::to_string(need) + ", " + program.name +
                                  " activation arena)");
          !s)
        return s;
      session.arena.ptr = p;
      session.arena.capacity = need;
    }
    session.bornAt.assign(program.launches.size(), {});
    session.views.clear(); // the program's planned slots: the same tensors every call
    pending_.clear();
    for (size_t i = 0; i < program.values.size(); ++i) {
      const runtime::ValueMemory &m = plan.values[i];
      HostTensor *t = values[i];
      if (!m.planned || !t)
        continue;
      if (t->byteSize() > m.alignedBytes || m.offset + m.alignedBytes > session.arena.capacity)
        return runtime::internalError(
            program.name + ": value slot " + std::to_string(i) + " ('" + program.values[i].name +
            "') needs " + std::to_string(t->byteSize()) + " bytes, its device arena slot has " +
            std::to_string(m.alignedBytes));
      DeviceBuffer &b = buffers_[t];
      if (b.ptr && !b.view) // a twin of its own from before: replaced by the view
        if (Status s = freeOwned(b); !s)
          return s;
      CUdeviceptr p = session.arena.ptr + m.offset;
      if (b.view && b.ptr != p)
        moved = true;
      b.ptr = p;
      b.capacity = size_t(m.alignedBytes);
      b.view = true;
      session.views.push_back(t);
      if (!m.alignedBytes)
        continue;
      if (m.first < 0 || size_t(m.first) >= session.bornAt.size())
        pending_.push_back(t); // inputs: zeroed at the first launch (the token upload drops it)
      else
        session.bornAt[size_t(m.first)].push_back({p, size_t(m.alignedBytes)});
    }
    if (moved && session.exec) { // the graph holds the old addresses
      logOnce(d_.cuGraphExecDestroy(session.exec), "cuGraphExecDestroy");
      session.exec = nullptr;
      session.decodeCalls = 0;
    }
    return Status::ok();
  }

  uint64_t arenaBytes(const std::string &program) const override {
    std::lock_guard<std::mutex> lock(mutex_);
    uint64_t total = 0;
    for (const auto &[key, session] : sessions_)
      if (session.program == program)
        total += session.arena.capacity;
    return total;
  }

  Status beginCall(std::span<HostTensor *const> activations) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    // Arena views were scheduled by bindArena; anything else left over from
    // a failed call is dropped.
    pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                  [&](HostTensor *t) {
                                    auto it = buffers_.find(t);
                                    return it == buffers_.end() || !it->second.view;
                                  }),
                   pending_.end());
    for (HostTensor *t : activations) {
      if (auto it = buffers_.find(t); it != buffers_.end() && it->second.view)
        continue; // zeroed before its first write (bindArena)
      Expected<CUdeviceptr> ptr = ensure(*t);
      if (!ptr)
        return ptr.status();
      if (t->byteSize())
        pending_.push_back(t); // zeroed by flushZeroing(), maybe inside a capture
    }
    return Status::ok();
  }

  /// Device twins are keyed by host tensor: row views made per tile have
  /// none, so row-tiled fusions run whole here (untiled memory plan).
  bool runsRowTiles() const override { return false; }

  Expected<bool> beginLaunches(const runtime::Plan &plan, const runtime::CallInfo &call,
                               const runtime::Program &program,
                               std::span<HostTensor *const> values, bool graphable) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    if (program.inputs.empty() || !values[size_t(program.inputs.front())])
      return runtime::internalError("beginLaunches: the program has no token input");
    SessionState &session = sessions_[values[size_t(program.inputs.front())]];
    if (!session.callState) {
      if (Status s = d_.check(d_.cuMemAlloc(&session.callState, sizeof(session.hostState)),
                              "cuMemAlloc(call state)");
          !s)
        return s;
    }
    // Device capacity for p-dependent slots (before any capture).
    for (size_t i = 0; i < program.values.size(); ++i)
      if (values[i] && (program.values[i].kind == runtime::ValueKind::Activation ||
                        program.values[i].kind == runtime::ValueKind::Input))
        if (Expected<CUdeviceptr> p = ensure(*values[i], capacityBytes(plan, program.values[i], *values[i], call));
            !p)
          return p.status();
    callStateWords(call, session.hostState);
    session.replayWritten = false;
    if (Status s = d_.check(d_.cuMemcpyHtoDAsync(session.callState, session.hostState,
                                                 sizeof(session.hostState), stream_),
                            "cuMemcpyHtoDAsync(call state)");
        !s)
      return s;
    activeCalls_[&call] = ActiveCall{session.callState, &session};
    bool decode = graphable && graphs_ && program.name == "decode" && call.tokens == 1;
    if (!decode) {
      if (Status s = flushZeroing(); !s)
        return s;
      return false;
    }
    if (session.exec && session.generation != generation_) {
      logOnce(d_.cuGraphExecDestroy(session.exec), "cuGraphExecDestroy");
      session.exec = nullptr;
      session.decodeCalls = 0; // re-capture after an eager call
    }
    if (session.exec) { // replay: the graph zeroes and launches everything
      pending_.clear();
      if (Status s = d_.check(d_.cuGraphLaunch(session.exec, stream_), "cuGraphLaunch"); !s)
        return s;
      ++session.replays;
      return true;
    }
    if (session.decodeCalls++ == 1) { // the second decode: capture it
      if (Status s = d_.check(d_.cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_RELAXED),
                              "cuStreamBeginCapture");
          !s)
        return s;
      capturing_ = &session;
    }
    if (Status s = flushZeroing(); !s)
      return s;
    return false;
  }

  Status endLaunches(const runtime::CallInfo &call, const runtime::Program &) override {
    std::lock_guard<std::mutex> lock(mutex_);
    activeCalls_.erase(&call);
    if (!capturing_)
      return Status::ok();
    SessionState &session = *capturing_;
    capturing_ = nullptr;
    CUgraph graph = nullptr;
    if (Status s = d_.check(d_.cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture"); !s)
      return s;
    Status status = d_.check(d_.cuGraphInstantiateWithFlags(&session.exec, graph, 0),
                             "cuGraphInstantiateWithFlags");
    logOnce(d_.cuGraphDestroy(graph), "cuGraphDestroy");
    if (!status) {
      session.exec = nullptr;
      return status;
    }
    session.generation = generation_;
    if (graphsVerbose_)
      std::fprintf(stderr, "dsc: CUDA graph captured for decode at position %lld\n",
                   (long long)call.startPos);
    // Capture recorded the call without running it: run it now.
    return d_.check(d_.cuGraphLaunch(session.exec, stream_), "cuGraphLaunch");
  }

  Status toDevice(HostTensor &t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    Expected<CUdeviceptr> ptr = ensure(t);
    if (!ptr)
      return ptr.status();
    if (!t.byteSize() || !t.hasStorage()) // a described tensor: only allocated
      return Status::ok();
    // The copy overwrites t entirely: a pending zeroing of t is dropped.
    pending_.erase(std::remove(pending_.begin(), pending_.end(), &t), pending_.end());
    if (Status s = d_.check(d_.cuMemcpyHtoDAsync(*ptr, t.bytes(), t.byteSize(), stream_),
                            "cuMemcpyHtoDAsync");
        !s)
      return s;
    return d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  Status uploadChunk(HostTensor &t, size_t offset, const void *data, size_t bytes) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    if (offset > t.byteSize() || bytes > t.byteSize() - offset)
      return runtime::invalidArgument("uploadChunk: bytes [" + std::to_string(offset) + ", " +
                                      std::to_string(offset + bytes) + ") outside a tensor of " +
                                      std::to_string(t.byteSize()) + " bytes");
    Expected<CUdeviceptr> ptr = ensure(t);
    if (!ptr)
      return ptr.status();
    if (!bytes)
      return Status::ok();
    if (Status s = d_.check(d_.cuMemcpyHtoDAsync(*ptr + offset, data, bytes, stream_),
                            "cuMemcpyHtoDAsync (chunk)");
        !s)
      return s;
    return d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  Status synchronize() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    if (Status s = flushZeroing(); !s)
      return s;
    return d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  std::string deviceName() const override {
    char name[256] = {};
    if (d_.cuDeviceGetName(name, sizeof(name) - 1, device_) != CUDA_SUCCESS)
      return "CUDA device 0";
    return name;
  }

  Status toHost(HostTensor &t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    auto it = buffers_.find(&t);
    if (it == buffers_.end() || !t.byteSize())
      return Status::ok();
    if (!t.hasStorage())
      return runtime::failedPrecondition("toHost: the tensor has no host storage (a device-only weight)");
    if (Status s = flushZeroing(); !s)
      return s;
    if (Status s = d_.check(d_.cuMemcpyDtoHAsync(t.bytes(), it->second.ptr, t.byteSize(), stream_),
                            "cuMemcpyDtoHAsync");
        !s)
      return s;
    return d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  Status launch(runtime::LaunchContext &c) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    auto it = table_.find(c.kernel.name);
    if (it == table_.end())
      return runtime::failedPrecondition("the CUDA backend has no kernel '" + c.kernel.name + "'");
    Context context(*this, c);
    Status status = prepare(c, context);
    if (status)
      status = it->second(context);
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
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    if (steps.empty() || steps[0].launch.fusion < 0 ||
        size_t(steps[0].launch.fusion) >= steps[0].program.fusions.size())
      return runtime::internalError("launchFusion: the steps are no fusion's");
    const runtime::Fusion &fusion = steps[0].program.fusions[size_t(steps[0].launch.fusion)];
    const NativeHostFn native = findNativeHostFn(fusion.executable);
    if (!native)
      return runtime::internalError("launchFusion: no native executable '" + fusion.executable +
                                    "'");
    std::vector<std::unique_ptr<Context>> contexts;
    NativeLaunch launch{fusion, {}, {}};
    Status status = Status::ok();
    for (runtime::LaunchContext &step : steps) {
      contexts.push_back(std::make_unique<Context>(*this, step));
      if (status)
        status = prepare(step, *contexts.back());
      launch.steps.push_back(contexts.back().get());
    }
    launch.runStep = [&](size_t i) -> Status {
      if (i >= contexts.size())
        return runtime::internalError("native executable: no step " + std::to_string(i));
      auto it = table_.find(contexts[i]->kernel.name);
      if (it == table_.end())
        return runtime::failedPrecondition("the CUDA backend has no kernel '" +
                                           contexts[i]->kernel.name + "'");
      return it->second(*contexts[i]);
    };
    if (status)
      status = native(launch);
    return finish(status, fusion.executable + " (native)");
  }

private:
  struct DeviceBuffer {
    CUdeviceptr ptr = 0;
    size_t capacity = 0;
    bool view = false; ///< points into a session's arena (not owned)
  };

  class Context final : public CudaLaunchContext {
  public:
    Context(CudaBackend &backend, runtime::LaunchContext &c)
        : CudaLaunchContext(c.plan, c.program, c.launch, c.kernel, c.call), backend_(backend),
          inputTensors(c.inputs.size()), outputTensors(c.outputs.size()) {
      inputSlots = c.inputSlots;
      outputSlots = c.outputSlots;
      quadraticTopk = backend.quadraticTopk_;
      cpuOrderKernels = backend.cpuOrderKernels_;
    }
    Status bind(HostTensor &host, CudaTensor &device) {
      Expected<CUdeviceptr> ptr = backend_.ensure(host);
      if (!ptr)
        return ptr.status();
      device.ptr = *ptr;
      device.dtype = host.dtype();
      device.shape = host.shape();
      return Status::ok();
    }
    Status launchEntryIn(int64_t module, const char *entry, Dim3 grid, Dim3 block,
                         size_t sharedBytes, std::vector<void *> args) override {
      Expected<CUfunction> fn = backend_.function(plan, module, entry);
      if (!fn)
        return fn.status();
      if (grid.x == 0 || grid.y == 0 || grid.z == 0)
        return Status::ok(); // nothing to do for an empty call
      return backend_.d_.check(
          backend_.d_.cuLaunchKernel(*fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                     unsigned(sharedBytes), backend_.stream_, args.data(),
                                     nullptr),
          std::string("cuLaunchKernel(") + entry + ")");
    }
    Expected<CUdeviceptr> scratch(size_t bytes) override {
      DeviceBuffer &b = backend_.scratch_[{&launch, scratchCount++}];
      if (Status s = backend_.grow(b, std::max<size_t>(bytes, 1), "scratch"); !s)
        return s;
      return b.ptr;
    }
    Expected<CUdeviceptr> constant(const char *name, const void *data, size_t bytes) override {
      DeviceBuffer &b = backend_.constants_[{launch.kernel, std::string(name)}];
      if (b.ptr)
        return b.ptr;
      if (backend_.capturing_)
        return runtime::internalError(std::string("constant '") + name +
                                      "' first uploaded during graph capture");
      if (Status s = backend_.grow(b, std::max<size_t>(bytes, 1), "constant"); !s)
        return s;
      if (bytes)
        if (Status s = backend_.d_.check(backend_.d_.cuMemcpyHtoDAsync(b.ptr, data, bytes,
                                                                       backend_.stream_),
                                         std::string("cuMemcpyHtoDAsync(") + name + ")");
            !s)
          return s;
      if (Status s = backend_.d_.check(backend_.d_.cuStreamSynchronize(backend_.stream_),
                                       "cuStreamSynchronize");
          !s)
        return s;
      return b.ptr;
    }
    Status copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) override {
      if (!bytes)
        return Status::ok();
      return backend_.d_.check(backend_.d_.cuMemcpyDtoDAsync(dst, src, bytes, backend_.stream_),
                               "cuMemcpyDtoDAsync");
    }

    CudaBackend &backend_;
    std::vector<CudaTensor> inputTensors, outputTensors;
    int scratchCount = 0;
  };

  /// A launch's call state, the zeroing of the arena values it writes first,
  /// and its bound tensors (mutex_ held).
  Status prepare(runtime::LaunchContext &c, Context &context) {
    Status status = flushZeroing();
    if (auto a = activeCalls_.find(c.programCall ? c.programCall : &c.call);
        a != activeCalls_.end()) {
      context.callState = a->second.callState;
      if (c.launch.replay && status) // CED: the replayed launches' own call state
        status = replayCallState(*a->second.session, c.call, context.callState);
      // Arena values born at this launch: zeroed right before it.
      size_t index = size_t(&c.launch - c.program.launches.data());
      const SessionState &session = *a->second.session;
      if (index < session.bornAt.size())
        for (const auto &[ptr, bytes] : session.bornAt[index])
          if (status)
            status = d_.check(d_.cuMemsetD8Async(ptr, 0, bytes, stream_), "cuMemsetD8Async");
    } else if (status) // a caller without beginLaunches: a call state of its own
      status = fallbackCallState(c.call, context.callState);
    for (size_t i = 0; status && i < c.inputs.size(); ++i) {
      status = context.bind(*c.inputs[i], context.inputTensors[i]);
      context.inputs.push_back(&context.inputTensors[i]);
    }
    for (size_t i = 0; status && i < c.outputs.size(); ++i) {
      status = context.bind(*c.outputs[i], context.outputTensors[i]);
      context.outputs.push_back(&context.outputTensors[i]);
    }
    return status;
  }


  /// After a launch: CudaOptions::syncEachLaunch, and a failed capture abandoned.
  Status finish(Status status, const std::string &what) {
    if (status && syncEachLaunch_)
      status = d_.check(d_.cuStreamSynchronize(stream_), "launch of '" + what + "'");
    if (!status && capturing_) { // abandon the capture; graphs stay off for the session
      CUgraph graph = nullptr;
      d_.cuStreamEndCapture(stream_, &graph);
      if (graph)
        d_.cuGraphDestroy(graph);
      capturing_->decodeCalls = -1000000;
      capturing_ = nullptr;
    }
    return status;
  }

  /// Per Session and program (keyed by the program's token-input tensor).
  struct SessionState {
    CUdeviceptr callState = 0;
    long long hostState[3] = {0, 0, 0}; ///< callStateWords of the call
    /// CED replayed launches: {S - R', R', 1}, written once per call.
    CUdeviceptr replayState = 0;
    long long replayHost[3] = {0, 0, 0};
    bool replayWritten = false;
    CUgraphExec exec = nullptr;
    uint64_t generation = 0;
    int decodeCalls = 0; ///< 0: eager, 1: capture, then replay
    long long replays = 0;
    std::string program;
    DeviceBuffer arena; ///< the program's activations (bindArena)
    std::vector<const HostTensor *> views; ///< tensors whose twins point into arena
    /// Per launch: arena ranges of the values it writes first (zeroed before it).
    std::vector<std::vector<std::pair<CUdeviceptr, size_t>>> bornAt;
  };
  struct ActiveCall {
    CUdeviceptr callState = 0;
    SessionState *session = nullptr;
  };
  void dropSession(SessionState &s) {
    if (graphsVerbose_ && s.replays)
      std::fprintf(stderr, "dsc: CUDA graph replayed %lld times\n", s.replays);
    if (s.exec)
      logOnce(d_.cuGraphExecDestroy(s.exec), "cuGraphExecDestroy");
    if (s.callState)
      logOnce(d_.cuMemFree(s.callState), "cuMemFree");
    if (s.replayState)
      logOnce(d_.cuMemFree(s.replayState), "cuMemFree");
    for (const HostTensor *t : s.views)
      if (auto it = buffers_.find(t); it != buffers_.end() && it->second.view) {
        pending_.erase(std::remove(pending_.begin(), pending_.end(), t), pending_.end());
        buffers_.erase(it);
      }
    if (s.arena.ptr) {
      logOnce(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize");
      logOnce(d_.cuMemFree(s.arena.ptr), "cuMemFree");
    }
    s = SessionState();
  }

  /// Grows b to `bytes` (zero-filled) outside a capture (mutex_ held).
  /// Frees a buffer the backend allocated, once the stream is done with it;
  /// captured graphs may hold its address, so their generation ends.
  Status freeOwned(DeviceBuffer &b) {
    ++generation_;
    if (Status s = d_.check(d_.cuStreamSynchronize(stream_), "cuStreamSynchronize"); !s)
      return s;
    CUdeviceptr old = b.ptr;
    b = DeviceBuffer();
    return d_.check(d_.cuMemFree(old), "cuMemFree");
  }

  Status grow(DeviceBuffer &b, size_t bytes, const char *what) {
    if (b.capacity >= bytes)
      return Status::ok();
    if (capturing_)
      return runtime::internalError(std::string("a device allocation (") + what +
                                    ") during CUDA graph capture");
    if (b.ptr)
      if (Status s = freeOwned(b); !s)
        return s;
    CUdeviceptr p = 0;
    if (Status s = d_.check(d_.cuMemAlloc(&p, bytes), "cuMemAlloc(" + std::to_string(bytes) + ")");
        !s)
      return s;
    b.ptr = p;
    b.capacity = bytes;
    return d_.check(d_.cuMemsetD8Async(p, 0, bytes, stream_), "cuMemsetD8Async");
  }

  /// Issues the deferred zeroing of this call's activations on the stream
  /// (their whole device capacity; recorded into a graph while capturing).
  Status flushZeroing() {
    for (HostTensor *t : pending_) {
      auto it = buffers_.find(t);
      if (it == buffers_.end() || !it->second.ptr)
        continue;
      if (Status s = d_.check(d_.cuMemsetD8Async(it->second.ptr, 0, it->second.capacity, stream_),
                              "cuMemsetD8Async");
          !s)
        return s;
    }
    pending_.clear();
    return Status::ok();
  }

  /// Device bytes of a slot's twin: slots with a kCompressed* dim are sized
  /// for the plan's capacity so their address never changes with p.
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

  /// The device call state of a call geometry (the CallPlan's: the call's,
  /// or a CED replay's): {startPos, tokens, prefill-like ? 1 + ring rows : 0}
  /// (the last word is DSC_CALL_RING_ROWS in the kernels).
  static void callStateWords(const runtime::CallGeometry &g, long long out[3]) {
    out[0] = g.startPos;
    out[1] = g.tokens;
    out[2] = g.prefillLike ? 1 + g.ringRows : 0;
  }

  /// The call state of a CED replayed launch (CallInfo {S - R', R', prefill-like}):
  /// the session's second buffer, written at the first replayed launch of a
  /// call (or when the values change). Prefill only: never inside a capture.
  Status replayCallState(SessionState &session, const runtime::CallInfo &call, CUdeviceptr &out) {
    if (capturing_)
      return runtime::internalError("a CED replayed launch during CUDA graph capture");
    if (!session.replayState)
      if (Status s = d_.check(d_.cuMemAlloc(&session.replayState, sizeof(session.replayHost)),
                              "cuMemAlloc(replay call state)");
          !s)
        return s;
    long long want[3];
    callStateWords(call, want);
    out = session.replayState;
    if (session.replayWritten && std::equal(want, want + 3, session.replayHost))
      return Status::ok();
    std::copy(want, want + 3, session.replayHost);
    session.replayWritten = true;
    return d_.check(d_.cuMemcpyHtoDAsync(session.replayState, session.replayHost,
                                         sizeof(session.replayHost), stream_),
                    "cuMemcpyHtoDAsync(replay call state)");
  }

  /// A call state for launches outside beginLaunches/endLaunches.
  Status fallbackCallState(const runtime::CallInfo &call, CUdeviceptr &out) {
    if (!fallbackState_)
      if (Status s = d_.check(d_.cuMemAlloc(&fallbackState_, sizeof(fallbackHost_)),
                              "cuMemAlloc(call state)");
          !s)
        return s;
    callStateWords(call, fallbackHost_);
    out = fallbackState_;
    return d_.check(d_.cuMemcpyHtoDAsync(fallbackState_, fallbackHost_, sizeof(fallbackHost_),
                                         stream_),
                    "cuMemcpyHtoDAsync(call state)");
  }

  CudaBackend(const CudaDriver &driver, const runtime::CudaOptions &options) : d_(driver) {
    registerCudaBasicAdapters(table_);
    registerCudaDenseAdapters(table_);
    registerCudaAttentionAdapters(table_);
    syncEachLaunch_ = options.syncEachLaunch;
    graphs_ = options.graphs && !syncEachLaunch_;
    graphsVerbose_ = graphs_ && options.logGraphs; // say when a graph is captured
    quadraticTopk_ = options.quadraticTopk;
    cpuOrderKernels_ = options.cpuOrderKernels;
  }

  Status init() {
    int count = 0;
    if (Status s = d_.check(d_.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s)
      return s;
    if (count == 0)
      return runtime::unavailable("no CUDA device");
    if (Status s = d_.check(d_.cuDeviceGet(&device_, 0), "cuDeviceGet"); !s)
      return s;
    if (Status s = d_.check(d_.cuDevicePrimaryCtxRetain(&context_, device_), "cuDevicePrimaryCtxRetain");
        !s)
      return s;
    if (Status s = d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent"); !s)
      return s;
    return d_.check(d_.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
  }

  /// Makes the primary context current on this thread (mutex_ held).
  bool makeCurrent() { return context_ && d_.cuCtxSetCurrent(context_) == CUDA_SUCCESS; }
  Status makeCurrentStatus() {
    if (!context_)
      return runtime::failedPrecondition("the CUDA backend has no context");
    return d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
  }
  /// A failed driver call in a destructor or release(): reported on stderr
  /// once per backend (nothing can be returned there).
  void logOnce(CUresult result, const char *what) {
    if (result == CUDA_SUCCESS || logged_)
      return;
    logged_ = true;
    const char *text = nullptr;
    if (d_.cuGetErrorString)
      d_.cuGetErrorString(result, &text);
    std::fprintf(stderr, "dsc: warning: %s failed while releasing CUDA resources: %s (%d)\n", what,
                 text ? text : "unknown error", int(result));
  }

  /// The device twin of t, allocated or grown as needed (mutex_ held).
  Expected<CUdeviceptr> ensure(const HostTensor &t, size_t minBytes = 0) {
    DeviceBuffer &buffer = buffers_[&t];
    if (buffer.view) { // an arena slot: sized by the capacity plan, never grown
      if (std::max(t.byteSize(), minBytes) > buffer.capacity)
        return runtime::internalError("a tensor of " +
                                      std::to_string(std::max(t.byteSize(), minBytes)) +
                                      " bytes in a device arena slot of " +
                                      std::to_string(buffer.capacity));
      return buffer.ptr;
    }
    size_t bytes = std::max<size_t>(std::max(t.byteSize(), minBytes), 1);
    if (Status s = grow(buffer, bytes, "tensor"); !s)
      return s;
    return buffer.ptr;
  }

  /// Entry `entry` of module `moduleIndex` of the plan (mutex_ held); each
  /// module is loaded once, on first use.
  Expected<CUfunction> function(const runtime::Plan &plan, int64_t moduleIndex,
                                const std::string &entry) {
    auto key = std::make_pair(moduleIndex, entry);
    if (auto it = functions_.find(key); it != functions_.end())
      return it->second;
    if (moduleIndex < 0 || size_t(moduleIndex) >= plan.modules.size())
      return runtime::failedPrecondition("entry '" + entry + "': module " +
                                         std::to_string(moduleIndex) + " is not in the plan");
    const runtime::Module &source = plan.modules[size_t(moduleIndex)];
    CUmodule module = nullptr;
    if (auto it = modules_.find(moduleIndex); it != modules_.end()) {
      module = it->second;
    } else {
      if (source.cubin.empty())
        return runtime::failedPrecondition("module '" + source.templateName + "' has no cubin");
      if (Status s = d_.check(d_.cuModuleLoadData(&module, source.cubin.data()),
                              "cuModuleLoadData(" + source.templateName + ")");
          !s)
        return s;
      modules_[moduleIndex] = module;
    }
    CUfunction fn = nullptr;
    if (Status s = d_.check(d_.cuModuleGetFunction(&fn, module, entry.c_str()),
                            "cuModuleGetFunction(" + entry + ")");
        !s)
      return s;
    functions_[key] = fn;
    return fn;
  }

  const CudaDriver &d_;
  CUdevice device_ = 0;
  CUcontext context_ = nullptr;
  CudaAdapterTable table_;
  bool syncEachLaunch_ = false; ///< CudaOptions::syncEachLaunch
  bool graphs_ = true;          ///< CudaOptions::graphs (off with syncEachLaunch)
  bool graphsVerbose_ = false;  ///< CudaOptions::logGraphs
  bool quadraticTopk_ = false;  ///< CudaOptions::quadraticTopk (CudaLaunchContext)
  bool cpuOrderKernels_ = false; ///< CudaOptions::cpuOrderKernels (CudaLaunchContext)
  bool logged_ = false;
  CUstream stream_ = nullptr; ///< every copy, memset and launch goes here
  std::vector<HostTensor *> pending_; ///< activations to zero at the next launch
  std::unordered_map<const HostTensor *, SessionState> sessions_;
  std::map<const runtime::CallInfo *, ActiveCall> activeCalls_;
  SessionState *capturing_ = nullptr;
  uint64_t generation_ = 0; ///< bumped when a device address goes away
  std::map<std::pair<const runtime::Launch *, int>, DeviceBuffer> scratch_;
  std::map<std::pair<int64_t, std::string>, DeviceBuffer> constants_;
  CUdeviceptr fallbackState_ = 0;
  long long fallbackHost_[3] = {0, 0, 0};
  mutable std::mutex mutex_; ///< guards buffers_, modules_, functions_ and logged_
  std::unordered_map<const HostTensor *, DeviceBuffer> buffers_;
  std::map<int64_t, CUmodule> modules_;
  std::map<std::pair<int64_t, std::string>, CUfunction> functions_;
};

} // namespace
} // namespace dsc::cuda

dsc::runtime::Expected<dsc::runtime::DeviceCopyBandwidth>
dsc::runtime::measureDeviceCopyBandwidth(size_t bytes, int iterations) {
  using dsc::cuda::CudaDriver;
  Expected<const CudaDriver *> driver = CudaDriver::get();
  if (!driver)
    return driver.status();
  const CudaDriver &d = *driver.value();
  int count = 0;
  if (Status s = d.check(d.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s)
    return s;
  if (count == 0)
    return unavailable("no CUDA device");
  CUdevice device = 0;
  if (Status s = d.check(d.cuDeviceGet(&device, 0), "cuDeviceGet"); !s)
    return s;
  CUcontext context = nullptr;
  if (Status s = d.check(d.cuDevicePrimaryCtxRetain(&context, device), "cuDevicePrimaryCtxRetain");
      !s)
    return s;
  DeviceCopyBandwidth result;
  result.bytes = bytes;
  result.iterations = std::max(1, iterations);
  char name[256] = {};
  if (d.cuDeviceGetName(name, sizeof(name) - 1, device) == CUDA_SUCCESS)
    result.device = name;
  CUdeviceptr src = 0, dst = 0;
  Status status = d.check(d.cuCtxSetCurrent(context), "cuCtxSetCurrent");
  if (status)
    status = d.check(d.cuMemAlloc(&src, bytes), "cuMemAlloc(" + std::to_string(bytes) + ")");
  if (status)
    status = d.check(d.cuMemAlloc(&dst, bytes), "cuMemAlloc(" + std::to_string(bytes) + ")");
  if (status)
    status = d.check(d.cuMemsetD8(src, 1, bytes), "cuMemsetD8");
  if (status) // warm-up
    status = d.check(d.cuMemcpyDtoD(dst, src, bytes), "cuMemcpyDtoD");
  if (status)
    status = d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
  if (status) {
    auto start = std::chrono::steady_clock::now();
    for (int i = 0; status && i < result.iterations; ++i)
      status = d.check(d.cuMemcpyDtoD(i % 2 ? src : dst, i % 2 ? dst : src, bytes), "cuMemcpyDtoD");
    if (status)
      status = d.check(d.cuCtxSynchronize(), "cuCtxSynchronize");
    result.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }
  for (CUdeviceptr p : {src, dst})
    if (p)
      if (Status f = d.check(d.cuMemFree(p), "cuMemFree"); !f && status)
        status = f;
  if (Status f = d.check(d.cuDevicePrimaryCtxRelease(device), "cuDevicePrimaryCtxRelease");
      !f && status)
    status = f;
  if (!status)
    return status;
  result.gbps = result.seconds > 0
                    ? 2.0 * double(bytes) * result.iterations / result.seconds / 1e9
                    : 0;
  return result;
}

dsc::runtime::Expected<std::unique_ptr<dsc::runtime::Backend>>
dsc::runtime::createCudaBackend(const CudaOptions &options) {
  return dsc::cuda::CudaBackend::create(options);
}
