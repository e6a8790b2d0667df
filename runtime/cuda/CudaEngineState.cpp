//===- CudaEngineState.cpp - The CUDA backend's per-Engine resources --------===//
#include "runtime/cuda/CudaEngineState.h"

#include <algorithm>

namespace dsc::cuda {

CudaEngineState::CudaEngineState(hal::Device device, const runtime::CudaOptions &options)
    : device(std::move(device)) {
  registerCudaBasicAdapters(table);
  registerCudaDenseAdapters(table);
  registerCudaAttentionAdapters(table);
  syncEachLaunch = options.syncEachLaunch;
  graphs = options.graphs && !syncEachLaunch;
  logGraphs = graphs && options.logGraphs; // say when a graph is captured
  quadraticTopk = options.quadraticTopk;
  cpuOrderFamilies = options.cpuOrderFamilies;
  attention = options.attention;
  moeE4m3Mma = options.moeE4m3Mma;
  gemv = options.gemv;
  mhcOneLaunch = options.mhcOneLaunch;
  dependentLaunches = options.dependentLaunch;
  streams = std::clamp(options.streams, 1, kMaxStreams);
  captureHeirFirst = options.captureHeirFirst;
  privateSmallArenas = options.privateSmallArenas;
}

bool CudaEngineState::dependentLaunch(int64_t module) const {
  return dependentLaunches && module >= 0 && size_t(module) < executables_.size() &&
         executables_[size_t(module)].waitsForPredecessor();
}

runtime::Expected<CUfunction> CudaEngineState::function(const runtime::Plan &plan, int64_t module,
                                                        const std::string &entry) {
  if (module < 0 || size_t(module) >= plan.modules.size())
    return runtime::failedPrecondition("entry '" + entry + "': module " + std::to_string(module) +
                                       " is not in the plan");
  if (executables_.size() < plan.modules.size())
    executables_.resize(plan.modules.size());
  hal::Executable &executable = executables_[size_t(module)];
  if (!executable) {
    const runtime::Module &source = plan.modules[size_t(module)];
    if (source.cubin.empty())
      return runtime::failedPrecondition("module '" + source.templateName + "' has no cubin");
    runtime::Expected<hal::Executable> loaded =
        hal::Executable::load(driver(), source.cubin.data(), source.templateName);
    if (!loaded)
      return loaded.status();
    executable = std::move(loaded.value());
  }
  return executable.function(entry);
}

runtime::Expected<CUdeviceptr> CudaEngineState::constant(int64_t kernel, const char *name,
                                                         const void *data, size_t bytes) {
  hal::DeviceBuffer &b = constants_[{kernel, std::string(name)}];
  if (b)
    return b.ptr();
  if (capturing)
    return runtime::internalError(std::string("constant '") + name +
                                  "' first uploaded during graph capture");
  if (runtime::Status s = b.growTo(driver(), bytes, stream(), std::string("constant ") + name); !s)
    return s;
  const CudaDriver &d = driver();
  if (bytes)
    if (runtime::Status s = d.check(d.cuMemcpyHtoDAsync(b.ptr(), data, bytes, stream()),
                                    std::string("cuMemcpyHtoDAsync(") + name + ")");
        !s)
      return s;
  if (runtime::Status s = device.synchronize(); !s)
    return s;
  return b.ptr();
}

runtime::Expected<CUdeviceptr> CudaEngineState::weight(int64_t binding, size_t bytes) {
  if (binding < 0)
    return runtime::internalError("weight binding " + std::to_string(binding));
  if (weights_.size() <= size_t(binding))
    weights_.resize(size_t(binding) + 1);
  hal::DeviceBuffer &b = weights_[size_t(binding)];
  const size_t want = std::max<size_t>(bytes, 1);
  if (b) {
    if (b.size() != want)
      return runtime::internalError("weight " + std::to_string(binding) + ": its device copy has " +
                                    std::to_string(b.size()) + " bytes, the tensor " +
                                    std::to_string(want) + " (weights never move)");
    return b.ptr();
  }
  if (capturing)
    return runtime::internalError("a weight allocated during CUDA graph capture");
  if (runtime::Status s = b.growTo(driver(), want, stream(), "weight " + std::to_string(binding));
      !s)
    return s;
  return b.ptr();
}

const hal::DeviceBuffer *CudaEngineState::findWeight(int64_t binding) const {
  if (binding < 0 || size_t(binding) >= weights_.size() || !weights_[size_t(binding)])
    return nullptr;
  return &weights_[size_t(binding)];
}

runtime::Status CudaEngineState::reserveBranches(int streamCount, size_t events) {
  if (capturing)
    return runtime::internalError("branch streams made during a CUDA graph capture");
  while (branchStreams.size() < size_t(std::max(0, streamCount))) {
    runtime::Expected<hal::Stream> s = hal::Stream::create(driver());
    if (!s)
      return s.status();
    branchStreams.push_back(std::move(s.value()));
  }
  while (branchEvents.size() < events) {
    runtime::Expected<hal::Event> e = hal::Event::create(driver());
    if (!e)
      return e.status();
    branchEvents.push_back(std::move(e.value()));
  }
  return runtime::Status::ok();
}

} // namespace dsc::cuda
