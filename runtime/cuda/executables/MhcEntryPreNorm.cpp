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
// Calls of at most kMhcDecodeMaxRows rows (decode, M-row steps) on the fast
// kernels run [hc_post] hc_mixes hc_pre rms_norm as ONE kernel instead,
// dsc_mhc_entry_decode_fast (mhc_entry.cu: a grid over the mixes' splits
// whose last block per row finishes the row), five dependent launches fewer
// per sublayer.
// Invariants: byte-identical to the steps (same fp32 order, same bf16
// rounding points as dsc_hc_pre and dsc_rms_norm, or dsc_rms_norm_fast:
// CudaOptions::cpuOrderFamilies' Norm picks the pair; the decode kernel only
// with neither Mhc nor Norm on the CPU-order kernels); rows wider than the
// shared-memory budget, and calls between kMhcDecodeMaxRows and
// kMinFusedRows rows, run the steps as they are.
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

/// The decode path: the steps post (or steps.size(): none), mixes, pre,
/// norm as dsc_mhc_entry_decode_fast, then the others (copy_mean) as they
/// are. `taken` false: the call does not qualify (nothing was launched).
Status mhcEntryDecode(NativeLaunch &launch, size_t post, size_t mixes, size_t pre, size_t norm,
                      bool &taken) {
  taken = false;
  const size_t none = launch.steps.size();
  CudaLaunchContext &m = *launch.steps[mixes], &p = *launch.steps[pre], &n = *launch.steps[norm];
  const abi::HcMixesParams *mp = m.kernel.as<abi::HcMixesParams>();
  const abi::RmsNormParams *np = n.kernel.as<abi::RmsNormParams>();
  const CudaTensor &h = *m.inputs[0];
  if (!mp || !np || !m.mhcOneLaunch || h.shape.size() != 3 || m.cpuOrder(runtime::KernelFamily::Mhc) ||
      n.cpuOrder(runtime::KernelFamily::Norm))
    return Status::ok();
  const long long S = h.dim(0), hc = h.dim(1), D = h.dim(2), width = hc * D,
                  nmix = (2 + hc) * hc, splits = hcSplits(nmix, width);
  // The group's data flow as the kernel assumes it: hc_post (if any) makes
  // the stream the mixes and hc_pre read, hc_pre's row is the norm's input.
  const bool chained = p.inputs[0]->ptr == h.ptr && p.inputs[1]->ptr == m.outputs[0]->ptr &&
                       n.inputs[0]->ptr == p.outputs[0]->ptr &&
                       (post == none || launch.steps[post]->outputs[0]->ptr == h.ptr);
  if (S < 1 || S > abi::kMhcDecodeMaxRows || hc < 1 || hc > 8 || splits < 1 || !chained)
    return Status::ok();
  auto partial = m.scratch(size_t(S * nmix * splits) * sizeof(double));
  if (!partial)
    return partial.status();
  auto counters = m.scratch(size_t(S) * sizeof(unsigned)); // zeroed when allocated
  if (!counters)
    return counters.status();
  CUdeviceptr x = 0, res = 0, postIn = 0, combIn = 0;
  if (post != none) {
    CudaLaunchContext &q = *launch.steps[post];
    x = q.inputs[0]->ptr, res = q.inputs[1]->ptr, postIn = q.inputs[2]->ptr,
    combIn = q.inputs[3]->ptr;
  }
  abi::HcMixesParams mparams = *mp;
  abi::RmsNormParams nparams = *np;
  CUdeviceptr hp = h.ptr, fn = m.inputs[1]->ptr, sc = m.inputs[2]->ptr, base = m.inputs[3]->ptr,
              preOut = m.outputs[0]->ptr, postOut = m.outputs[1]->ptr,
              combOut = m.outputs[2]->ptr, w = n.inputs[1]->ptr, y = n.outputs[0]->ptr,
              pp = *partial, cp = *counters;
  const size_t smem = size_t(mhcDecodeSmemBytes(nmix, width, D, splits));
  if (Status s = m.launchEntryIn(launch.fusion.module, "dsc_mhc_entry_decode_fast",
                                 Dim3{unsigned(splits), unsigned(S), 1},
                                 block1(abi::kMhcDecodeThreads), smem,
                                 args(mparams, nparams, x, res, postIn, combIn, hp, S, hc, D, fn,
                                      sc, base, preOut, postOut, combOut, w, y, splits, pp, cp));
      !s)
    return s;
  taken = true;
  for (size_t i = 0; i < launch.steps.size(); ++i)
    if (i != post && i != mixes && i != pre && i != norm)
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
  size_t post = launch.steps.size(), mixes = launch.steps.size();
  for (size_t i = 0; i < pre; ++i) {
    if (launch.steps[i]->kernel.as<abi::HcPostParams>())
      post = i;
    else if (launch.steps[i]->kernel.as<abi::HcMixesParams>())
      mixes = i;
  }
  if (mixes != launch.steps.size()) {
    bool taken = false;
    if (Status s = mhcEntryDecode(launch, post, mixes, pre, norm, taken); !s || taken)
      return s;
  }
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
