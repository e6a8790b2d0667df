//===- CudaSession.cpp - The CUDA backend's state of one Session ------------===//
#include "runtime/cuda/CudaSession.h"

#include "runtime/cuda/hal/ReleaseLog.h"

#include <algorithm>
#include <cstdio>

namespace dsc::cuda {

using runtime::Expected;
using runtime::Status;

CudaSession::CudaSession(CudaEngineState &engine, const runtime::Plan &plan)
    : engine_(engine), plan_(plan), programs_(plan.programs.size()),
      states_(plan.states.size()) {
  for (size_t p = 0; p < plan.programs.size(); ++p) {
    programs_[p].name = plan.programs[p].name;
    programs_[p].scratch.resize(plan.programs[p].launches.size());
  }
}

CudaSession::~CudaSession() {
  // Everything below frees device memory or graphs of the shared context and
  // stream: under the backend's mutex, with the context current, after the
  // stream finished the session's work; never inside another session's
  // capture (the synchronisation would break it).
  std::unique_lock<std::mutex> lock(engine_.mutex);
  engine_.captureEnded.wait(lock, [&] { return !engine_.capturing || engine_.capturing == this; });
  const CudaDriver &d = engine_.driver();
  if (Status s = engine_.device.makeCurrent(); !s)
    std::fprintf(stderr, "dsc: warning: %s\n", s.message().c_str());
  abandonCapture();
  hal::logReleaseFailure(d, d.cuStreamSynchronize(engine_.stream()), "cuStreamSynchronize");
  if (engine_.logGraphs)
    for (const GraphCache::Entry &e : graphs_.entries())
      if (e.replays)
        std::fprintf(stderr, "dsc: CUDA graph replayed %lld times\n", e.replays);
  graphs_ = GraphCache();
  programs_.clear();
  states_.clear();
  pending_.clear();
}

size_t CudaSession::indexOf(const runtime::Program &program) const {
  const runtime::Program *first = plan_.programs.data();
  if (&program < first || &program >= first + plan_.programs.size())
    return programs_.size();
  return size_t(&program - first);
}

const CudaSession::Program *CudaSession::program(const std::string &name) const {
  for (const Program &p : programs_)
    if (p.name == name)
      return &p;
  return nullptr;
}

Status CudaSession::bindArena(size_t index, const runtime::Program &source,
                              const runtime::MemoryPlan &plan) {
  if (engine_.capturing)
    return runtime::internalError("bindArena during CUDA graph capture");
  if (index >= programs_.size() || plan.values.size() != source.values.size())
    return runtime::internalError("bindArena: the plan does not match the program");
  Program &p = programs_[index];
  const CudaDriver &d = engine_.driver();
  bool moved = false;
  const size_t need = std::max<size_t>(size_t(plan.peakBytes), 1);
  if (p.arena.size() < need) {
    if (p.arena) { // the stream may still use the old arena
      moved = true;
      if (Status s = engine_.device.synchronize(); !s)
        return s;
      p.arena.reset();
    }
    p.bound = false;
    Expected<hal::DeviceBuffer> arena =
        hal::DeviceBuffer::allocate(d, need, source.name + " activation arena");
    if (!arena)
      return arena.status();
    p.arena = std::move(arena.value());
  }
  p.bornAt.assign(source.launches.size(), {});
  pending_.clear();
  std::vector<DeviceRange> slots(source.values.size());
  const std::vector<int64_t> firstWriter = runtime::zeroingLaunches(source);
  for (size_t i = 0; i < source.values.size(); ++i) {
    const runtime::ValueMemory &m = plan.values[i];
    if (!m.planned)
      continue;
    if (m.offset + m.alignedBytes > p.arena.size())
      return runtime::internalError(source.name + ": value slot " + std::to_string(i) + " ('" +
                                    source.values[i].name + "') lies outside its device arena");
    DeviceRange range{p.arena.ptr() + m.offset, size_t(m.alignedBytes)};
    if (p.bound && i < p.slots.size() &&
        (p.slots[i].ptr != range.ptr || p.slots[i].bytes != range.bytes))
      moved = true;
    slots[i] = range;
    if (!range.bytes)
      continue;
    // Inputs: zeroed at the first launch (the token upload drops it); the
    // others right before their first writer (zeroingLaunches, CallPlan.h).
    if (m.first < 0 || i >= firstWriter.size() || firstWriter[i] < 0 ||
        size_t(firstWriter[i]) >= p.bornAt.size())
      pending_.push_back(range);
    else
      p.bornAt[size_t(firstWriter[i])].push_back(range);
  }
  p.slots = std::move(slots);
  p.bound = true;
  if (moved) // the program's graphs hold the old addresses
    graphs_.invalidate(int64_t(index));
  return Status::ok();
}

Expected<DeviceRange> CudaSession::resolve(runtime::TensorRef ref, size_t bytes) {
  using Kind = runtime::TensorRef::Kind;
  switch (ref.kind) {
  case Kind::Weight: {
    Expected<CUdeviceptr> p = engine_.weight(ref.index, bytes);
    if (!p)
      return p.status();
    return DeviceRange{*p, std::max<size_t>(bytes, 1)};
  }
  case Kind::State: {
    if (ref.index < 0 || size_t(ref.index) >= states_.size())
      return runtime::internalError("state " + std::to_string(ref.index) + " is not in the plan");
    hal::DeviceBuffer &b = states_[size_t(ref.index)];
    if (engine_.capturing && b.size() < std::max<size_t>(bytes, 1))
      return runtime::internalError("a device allocation (state) during CUDA graph capture");
    bool moved = false;
    if (Status s = b.growTo(engine_.driver(), bytes, engine_.stream(),
                            "state " + std::to_string(ref.index), &moved);
        !s)
      return s;
    if (moved) // every program's graphs may hold the old address
      graphs_.invalidate();
    return DeviceRange{b.ptr(), b.size()};
  }
  case Kind::Value: {
    if (ref.program < 0 || size_t(ref.program) >= programs_.size())
      return runtime::internalError("program " + std::to_string(ref.program) +
                                    " is not in the plan");
    const Program &p = programs_[size_t(ref.program)];
    if (!p.bound || ref.index < 0 || size_t(ref.index) >= p.slots.size() ||
        !p.slots[size_t(ref.index)].ptr)
      return runtime::internalError(p.name + ": value slot " + std::to_string(ref.index) +
                                    " has no place in the device arena (bindArena first)");
    const DeviceRange &range = p.slots[size_t(ref.index)];
    if (bytes > range.bytes)
      return runtime::internalError("a tensor of " + std::to_string(bytes) +
                                    " bytes in a device arena slot of " +
                                    std::to_string(range.bytes));
    return range;
  }
  }
  return runtime::internalError("resolve: unknown tensor kind");
}

const DeviceRange *CudaSession::find(runtime::TensorRef ref, DeviceRange &storage) const {
  using Kind = runtime::TensorRef::Kind;
  switch (ref.kind) {
  case Kind::Weight:
    if (const hal::DeviceBuffer *b = engine_.findWeight(ref.index)) {
      storage = {b->ptr(), b->size()};
      return &storage;
    }
    return nullptr;
  case Kind::State:
    if (ref.index >= 0 && size_t(ref.index) < states_.size() && states_[size_t(ref.index)]) {
      storage = {states_[size_t(ref.index)].ptr(), states_[size_t(ref.index)].size()};
      return &storage;
    }
    return nullptr;
  case Kind::Value:
    if (ref.program >= 0 && size_t(ref.program) < programs_.size()) {
      const Program &p = programs_[size_t(ref.program)];
      if (p.bound && ref.index >= 0 && size_t(ref.index) < p.slots.size() &&
          p.slots[size_t(ref.index)].ptr) {
        storage = p.slots[size_t(ref.index)];
        return &storage;
      }
    }
    return nullptr;
  }
  return nullptr;
}

Expected<CUdeviceptr> CudaSession::scratch(size_t program, size_t launch, size_t n, size_t bytes) {
  if (program >= programs_.size())
    return runtime::internalError("scratch: program " + std::to_string(program));
  Program &p = programs_[program];
  if (launch >= p.scratch.size())
    p.scratch.resize(launch + 1);
  std::vector<hal::DeviceBuffer> &site = p.scratch[launch];
  if (site.size() <= n)
    site.resize(n + 1);
  hal::DeviceBuffer &b = site[n];
  bytes = std::max<size_t>(bytes, 1);
  if (b.size() >= bytes)
    return b.ptr();
  if (engine_.capturing)
    return runtime::internalError("a device allocation (scratch) during CUDA graph capture");
  bool moved = false;
  if (Status s = b.growTo(engine_.driver(), bytes, engine_.stream(), "scratch", &moved); !s)
    return s;
  if (moved) // the program's graphs hold the old address
    graphs_.invalidate(int64_t(program));
  return b.ptr();
}

/// {startPos, tokens, prefill-like ? 1 + ring rows : 0} (the last word is
/// DSC_CALL_RING_ROWS in the kernels).
static void callStateWords(const runtime::CallGeometry &g, long long out[3]) {
  out[0] = g.startPos;
  out[1] = g.tokens;
  out[2] = g.prefillLike ? 1 + g.ringRows : 0;
}

Expected<CUdeviceptr> CudaSession::writeCallState(size_t program,
                                                  const runtime::CallGeometry &call) {
  Program &p = programs_.at(program);
  const CudaDriver &d = engine_.driver();
  if (!p.callState) {
    Expected<hal::DeviceBuffer> b = hal::DeviceBuffer::allocate(d, sizeof(p.callWords), "call state");
    if (!b)
      return b.status();
    p.callState = std::move(b.value());
  }
  callStateWords(call, p.callWords);
  p.replayWritten = false;
  if (Status s = d.check(d.cuMemcpyHtoDAsync(p.callState.ptr(), p.callWords, sizeof(p.callWords),
                                             engine_.stream()),
                         "cuMemcpyHtoDAsync(call state)");
      !s)
    return s;
  return p.callState.ptr();
}

Expected<CUdeviceptr> CudaSession::replayCallState(size_t program,
                                                   const runtime::CallGeometry &call) {
  if (engine_.capturing)
    return runtime::internalError("a CED replayed launch during CUDA graph capture");
  Program &p = programs_.at(program);
  const CudaDriver &d = engine_.driver();
  if (!p.replayState) {
    Expected<hal::DeviceBuffer> b =
        hal::DeviceBuffer::allocate(d, sizeof(p.replayWords), "replay call state");
    if (!b)
      return b.status();
    p.replayState = std::move(b.value());
  }
  long long want[3];
  callStateWords(call, want);
  if (p.replayWritten && std::equal(want, want + 3, p.replayWords))
    return p.replayState.ptr();
  std::copy(want, want + 3, p.replayWords);
  p.replayWritten = true;
  if (Status s = d.check(d.cuMemcpyHtoDAsync(p.replayState.ptr(), p.replayWords,
                                             sizeof(p.replayWords), engine_.stream()),
                         "cuMemcpyHtoDAsync(replay call state)");
      !s)
    return s;
  return p.replayState.ptr();
}

Status CudaSession::flushZeroing() {
  const CudaDriver &d = engine_.driver();
  for (const DeviceRange &r : pending_)
    if (Status s = d.check(d.cuMemsetD8Async(r.ptr, 0, r.bytes, engine_.stream()), "cuMemsetD8Async");
        !s)
      return s;
  pending_.clear();
  return Status::ok();
}

Status CudaSession::zeroBornAt(size_t program, size_t launch) {
  const Program &p = programs_.at(program);
  if (launch >= p.bornAt.size())
    return Status::ok();
  const CudaDriver &d = engine_.driver();
  for (const DeviceRange &r : p.bornAt[launch])
    if (Status s = d.check(d.cuMemsetD8Async(r.ptr, 0, r.bytes, launchStream()), "cuMemsetD8Async");
        !s)
      return s;
  return Status::ok();
}

void CudaSession::dropZeroing(CUdeviceptr ptr) {
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(),
                                [&](const DeviceRange &r) { return r.ptr == ptr; }),
                 pending_.end());
}

Status CudaSession::beginCapture(GraphCache::Entry &entry, size_t program,
                                 runtime::StepStreams branches) {
  if (engine_.capturing)
    return runtime::internalError("a CUDA graph capture is already open on the stream");
  // Streams and events are made before the capture starts.
  if (branches.schedule.streams > 1)
    if (Status s = engine_.reserveBranches(branches.schedule.streams - 1,
                                           branches.schedule.stream.size() + 1);
        !s)
      return s;
  Expected<hal::GraphCapture> capture = hal::GraphCapture::begin(engine_.driver(), engine_.stream());
  if (!capture)
    return capture.status();
  capture_ = std::move(capture.value());
  captureEntry_ = &entry;
  captureProgram_ = program;
  branches_ = std::move(branches);
  current_ = nullptr;
  engine_.capturing = this;
  return Status::ok();
}

CUstream CudaSession::branchStream(int stream) const {
  return stream <= 0 ? engine_.stream() : engine_.branchStreams[size_t(stream - 1)].get();
}

// Event i < steps is step i's; the last one is the fork's.
Status CudaSession::forkBranches() {
  if (!branched())
    return Status::ok();
  const hal::Event &fork = engine_.branchEvents[branches_.schedule.stream.size()];
  if (Status s = fork.record(engine_.stream()); !s)
    return s;
  for (int t = 1; t < branches_.schedule.streams; ++t)
    if (Status s = fork.waitOn(branchStream(t)); !s)
      return s;
  return Status::ok();
}

Status CudaSession::enterLaunch(size_t program, size_t launch) {
  if (!branched() || program != captureProgram_)
    return Status::ok();
  if (launch >= branches_.stepOf.size())
    return runtime::internalError("a captured launch " + std::to_string(launch) +
                                  " outside its call's steps");
  const size_t step = branches_.stepOf[launch];
  current_ = branchStream(branches_.schedule.stream[step]);
  for (int64_t i : branches_.schedule.waits[step])
    if (Status s = engine_.branchEvents[size_t(i)].waitOn(current_); !s)
      return s;
  return Status::ok();
}

Status CudaSession::leaveLaunch(size_t program, size_t launch) {
  if (!branched() || program != captureProgram_ || launch >= branches_.stepOf.size())
    return Status::ok();
  const size_t step = branches_.stepOf[launch];
  Status s = Status::ok();
  if (branches_.signals[step])
    s = engine_.branchEvents[step].record(launchStream());
  current_ = nullptr;
  return s;
}

Status CudaSession::endCapture(long long position) {
  if (!capture_.active())
    return Status::ok();
  GraphCache::Entry *entry = captureEntry_;
  captureEntry_ = nullptr;
  // The branches rejoin the origin stream (a capture ends there).
  Status joined = Status::ok();
  if (branched())
    for (int64_t j : branches_.schedule.joins)
      if (joined)
        joined = engine_.branchEvents[size_t(j)].waitOn(engine_.stream());
  branches_ = {};
  current_ = nullptr;
  if (!joined) {
    capture_.abandon();
    if (entry)
      entry->disabled = true;
  }
  if (engine_.capturing == this) {
    engine_.capturing = nullptr;
    engine_.captureEnded.notify_all();
  }
  if (!joined)
    return joined;
  Expected<hal::Graph> graph = capture_.end();
  if (!graph) {
    if (entry)
      entry->disabled = true;
    return graph.status();
  }
  if (!entry)
    return runtime::internalError("a CUDA graph capture without its cache entry");
  entry->graph = std::move(graph.value());
  if (engine_.logGraphs)
    std::fprintf(stderr, "dsc: CUDA graph captured for %s at position %lld\n",
                 entry->program >= 0 && size_t(entry->program) < programs_.size()
                     ? programs_[size_t(entry->program)].name.c_str()
                     : "?",
                 position);
  // Capture recorded the call without running it: run it now.
  return entry->graph.launch(engine_.stream());
}

void CudaSession::abandonCapture() {
  if (!capture_.active())
    return;
  capture_.abandon();
  if (captureEntry_)
    captureEntry_->disabled = true; // graphs stay off for this call shape
  captureEntry_ = nullptr;
  branches_ = {};
  current_ = nullptr;
  if (engine_.capturing == this) {
    engine_.capturing = nullptr;
    engine_.captureEnded.notify_all();
  }
}

} // namespace dsc::cuda
