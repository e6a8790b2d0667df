//===- CudaBackend.cpp - Runs plan launches on an NVIDIA GPU -----------------===//
//
// Every value the Session holds has a device twin (allocated on first use,
// grown when a call needs more). Weights are uploaded once by the Engine,
// states when a Session resets, token ids per call; activations are zeroed on
// the device at the start of each call, like the host tensors. Kernels come
// from the plan's cubins (one module per kernel specialisation, loaded on
// first launch) and are launched by the adapters in CudaAdapters*.cpp.
// DSC_CUDA_SYNC=1 synchronises after every launch so that a fault names its
// launch.
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
  static Expected<std::unique_ptr<runtime::Backend>> create() {
    Expected<const CudaDriver *> driver = CudaDriver::get();
    if (!driver)
      return driver.status();
    std::unique_ptr<CudaBackend> backend(new CudaBackend(*driver.value()));
    if (runtime::Status s = backend->init(); !s)
      return s;
    return std::unique_ptr<runtime::Backend>(std::move(backend));
  }

  ~CudaBackend() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (context_)
      logOnce(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
    for (auto &[tensor, buffer] : buffers_)
      if (buffer.ptr)
        logOnce(d_.cuMemFree(buffer.ptr), "cuMemFree");
    buffers_.clear();
    for (auto &[index, module] : modules_)
      logOnce(d_.cuModuleUnload(module), "cuModuleUnload");
    if (context_)
      logOnce(d_.cuDevicePrimaryCtxRelease(device_), "cuDevicePrimaryCtxRelease");
  }

  void release(const HostTensor &t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = buffers_.find(&t);
    if (it == buffers_.end())
      return;
    if (it->second.ptr && makeCurrent())
      logOnce(d_.cuMemFree(it->second.ptr), "cuMemFree");
    buffers_.erase(it);
  }

  const char *name() const override { return "cuda"; }
  bool deviceResident() const override { return true; }

  Status check(const runtime::PlanModel &plan) const override {
    for (const runtime::KernelSpec &kernel : plan.kernels) {
      if (!table_.count(kernel.name))
        return runtime::failedPrecondition("the CUDA backend has no kernel '" + kernel.name + "'");
      if (kernel.cubin.empty())
        return runtime::failedPrecondition("kernel '" + kernel.name +
                                           "' has no cubin in the plan: compile it with "
                                           "dsc-compile --gpu-arch=sm_90a");
    }
    return Status::ok();
  }

  Status beginCall(std::span<HostTensor *const> activations) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    for (HostTensor *t : activations) {
      Expected<CUdeviceptr> ptr = ensure(*t);
      if (!ptr)
        return ptr.status();
      if (t->byteSize())
        if (Status s = d_.check(d_.cuMemsetD8(*ptr, 0, t->byteSize()), "cuMemsetD8"); !s)
          return s;
    }
    return Status::ok();
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
    return d_.check(d_.cuMemcpyHtoD(*ptr, t.bytes(), t.byteSize()), "cuMemcpyHtoD");
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
    return d_.check(d_.cuMemcpyHtoD(*ptr + offset, data, bytes), "cuMemcpyHtoD (chunk)");
  }

  Status synchronize() override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    return d_.check(d_.cuCtxSynchronize(), "cuCtxSynchronize");
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
    if (Status s = d_.check(d_.cuCtxSynchronize(), "cuCtxSynchronize"); !s)
      return s;
    return d_.check(d_.cuMemcpyDtoH(t.bytes(), it->second.ptr, t.byteSize()), "cuMemcpyDtoH");
  }

  Status launch(runtime::LaunchContext &c) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (Status s = makeCurrentStatus(); !s)
      return s;
    auto it = table_.find(c.kernel.name);
    if (it == table_.end())
      return runtime::failedPrecondition("the CUDA backend has no kernel '" + c.kernel.name + "'");
    Context context(*this, c);
    for (size_t i = 0; i < c.inputs.size(); ++i) {
      if (Status s = context.bind(*c.inputs[i], context.inputTensors[i]); !s)
        return s;
      context.inputs.push_back(&context.inputTensors[i]);
    }
    for (size_t i = 0; i < c.outputs.size(); ++i) {
      if (Status s = context.bind(*c.outputs[i], context.outputTensors[i]); !s)
        return s;
      context.outputs.push_back(&context.outputTensors[i]);
    }
    Status status = it->second(context);
    for (CUdeviceptr p : context.scratchBuffers)
      if (Status f = d_.check(d_.cuMemFree(p), "cuMemFree (scratch)"); !f && status)
        status = f;
    if (status && syncEachLaunch_)
      status = d_.check(d_.cuCtxSynchronize(), "launch of '" + c.kernel.name + "'");
    return status;
  }

private:
  struct DeviceBuffer {
    CUdeviceptr ptr = 0;
    size_t capacity = 0;
  };

  class Context final : public CudaLaunchContext {
  public:
    Context(CudaBackend &backend, runtime::LaunchContext &c)
        : CudaLaunchContext(c.plan, c.program, c.launch, c.kernel, c.call), backend_(backend),
          inputTensors(c.inputs.size()), outputTensors(c.outputs.size()) {
      inputSlots = c.inputSlots;
      outputSlots = c.outputSlots;
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
    Status launchEntry(const char *entry, Dim3 grid, Dim3 block, size_t sharedBytes,
                       std::vector<void *> args) override {
      Expected<CUfunction> fn = backend_.function(launch.kernel, kernel, entry);
      if (!fn)
        return fn.status();
      if (grid.x == 0 || grid.y == 0 || grid.z == 0)
        return Status::ok(); // nothing to do for an empty call
      return backend_.d_.check(
          backend_.d_.cuLaunchKernel(*fn, grid.x, grid.y, grid.z, block.x, block.y, block.z,
                                     unsigned(sharedBytes), nullptr, args.data(), nullptr),
          std::string("cuLaunchKernel(") + entry + ")");
    }
    Expected<CUdeviceptr> scratch(size_t bytes) override {
      CUdeviceptr p = 0;
      if (Status s = backend_.d_.check(backend_.d_.cuMemAlloc(&p, bytes ? bytes : 1), "cuMemAlloc");
          !s)
        return s;
      scratchBuffers.push_back(p);
      return p;
    }

    CudaBackend &backend_;
    std::vector<CudaTensor> inputTensors, outputTensors;
    std::vector<CUdeviceptr> scratchBuffers;
  };

  explicit CudaBackend(const CudaDriver &driver) : d_(driver) {
    registerCudaBasicAdapters(table_);
    registerCudaDenseAdapters(table_);
    registerCudaAttentionAdapters(table_);
    const char *sync = std::getenv("DSC_CUDA_SYNC");
    syncEachLaunch_ = sync && *sync && *sync != '0';
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
    return d_.check(d_.cuCtxSetCurrent(context_), "cuCtxSetCurrent");
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
  Expected<CUdeviceptr> ensure(const HostTensor &t) {
    DeviceBuffer &buffer = buffers_[&t];
    size_t bytes = std::max<size_t>(t.byteSize(), 1);
    if (buffer.capacity < bytes) {
      if (buffer.ptr) {
        CUdeviceptr old = buffer.ptr;
        buffer = DeviceBuffer();
        if (Status s = d_.check(d_.cuMemFree(old), "cuMemFree"); !s)
          return s;
      }
      buffer = DeviceBuffer();
      CUdeviceptr p = 0;
      if (Status s = d_.check(d_.cuMemAlloc(&p, bytes), "cuMemAlloc(" + std::to_string(bytes) + ")");
          !s)
        return s;
      buffer.ptr = p;
      buffer.capacity = bytes;
    }
    return buffer.ptr;
  }

  Expected<CUfunction> function(int64_t kernelIndex, const runtime::KernelSpec &kernel,
                                const std::string &entry) {
    auto key = std::make_pair(kernelIndex, entry);
    if (auto it = functions_.find(key); it != functions_.end())
      return it->second;
    CUmodule module = nullptr;
    if (auto it = modules_.find(kernelIndex); it != modules_.end()) {
      module = it->second;
    } else {
      if (kernel.cubin.empty())
        return runtime::failedPrecondition("kernel '" + kernel.name + "' has no cubin");
      if (Status s = d_.check(d_.cuModuleLoadData(&module, kernel.cubin.data()),
                              "cuModuleLoadData(" + kernel.name + ")");
          !s)
        return s;
      modules_[kernelIndex] = module;
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
  bool syncEachLaunch_ = false;
  bool logged_ = false;
  std::mutex mutex_; ///< guards buffers_, modules_, functions_ and logged_
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

dsc::runtime::Expected<std::unique_ptr<dsc::runtime::Backend>> dsc::runtime::createCudaBackend() {
  return dsc::cuda::CudaBackend::create();
}
