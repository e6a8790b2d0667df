//===- FakeCudaDriver.h - A CUDA driver table that needs no GPU -------------===//
//
// What: fakeCudaDriver() returns a CudaDriver whose entry points run on the
// host: device memory is host memory (cuMemAlloc is aligned_alloc, copies and
// memsets are memcpy/memset, run at once), modules and functions are tokens,
// kernels do nothing (plain and dependent launches alike; every module
// carries the prologue mark unless FakeDriverState::modulesMarked is
// cleared), and stream capture records instead of running (a
// captured launch, copy or memset is counted and runs at each cuGraphLaunch
// only as a count). Streams are distinct handles; events carry a vector
// clock of the work queued on each stream, so a capture that spreads over
// several streams is checked like the driver does: a stream joins the capture
// by waiting for an event of a capturing stream (work on a stream outside
// the capture is counted as misuse), and cuStreamEndCapture fails with
// CUDA_ERROR_STREAM_CAPTURE_UNJOINED unless the origin stream has waited for
// all work of the others. FakeDriverState counts everything the tests check:
// live allocations and bytes, loaded modules, function lookups, contexts
// retained, streams, captures, graphs, launches, and misuse (a stream
// synchronisation or an allocation during a capture, a free of an unknown
// pointer).
//
// Why: the CUDA backend's ownership and graph bookkeeping (sessions,
// arenas, graph per call shape, what is freed when) is logic that needs no
// device; kernels' numerics are checked on the GPU (scripts/*-cuda-*.sh).
//
// Invariants: one process-wide state (the table holds plain function
// pointers); reset() between tests; not thread-safe.
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_UNIT_CUDA_BACKEND_FAKECUDADRIVER_H
#define DSC_TEST_UNIT_CUDA_BACKEND_FAKECUDADRIVER_H

#include "runtime/cuda/CudaDriver.h"

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>

namespace dsc::test {

struct FakeDriverState {
  std::map<CUdeviceptr, size_t> live; ///< allocations: address -> bytes
  long long allocs = 0, frees = 0, badFrees = 0;
  long long contextsRetained = 0, streamsLive = 0;
  long long modulesLive = 0, modulesLoaded = 0, functionLookups = 0;
  long long launches = 0;         ///< kernels run eagerly (or by a graph launch)
  /// Of those, launched by cuLaunchKernelEx with programmatic stream
  /// serialisation (eager or captured).
  long long dependentLaunches = 0;
  bool modulesMarked = true;      ///< cuModuleGetGlobal finds "dsc_kernel_prologue"
  bool capturing = false;
  long long capturedLaunches = 0; ///< in the capture in progress
  long long captures = 0, capturesEnded = 0, graphsLive = 0, execsLive = 0, graphLaunches = 0;
  long long syncsDuringCapture = 0, allocsDuringCapture = 0;
  long long failAllocAfter = -1;  ///< > 0: the n-th next cuMemAlloc fails
  std::map<CUgraphExec, long long> execLaunches; ///< kernels per instantiated graph
  long long nextStream = 0, eventsLive = 0, nextEvent = 0;
  /// Per stream: how much work it has queued, and what it knows complete
  /// (vector clocks over streams); per event: the clock at its record.
  std::map<CUstream, long long> work;
  std::map<CUstream, std::map<CUstream, long long>> clock;
  std::map<CUevent, std::map<CUstream, long long>> eventClock;
  CUstream captureOrigin = nullptr;
  std::set<CUstream> captureStreams;  ///< the origin and the streams that joined
  long long branchLaunches = 0;       ///< captured kernels on a stream other than the origin
  long long captureSwitches = 0;      ///< captured kernels on another stream than the one before
  CUstream lastCaptured = nullptr;    ///< the stream of the last captured kernel
  long long workOutsideCapture = 0;   ///< work on a non-captured stream during a capture
  long long unjoinedEnds = 0;         ///< cuStreamEndCapture with unjoined work

  size_t liveBytes() const {
    size_t n = 0;
    for (const auto &[p, b] : live)
      n += b;
    return n;
  }
  void reset() { *this = FakeDriverState(); }
  /// Work queued on `stream` (a launch, copy or memset).
  void queue(CUstream stream) {
    ++work[stream];
    clock[stream][stream] = work[stream];
    if (capturing && !captureStreams.count(stream))
      ++workOutsideCapture;
  }
};

inline FakeDriverState &fakeState() {
  static FakeDriverState state;
  return state;
}

inline const cuda::CudaDriver &fakeCudaDriver() {
  static cuda::CudaDriver d = [] {
    cuda::CudaDriver d;
    d.cuInit = [](unsigned) -> CUresult { return CUDA_SUCCESS; };
    d.cuDeviceGetCount = [](int *n) -> CUresult { *n = 1; return CUDA_SUCCESS; };
    d.cuDeviceGet = [](CUdevice *dev, int ordinal) -> CUresult {
      if (ordinal != 0)
        return CUDA_ERROR_INVALID_DEVICE;
      *dev = 0;
      return CUDA_SUCCESS;
    };
    d.cuDeviceGetName = [](char *name, int len, CUdevice) -> CUresult {
      std::strncpy(name, "fake device", size_t(len));
      return CUDA_SUCCESS;
    };
    d.cuDevicePrimaryCtxRetain = [](CUcontext *c, CUdevice) -> CUresult {
      ++fakeState().contextsRetained;
      *c = reinterpret_cast<CUcontext>(0x1);
      return CUDA_SUCCESS;
    };
    d.cuDevicePrimaryCtxRelease = [](CUdevice) -> CUresult {
      --fakeState().contextsRetained;
      return CUDA_SUCCESS;
    };
    d.cuCtxSetCurrent = [](CUcontext) -> CUresult { return CUDA_SUCCESS; };
    d.cuCtxSynchronize = []() -> CUresult { return CUDA_SUCCESS; };
    d.cuStreamCreate = [](CUstream *s, unsigned) -> CUresult {
      ++fakeState().streamsLive;
      *s = reinterpret_cast<CUstream>(uintptr_t(0x2 + 0x10 * fakeState().nextStream++));
      return CUDA_SUCCESS;
    };
    d.cuEventCreate = [](CUevent *e, unsigned) -> CUresult {
      ++fakeState().eventsLive;
      *e = reinterpret_cast<CUevent>(uintptr_t(0x8000 + 0x10 * fakeState().nextEvent++));
      return CUDA_SUCCESS;
    };
    d.cuEventDestroy = [](CUevent e) -> CUresult {
      --fakeState().eventsLive;
      fakeState().eventClock.erase(e);
      return CUDA_SUCCESS;
    };
    d.cuEventRecord = [](CUevent e, CUstream st) -> CUresult {
      fakeState().eventClock[e] = fakeState().clock[st];
      return CUDA_SUCCESS;
    };
    d.cuStreamWaitEvent = [](CUstream st, CUevent e, unsigned) -> CUresult {
      FakeDriverState &s = fakeState();
      auto it = s.eventClock.find(e);
      if (it == s.eventClock.end())
        return CUDA_SUCCESS; // never recorded: nothing to wait for
      for (const auto &[t, n] : it->second)
        s.clock[st][t] = std::max(s.clock[st][t], n);
      // Waiting for work of a capturing stream joins the capture.
      if (s.capturing)
        for (const auto &[t, n] : it->second)
          if (s.captureStreams.count(t))
            s.captureStreams.insert(st);
      return CUDA_SUCCESS;
    };
    d.cuStreamDestroy = [](CUstream) -> CUresult {
      --fakeState().streamsLive;
      return CUDA_SUCCESS;
    };
    d.cuStreamSynchronize = [](CUstream) -> CUresult {
      if (fakeState().capturing) {
        ++fakeState().syncsDuringCapture;
        return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
      }
      return CUDA_SUCCESS;
    };
    d.cuMemAlloc = [](CUdeviceptr *p, size_t bytes) -> CUresult {
      FakeDriverState &s = fakeState();
      if (s.failAllocAfter > 0 && --s.failAllocAfter == 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
      if (s.capturing)
        ++s.allocsDuringCapture;
      void *m = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
      if (!m)
        return CUDA_ERROR_OUT_OF_MEMORY;
      *p = CUdeviceptr(reinterpret_cast<uintptr_t>(m));
      s.live[*p] = bytes;
      ++s.allocs;
      return CUDA_SUCCESS;
    };
    d.cuMemFree = [](CUdeviceptr p) -> CUresult {
      FakeDriverState &s = fakeState();
      auto it = s.live.find(p);
      if (it == s.live.end()) {
        ++s.badFrees;
        return CUDA_ERROR_INVALID_VALUE;
      }
      s.live.erase(it);
      ++s.frees;
      std::free(reinterpret_cast<void *>(uintptr_t(p)));
      return CUDA_SUCCESS;
    };
    d.cuMemcpyHtoD = [](CUdeviceptr dst, const void *src, size_t n) -> CUresult {
      std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, n);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyDtoH = [](void *dst, CUdeviceptr src, size_t n) -> CUresult {
      std::memcpy(dst, reinterpret_cast<void *>(uintptr_t(src)), n);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyDtoD = [](CUdeviceptr dst, CUdeviceptr src, size_t n) -> CUresult {
      std::memmove(reinterpret_cast<void *>(uintptr_t(dst)),
                   reinterpret_cast<void *>(uintptr_t(src)), n);
      return CUDA_SUCCESS;
    };
    d.cuMemsetD8 = [](CUdeviceptr dst, unsigned char v, size_t n) -> CUresult {
      std::memset(reinterpret_cast<void *>(uintptr_t(dst)), v, n);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyHtoDAsync = [](CUdeviceptr dst, const void *src, size_t n, CUstream) -> CUresult {
      if (!fakeState().capturing)
        std::memcpy(reinterpret_cast<void *>(uintptr_t(dst)), src, n);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyDtoHAsync = [](void *dst, CUdeviceptr src, size_t n, CUstream) -> CUresult {
      if (!fakeState().capturing)
        std::memcpy(dst, reinterpret_cast<void *>(uintptr_t(src)), n);
      return CUDA_SUCCESS;
    };
    d.cuMemcpyDtoDAsync = [](CUdeviceptr dst, CUdeviceptr src, size_t n, CUstream st) -> CUresult {
      fakeState().queue(st);
      if (!fakeState().capturing)
        std::memmove(reinterpret_cast<void *>(uintptr_t(dst)),
                     reinterpret_cast<void *>(uintptr_t(src)), n);
      return CUDA_SUCCESS;
    };
    d.cuMemsetD8Async = [](CUdeviceptr dst, unsigned char v, size_t n, CUstream st) -> CUresult {
      fakeState().queue(st);
      if (!fakeState().capturing)
        std::memset(reinterpret_cast<void *>(uintptr_t(dst)), v, n);
      return CUDA_SUCCESS;
    };
    d.cuModuleLoadData = [](CUmodule *m, const void *) -> CUresult {
      ++fakeState().modulesLive;
      ++fakeState().modulesLoaded;
      *m = reinterpret_cast<CUmodule>(0x10 + fakeState().modulesLoaded);
      return CUDA_SUCCESS;
    };
    d.cuModuleUnload = [](CUmodule) -> CUresult {
      --fakeState().modulesLive;
      return CUDA_SUCCESS;
    };
    d.cuModuleGetFunction = [](CUfunction *f, CUmodule, const char *name) -> CUresult {
      if (std::strcmp(name, "missing") == 0)
        return CUDA_ERROR_NOT_FOUND;
      ++fakeState().functionLookups;
      *f = reinterpret_cast<CUfunction>(0x100 + fakeState().functionLookups);
      return CUDA_SUCCESS;
    };
    d.cuFuncSetAttribute = [](CUfunction, CUfunction_attribute, int) -> CUresult {
      return CUDA_SUCCESS;
    };
    d.cuDeviceGetAttribute = [](int *v, CUdevice_attribute, CUdevice) -> CUresult {
      *v = 0;
      return CUDA_SUCCESS;
    };
    d.cuDriverGetVersion = [](int *v) -> CUresult { *v = CUDA_VERSION; return CUDA_SUCCESS; };
    d.cuLaunchKernel = [](CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                          unsigned, CUstream, void **, void **) -> CUresult {
      FakeDriverState &s = fakeState();
      if (s.capturing)
        ++s.capturedLaunches;
      else
        ++s.launches;
      return CUDA_SUCCESS;
    };
    d.cuLaunchKernelEx = [](const CUlaunchConfig *config, CUfunction, void **,
                            void **) -> CUresult {
      FakeDriverState &s = fakeState();
      s.queue(config->hStream);
      if (s.capturing && config->hStream != s.captureOrigin)
        ++s.branchLaunches;
      if (s.capturing) {
        s.captureSwitches += s.lastCaptured && s.lastCaptured != config->hStream ? 1 : 0;
        s.lastCaptured = config->hStream;
      }
      for (unsigned i = 0; i < config->numAttrs; ++i)
        if (config->attrs[i].id == CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION &&
            config->attrs[i].value.programmaticStreamSerializationAllowed)
          ++s.dependentLaunches;
      if (s.capturing)
        ++s.capturedLaunches;
      else
        ++s.launches;
      return CUDA_SUCCESS;
    };
    d.cuModuleGetGlobal = [](CUdeviceptr *p, size_t *bytes, CUmodule, const char *name) -> CUresult {
      if (!fakeState().modulesMarked || std::strcmp(name, "dsc_kernel_prologue") != 0)
        return CUDA_ERROR_NOT_FOUND;
      *p = 0x4000;
      *bytes = 4;
      return CUDA_SUCCESS;
    };
    d.cuGetErrorName = [](CUresult, const char **name) -> CUresult {
      *name = "CUDA_ERROR_FAKE";
      return CUDA_SUCCESS;
    };
    d.cuGetErrorString = [](CUresult, const char **text) -> CUresult {
      *text = "fake driver error";
      return CUDA_SUCCESS;
    };
    d.cuStreamBeginCapture = [](CUstream st, CUstreamCaptureMode) -> CUresult {
      FakeDriverState &s = fakeState();
      if (s.capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
      s.capturing = true;
      s.captureOrigin = st;
      s.captureStreams = {st};
      s.clock[st][st] = s.work[st]; // an event recorded now carries the origin's mark
      s.capturedLaunches = 0;
      ++s.captures;
      return CUDA_SUCCESS;
    };
    d.cuStreamEndCapture = [](CUstream st, CUgraph *g) -> CUresult {
      FakeDriverState &s = fakeState();
      if (!s.capturing)
        return CUDA_ERROR_ILLEGAL_STATE;
      s.capturing = false;
      for (CUstream t : s.captureStreams)
        if (t != st && s.clock[st][t] < s.work[t]) {
          ++s.unjoinedEnds;
          s.captureStreams.clear();
          return CUDA_ERROR_STREAM_CAPTURE_UNJOINED;
        }
      s.captureStreams.clear();
      ++s.capturesEnded;
      ++s.graphsLive;
      // The graph token carries the launch count.
      *g = reinterpret_cast<CUgraph>(uintptr_t(0x1000 + s.capturedLaunches));
      return CUDA_SUCCESS;
    };
    d.cuGraphInstantiateWithFlags = [](CUgraphExec *e, CUgraph g, unsigned long long) -> CUresult {
      FakeDriverState &s = fakeState();
      static uintptr_t next = 0x100000;
      *e = reinterpret_cast<CUgraphExec>(next += 16);
      s.execLaunches[*e] = (long long)(reinterpret_cast<uintptr_t>(g) - 0x1000);
      ++s.execsLive;
      return CUDA_SUCCESS;
    };
    d.cuGraphLaunch = [](CUgraphExec e, CUstream) -> CUresult {
      FakeDriverState &s = fakeState();
      auto it = s.execLaunches.find(e);
      if (it == s.execLaunches.end())
        return CUDA_ERROR_INVALID_VALUE;
      ++s.graphLaunches;
      s.launches += it->second;
      return CUDA_SUCCESS;
    };
    d.cuGraphExecDestroy = [](CUgraphExec e) -> CUresult {
      FakeDriverState &s = fakeState();
      if (!s.execLaunches.erase(e))
        return CUDA_ERROR_INVALID_VALUE;
      --s.execsLive;
      return CUDA_SUCCESS;
    };
    d.cuGraphDestroy = [](CUgraph) -> CUresult {
      --fakeState().graphsLive;
      return CUDA_SUCCESS;
    };
    return d;
  }();
  return d;
}

} // namespace dsc::test

#endif // DSC_TEST_UNIT_CUDA_BACKEND_FAKECUDADRIVER_H
