//===- KernelHarness.h - Run and time one kernel template's entry on the GPU ===//
//
// What: KernelHarness compiles a kernel template (codegen::compileKernel,
// sm_90a), loads it on device 0 (hal::Device, hal::Executable) and launches
// one entry on buffers the caller uploads, synchronously, so a test can
// compare a kernel's output with the CPU reference (runtime/cpu/kernels) at
// shapes of its choosing, without a plan or a model
// (test/unit/cuda/kernels); timeSequence replays a sequence of launches
// from a CUDA graph and returns the time per pass (dsc-kernel-bench). Plain
// launches: no programmatic dependent launch (the kernels' prologue wait is
// then a no-op), unlike the runtime's default.
// Why: the fast kernels were only checked through whole-model runs (the
// golden gates), which say that something moved but not which kernel at
// which shape; a kernel under change needs a test of its own (issue 11).
// Invariants: open() returns null with a reason when there is no CUDA
// driver, no device or no NVRTC (the tests then skip); buffers live as long
// as the harness; uploads and downloads complete on the harness's stream;
// launch() synchronises, so a fault names the entry (a fault leaves the
// context unusable: later launches fail too); timeSequence() checks each
// launch that way before it captures them.
//===----------------------------------------------------------------------===//
#ifndef DSC_TOOLS_COMMON_KERNELHARNESS_H
#define DSC_TOOLS_COMMON_KERNELHARNESS_H

#include "codegen/KernelCompiler.h"
#include "runtime/cuda/hal/Device.h"
#include "runtime/cuda/hal/DeviceBuffer.h"
#include "runtime/cuda/hal/Executable.h"
#include "runtime/cuda/hal/Graph.h"

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace dsc::tools {

class KernelHarness {
public:
  /// The harness, or null with `why` set (no driver, device or NVRTC).
  static std::unique_ptr<KernelHarness> open(std::string &why) {
    if (codegen::nvrtcVersion().empty()) {
      why = "NVRTC not available in this build";
      return nullptr;
    }
    auto driver = cuda::CudaDriver::get();
    if (!driver) {
      why = driver.status().message();
      return nullptr;
    }
    auto device = cuda::hal::Device::open(**driver, 0);
    if (!device) {
      why = device.status().message();
      return nullptr;
    }
    if (runtime::Status s = device->makeCurrent(); !s) {
      why = s.message();
      return nullptr;
    }
    return std::unique_ptr<KernelHarness>(new KernelHarness(std::move(device.value())));
  }

  const cuda::CudaDriver &driver() const { return device_.driver(); }

  /// -D NAME=VALUE for every kernel compiled after this call (a kernel's
  /// compile-time knobs; the content-keyed cache keys on them).
  void setDefines(std::vector<std::pair<std::string, std::string>> defines) {
    options_.defines = std::move(defines);
  }

  /// Device copy of `bytes` bytes at `data` (null: zero-filled), complete on
  /// return (copied on the harness's stream, which is non-blocking: the
  /// legacy-stream cuMemcpyHtoD could still be in flight when a launch reads
  /// it). 0 on failure; the first failure makes every later launch fail.
  CUdeviceptr upload(const void *data, size_t bytes) {
    auto b =
        cuda::hal::DeviceBuffer::allocate(driver(), bytes ? bytes : 1, "kernel harness buffer");
    if (!b) {
      fail(b.status());
      return 0;
    }
    const CUdeviceptr p = b->ptr();
    const cuda::CudaDriver &d = driver();
    fail(data ? d.check(d.cuMemcpyHtoDAsync(p, data, bytes, device_.stream()), "cuMemcpyHtoDAsync")
              : d.check(d.cuMemsetD8Async(p, 0, bytes ? bytes : 1, device_.stream()),
                        "cuMemsetD8Async"));
    fail(device_.synchronize());
    buffers_.push_back(std::move(b.value()));
    return p;
  }
  template <typename T> CUdeviceptr upload(const std::vector<T> &v) {
    return upload(v.data(), v.size() * sizeof(T));
  }
  /// `count` elements at `p` (after everything queued on the stream).
  template <typename T> std::vector<T> download(CUdeviceptr p, size_t count) {
    std::vector<T> v(count);
    const cuda::CudaDriver &d = driver();
    fail(d.check(d.cuMemcpyDtoHAsync(v.data(), p, count * sizeof(T), device_.stream()),
                 "cuMemcpyDtoHAsync"));
    fail(device_.synchronize());
    return v;
  }
  /// The first failure of an upload or download (ok if none).
  const runtime::Status &status() const { return status_; }

  /// Launches `entry` of template `name` (compiled and loaded on first use)
  /// and waits for it; the status names the entry on failure.
  runtime::Status launch(const std::string &name, const std::string &entry, unsigned grid,
                         unsigned block, size_t sharedBytes, std::vector<void *> args) {
    return launch2D(name, entry, grid, 1, block, sharedBytes, std::move(args));
  }
  /// The same with a grid of gridX x gridY blocks.
  runtime::Status launch2D(const std::string &name, const std::string &entry, unsigned gridX,
                           unsigned gridY, unsigned block, size_t sharedBytes,
                           std::vector<void *> args) {
    if (runtime::Status s = enqueue(name, entry, gridX, gridY, block, sharedBytes, args, false);
        !s)
      return s;
    return device_.synchronize();
  }

  /// One launch of a sequence (LaunchSequence): the arguments' storage must
  /// outlive the call that takes the sequence.
  struct Launch {
    std::string name, entry;
    unsigned gridX = 1, gridY = 1, block = 256;
    size_t sharedBytes = 0;
    std::vector<void *> args;
    bool dependent = false; ///< in the graph: a programmatic dependent launch (PDL)
  };
  /// Seconds per pass of `steps`: each launched once and checked (with a
  /// synchronisation), then the whole sequence captured into one CUDA graph,
  /// replayed once to warm up and `replays` times timed together (no host
  /// launch cost; back-to-back launches as in a decode step's graph).
  runtime::Expected<double> timeSequence(const std::vector<Launch> &steps, int replays) {
    for (const Launch &l : steps)
      if (runtime::Status s =
              launch2D(l.name, l.entry, l.gridX, l.gridY, l.block, l.sharedBytes, l.args);
          !s)
        return s;
    auto capture = cuda::hal::GraphCapture::begin(driver(), device_.stream());
    if (!capture)
      return capture.status();
    for (const Launch &l : steps) {
      std::vector<void *> args = l.args;
      if (runtime::Status s =
              enqueue(l.name, l.entry, l.gridX, l.gridY, l.block, l.sharedBytes, args, l.dependent);
          !s)
        return s;
    }
    auto graph = capture->end();
    if (!graph)
      return graph.status();
    if (runtime::Status s = graph->launch(device_.stream()); !s)
      return s;
    if (runtime::Status s = device_.synchronize(); !s)
      return s;
    const auto start = std::chrono::steady_clock::now();
    for (int r = 0; r < replays; ++r)
      if (runtime::Status s = graph->launch(device_.stream()); !s)
        return s;
    if (runtime::Status s = device_.synchronize(); !s)
      return s;
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
           double(replays);
  }

private:
  void fail(const runtime::Status &s) {
    if (status_ && !s)
      status_ = s;
  }
  runtime::Status enqueue(const std::string &name, const std::string &entry, unsigned gridX,
                          unsigned gridY, unsigned block, size_t sharedBytes,
                          std::vector<void *> &args, bool dependent) {
    if (!status_)
      return status_; // an upload failed: the operands are not there
    auto module = modules_.find(name);
    if (module == modules_.end()) {
      auto compiled = codegen::compileKernel(name, options_);
      if (!compiled)
        return compiled.status();
      cubins_[name] = compiled->cubin;
      auto loaded = cuda::hal::Executable::load(driver(), cubins_[name].data(), name);
      if (!loaded)
        return loaded.status();
      module = modules_.emplace(name, std::move(loaded.value())).first;
    }
    auto fn = module->second.function(entry);
    if (!fn)
      return fn.status();
    const cuda::hal::LaunchShape shape{{gridX, gridY, 1}, {block, 1, 1}, sharedBytes};
    return cuda::hal::launchKernel(driver(), *fn, shape, device_.stream(), args.data(),
                                   dependent && module->second.waitsForPredecessor(), entry);
  }

  explicit KernelHarness(cuda::hal::Device device) : device_(std::move(device)) {}
  cuda::hal::Device device_;
  std::vector<cuda::hal::DeviceBuffer> buffers_;
  runtime::Status status_ = runtime::Status::ok();
  codegen::KernelCompileOptions options_;
  std::map<std::string, std::vector<uint8_t>> cubins_;
  std::map<std::string, cuda::hal::Executable> modules_;
};

/// cuLaunchKernel's argument array: pointers to the arguments.
template <typename... T> std::vector<void *> kernelArgs(T &...a) {
  return {const_cast<void *>(static_cast<const void *>(&a))...};
}

} // namespace dsc::tools

#endif // DSC_TOOLS_COMMON_KERNELHARNESS_H
