//===- MhcEntryPreNorm.cpp - native `mhc_entry`: pre-collapse + norm fused -===//
//
// What: the host side of the native executable mhc_entry_pre_norm
// (NativeExecutables.def). The `mhc_entry` group is [hc_post] hc_mixes
// hc_pre rms_norm [copy_mean]; this executable runs hc_post, hc_mixes and
// copy_mean through their own kernels and hc_pre + rms_norm as one kernel,
// dsc_mhc_pre_norm (codegen/kernels/mhc_entry.cu): one block per row
// collapses the copies into shared memory and normalises them there, so the
// collapsed row (internal to the group) never reaches global memory and the
// group is one launch shorter.
// Invariants: byte-identical to the steps (same fp32 order, same bf16
// rounding points as dsc_hc_pre and dsc_rms_norm, or dsc_rms_norm_fast:
// CudaOptions::cpuOrderFamilies' Norm picks the pair); rows wider than the
// shared-memory budget, and calls of fewer than kMinFusedRows rows (decode),
// run the two steps as they are.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"
#include "runtime/cuda/GemvLaunch.h"

namespace dsc::cuda {

namespace {
/// Shared memory of one row's collapsed values (bf16), within the 48 KiB a
/// kernel gets without opting in.
constexpr long long kMaxSharedBytes = 48 * 1024;
/// Rows from which the fused kernel (one block per row) runs: below, the two
/// steps' kernels are faster (hc_pre spreads one row over many blocks; on
/// the H200 a decode row took 11.7 us fused against 3.0 + 5.7 us as steps).
constexpr long long kMinFusedRows = 128;
} // namespace

Status mhcEntryPreNorm(NativeLaunch &launch) {
  size_t pre = launch.steps.size(), norm = launch.steps.size();
  for (size_t i = 0; i < launch.steps.size(); ++i) {
    if (launch.steps[i]->kernel.as<abi::HcPreParams>())
      pre = i;
    else if (launch.steps[i]->kernel.as<abi::RmsNormParams>() && pre != launch.steps.size() &&
             norm == launch.steps.size())
      norm = i;
  }
  if (pre == launch.steps.size() || norm != pre + 1)
    return runtime::internalError("mhc_entry_pre_norm: the group has no hc_pre + rms_norm pair");
  CudaLaunchContext &p = *launch.steps[pre], &n = *launch.steps[norm];
  const CudaTensor &h = *p.inputs[0];
  long long S = h.dim(0), hc = h.dim(1), D = h.dim(2);
  const bool fits = S >= kMinFusedRows &&
                    2 * D + abi::kTorchBlockSharedBytes <= kMaxSharedBytes &&
                    n.inputs[0]->ptr == p.outputs[0]->ptr; // the norm reads the collapsed row
  for (size_t i = 0; i < launch.steps.size(); ++i) {
    if (fits && (i == pre || i == norm)) {
      if (i == norm)
        continue;
      abi::RmsNormParams params = *n.kernel.as<abi::RmsNormParams>();
      CUdeviceptr hp = h.ptr, mix = p.inputs[1]->ptr, w = n.inputs[1]->ptr,
                  y = n.outputs[0]->ptr;
      const char *entry = n.cpuOrder(runtime::KernelFamily::Norm) ? "dsc_mhc_pre_norm" : "dsc_mhc_pre_norm_fast";
      if (Status s = p.launchEntryIn(launch.fusion.module, entry, gridRows(S),
                                     block1(normBlock(n)), size_t(2 * D),
                                     args(params, hp, S, hc, D, mix, w, y));
          !s)
        return s;
      continue;
    }
    if (Status s = launch.runStep(i); !s)
      return s;
  }
  return Status::ok();
}

} // namespace dsc::cuda
