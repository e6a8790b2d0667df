//===- CudaLaunch.cpp - One plan launch bound to device memory --------------===//
#include "runtime/cuda/CudaLaunch.h"

namespace dsc::cuda {

using runtime::Expected;

BoundLaunch::BoundLaunch(CudaSession &session, runtime::LaunchContext &c)
    : CudaLaunchContext(c.plan, c.program, c.launch, c.kernel, c.call), session_(session),
      engine_(session.engine()), source_(c),
      programIndex_(session.indexOf(c.program)),
      launchIndex_(size_t(&c.launch - c.program.launches.data())),
      inputTensors_(c.inputs.size()), outputTensors_(c.outputs.size()) {
  inputSlots = c.inputSlots;
  outputSlots = c.outputSlots;
  quadraticTopk = engine_.quadraticTopk;
  cpuOrderFamilies = engine_.cpuOrderFamilies;
  attention = engine_.attention;
  moeE4m3Mma = engine_.moeE4m3Mma;
  gemv = engine_.gemv;
  mhcOneLaunch = engine_.mhcOneLaunch;
}

Status BoundLaunch::bind(const runtime::HostTensor &host, const runtime::ValueSlot *slot,
                         CudaTensor &device) {
  const size_t index = size_t(slot - program.values.data());
  if (index >= program.values.size())
    return runtime::internalError("a launch operand outside its program's value slots");
  Expected<DeviceRange> range =
      session_.resolve(runtime::TensorRef::ofSlot(plan, programIndex_, index), host.byteSize());
  if (!range)
    return range.status();
  device.ptr = range->ptr;
  device.dtype = host.dtype();
  device.shape = host.shape();
  return Status::ok();
}

Status BoundLaunch::prepare() {
  if (programIndex_ >= session_.programCount())
    return runtime::internalError("a launch of a program outside the session's plan");
  Status status = session_.flushZeroing();
  CudaSession::Program &p = session_.program(programIndex_);
  if (status) {
    Expected<CUdeviceptr> state =
        !p.inCall ? session_.writeCallState(programIndex_, call) // a launch outside a call
        : launch.replay ? session_.replayCallState(programIndex_, call) // CED: its own state
                        : Expected<CUdeviceptr>(p.callState.ptr());
    if (state)
      callState = *state;
    else
      status = state.status();
  }
  if (status && p.inCall) // arena values born at this launch: zeroed right before it
    status = session_.zeroBornAt(programIndex_, launchIndex_);
  for (size_t i = 0; status && i < source_.inputs.size(); ++i) {
    status = bind(*source_.inputs[i], source_.inputSlots[i], inputTensors_[i]);
    inputs.push_back(&inputTensors_[i]);
  }
  for (size_t i = 0; status && i < source_.outputs.size(); ++i) {
    status = bind(*source_.outputs[i], source_.outputSlots[i], outputTensors_[i]);
    outputs.push_back(&outputTensors_[i]);
  }
  return status;
}

Status BoundLaunch::launchEntryIn(int64_t module, const char *entry, Dim3 grid, Dim3 block,
                                  size_t sharedBytes, std::vector<void *> args) {
  Expected<CUfunction> fn = engine_.function(plan, module, entry);
  if (!fn)
    return fn.status();
  if (grid.x == 0 || grid.y == 0 || grid.z == 0)
    return Status::ok(); // nothing to do for an empty call
  // With dependent launches (common.cuh DSC_KERNEL_PROLOGUE) the kernel may
  // be scheduled before its predecessor finishes; its prologue waits for it.
  const hal::LaunchShape shape{{grid.x, grid.y, grid.z}, {block.x, block.y, block.z}, sharedBytes};
  return hal::launchKernel(engine_.driver(), *fn, shape, session_.launchStream(), args.data(),
                           engine_.dependentLaunch(module), entry);
}

Expected<CUdeviceptr> BoundLaunch::scratch(size_t bytes) {
  return session_.scratch(programIndex_, launchIndex_, scratchCount_++, bytes);
}

Expected<CUdeviceptr> BoundLaunch::constant(const char *name, const void *data, size_t bytes) {
  return engine_.constant(launch.kernel, name, data, bytes);
}

Status BoundLaunch::copy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  if (!bytes)
    return Status::ok();
  const CudaDriver &d = engine_.driver();
  return d.check(d.cuMemcpyDtoDAsync(dst, src, bytes, session_.launchStream()), "cuMemcpyDtoDAsync");
}

} // namespace dsc::cuda
