//===- MhcEntryPreNorm.cpp - native `mhc_entry`: pre-collapse + norm fused -===//
//
// What: the host side of the native executable mhc_entry_pre_norm
// (NativeExecutables.def). The `mhc_entry` group is [hc_post] hc_pre
// rms_norm [copy_mean] (the stream's hc_mixes runs outside it: the
// collapse takes the previous sublayer's pre, passes/FuseKernels.cpp).
// Calls of at most kMhcDecodeMaxRows rows (decode, M-row steps) on the fast
// kernels run [hc_post] hc_pre rms_norm as ONE kernel,
// dsc_mhc_entry_decode_fast (codegen/kernels/mhc_entry.cu: one block per
// row), two dependent launches fewer per sublayer entry; copy_mean runs as
// its own step. Calls of kMinFusedRows rows or more run hc_post and
// copy_mean through their own kernels and hc_pre + rms_norm as
// dsc_mhc_pre_norm(_fast): one block per row collapses the copies into
// shared memory and normalises them there, so the collapsed row (internal
// to the group) never reaches global memory.
// Invariants: byte-identical to the steps (same fp32 order, same bf16
// rounding points as dsc_hc_post, dsc_hc_pre and dsc_rms_norm, or
// dsc_rms_norm_fast: CudaOptions::cpuOrderFamilies' Norm picks the pair;
// the decode kernel only with neither Mhc nor Norm on the CPU-order
// kernels); rows wider than the shared-memory budget, misaligned rows, and
// calls between kMhcDecodeMaxRows and kMinFusedRows rows run the steps as
// they are.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"
#include "runtime/cuda/GemvLaunch.h"

namespace dsc::cuda {

namespace {
/// Shared memory of one row's collapsed values (bf16), within the 48 KiB a
/// kernel gets without opting in.
constexpr long long kMaxSharedBytes = 48 * 1024;
/// Rows from which the fused pre + norm kernel (one block per row) runs for
/// calls above kMhcDecodeMaxRows: below, the two steps' kernels are faster
/// (hc_pre spreads one row over many blocks; on the H200 a decode row took
/// 11.7 us fused against 3.0 + 5.7 us as steps, session 5).
constexpr long long kMinFusedRows = 128;
} // namespace

/// The decode path: the steps post (or steps.size(): none), pre and norm as
/// dsc_mhc_entry_decode_fast, then the others (copy_mean) as they are.
/// `taken` false: the call does not qualify (nothing was launched).
Status mhcEntryDecode(NativeLaunch &launch, size_t post, size_t pre, size_t norm, bool &taken) {
  taken = false;
  const size_t none = launch.steps.size();
  CudaLaunchContext &p = *launch.steps[pre], &n = *launch.steps[norm];
  const abi::RmsNormParams *np = n.kernel.as<abi::RmsNormParams>();
  const CudaTensor &h = *p.inputs[0];
  if (!np || !p.mhcOneLaunch || h.shape.size() != 3 || p.cpuOrder(runtime::KernelFamily::Mhc) ||
      n.cpuOrder(runtime::KernelFamily::Norm))
    return Status::ok();
  const long long S = h.dim(0), hc = h.dim(1), D = h.dim(2);
  // The group's data flow as the kernel assumes it: hc_post (if any) makes
  // the stream hc_pre reads, hc_pre's row is the norm's input.
  const bool chained = n.inputs[0]->ptr == p.outputs[0]->ptr &&
                       (post == none || launch.steps[post]->outputs[0]->ptr == h.ptr);
  if (S < 1 || S > abi::kMhcDecodeMaxRows || hc != abi::kMhcDecodeCopies || D % 8 != 0 || !chained ||
      2 * D + abi::kTorchBlockSharedBytes > kMaxSharedBytes)
    return Status::ok();
  CUdeviceptr x = 0, res = 0, postIn = 0, combIn = 0;
  if (post != none) {
    CudaLaunchContext &q = *launch.steps[post];
    x = q.inputs[0]->ptr, res = q.inputs[1]->ptr, postIn = q.inputs[2]->ptr,
    combIn = q.inputs[3]->ptr;
    if (!aligned16({x, res}) || res == h.ptr)
      return Status::ok();
  }
  abi::RmsNormParams nparams = *np;
  CUdeviceptr hp = h.ptr, mix = p.inputs[1]->ptr, w = n.inputs[1]->ptr, y = n.outputs[0]->ptr;
  if (!aligned16({hp}))
    return Status::ok();
  if (Status s = p.launchEntryIn(launch.fusion.module, "dsc_mhc_entry_decode_fast", gridRows(S),
                                 block1(abi::kMhcDecodeThreads), size_t(2 * D),
                                 args(nparams, x, res, postIn, combIn, hp, S, hc, D, mix, w, y));
      !s)
    return s;
  taken = true;
  for (size_t i = 0; i < launch.steps.size(); ++i)
    if (i != post && i != pre && i != norm)
      if (Status s = launch.runStep(i); !s)
        return s;
  return Status::ok();
}

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
  size_t post = launch.steps.size();
  for (size_t i = 0; i < pre; ++i)
    if (launch.steps[i]->kernel.as<abi::HcPostParams>())
      post = i;
  bool taken = false;
  if (Status s = mhcEntryDecode(launch, post, pre, norm, taken); !s || taken)
    return s;
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
