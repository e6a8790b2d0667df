//===- CudaAdaptersDense.cpp - CUDA launch adapters for the dense kernels --===//
//
// linear, rms_norm, hc_mixes / hc_pre / hc_post, copy_mean, head,
// grouped_output, moe_gate, moe_experts, engram_lookup, engram_gate: each
// adapter reads the launch's tensors in the same order as its CPU twin
// (runtime/cpu/CpuAdaptersDense.cpp) and launches the entries of
// codegen/kernels/<name>.cu (docs/cuda-kernels-dense.md). Intermediate
// buffers (quantised activations, MoE accumulators) are launch scratch.
// Unless CudaOptions::cpuOrderFamilies names their family, the GEMMs, norms and mHC mixes launch
// the fast `_fast` entries (codegen/kernels/gemv.cuh: one warp per output
// row, 16-byte loads, block reductions) where their shape rules hold (K a
// multiple of 32, 16-byte aligned tensors, shared-memory budget); otherwise,
// and with the option, the CPU-order entries.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"
#include "runtime/cuda/GemvLaunch.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

namespace dsc::cuda {
namespace {

using runtime::Expected;



long long rowsOf(const CudaTensor &t) {
  return t.shape.empty() || t.shape.back() == 0 ? 0 : t.numElements() / t.shape.back();
}

/// Launches `<prefix>_act_quant` of x [M, K] into q.
Status actQuant(CudaLaunchContext &c, const std::string &prefix, CUdeviceptr x, long long M,
                long long K, ActQuant &q) {
  return c.launchEntry((prefix + "_act_quant").c_str(), gridFor(M * (K / 32)), block1(), 0,
                       args(x, M, K, q.codes, q.scales));
}

Status linear(CudaLaunchContext &c, const abi::LinearParams &p) {
  using Q = abi::LinearQuant;
  const CudaTensor &x = *c.inputs[0], &w = *c.inputs[1];
  CudaTensor &y = *c.outputs[0];
  long long M = rowsOf(x), K = x.shape.back(), N = w.dim(0);
  CUdeviceptr xp = x.ptr, wp = w.ptr, yp = y.ptr;
  const bool fast = !c.cpuOrder(runtime::KernelFamily::Linear) && K % 32 == 0 && aligned16({xp, wp});
  if (p.quant == Q::bf16 && fast)
    return c.launchEntry("dsc_linear_bf16_fast", gemvGrid(N), gemvBlock(), 0,
                         args(xp, M, K, wp, N, yp));
  if (p.quant == Q::bf16)
    return c.launchEntry("dsc_linear_bf16", gridFor(M * N), block1(), 0,
                         args(xp, M, K, wp, N, yp));
  if (p.quant != Q::fp8 && p.quant != Q::fp4)
    return runtime::failedPrecondition(std::string("linear: the CUDA backend has no '") +
                                       abi::kLinearQuantNames[int(p.quant)] + "' linear");
  if (K % 32 != 0)
    return runtime::invalidArgument("linear: K = " + std::to_string(K) +
                                    " is not a multiple of 32");
  if (c.inputs.size() < 3)
    return runtime::invalidArgument("linear: a quantised linear needs a scale input");
  CUdeviceptr sp = c.inputs[2]->ptr;
  if (fast)
    return quantizedGemv(c, "dsc_linear",
                         p.quant == Q::fp8
                             ? QuantizedGemvEntries{"dsc_linear_fp8_fast", "dsc_linear_fp8_lanes",
                                                    "dsc_linear_fp8_slots", "dsc_linear_fp8_wg",
                                                    "dsc_linear_fp8_rows"}
                             : QuantizedGemvEntries{"dsc_linear_fp4_fast", "dsc_linear_fp4_lanes",
                                                    "dsc_linear_fp4_slots", "dsc_linear_fp4_wg",
                                                    "dsc_linear_fp4_rows"},
                         xp, M, K, wp, sp, N, yp);
  auto q = actQuantScratch(c, M, K);
  if (!q)
    return q.status();
  if (Status s = actQuant(c, "dsc_linear", xp, M, K, *q); !s)
    return s;
  return c.launchEntry(p.quant == Q::fp8 ? "dsc_linear_fp8" : "dsc_linear_fp4", gridFor(M * N),
                       block1(), 0, args(q->codes, q->scales, M, K, wp, sp, N, yp));
}

Status rmsNorm(CudaLaunchContext &c, const abi::RmsNormParams &p) {
  const CudaTensor &x = *c.inputs[0];
  long long rows = rowsOf(x), n = x.shape.back();
  CUdeviceptr xp = x.ptr, wp = c.inputs[1]->ptr, yp = c.outputs[0]->ptr;
  return c.launchEntry(c.cpuOrder(runtime::KernelFamily::Norm) ? "dsc_rms_norm" : "dsc_rms_norm_fast", gridRows(rows),
                       block1(normBlock(c)), 0, args(p, xp, rows, n, wp, yp));
}

Status hcMixes(CudaLaunchContext &c, const abi::HcMixesParams &p) {
  const CudaTensor &h = *c.inputs[0];
  long long S = h.dim(0), hc = h.dim(1), D = h.dim(2);
  if (hc < 1 || hc > 8)
    return runtime::invalidArgument("hc_mixes: the CUDA kernel supports 1..8 copies, not " +
                                    std::to_string(hc));
  CUdeviceptr hp = h.ptr, fn = c.inputs[1]->ptr, sc = c.inputs[2]->ptr, base = c.inputs[3]->ptr,
              pre = c.outputs[0]->ptr, post = c.outputs[1]->ptr, comb = c.outputs[2]->ptr;
  const long long nmix = (2 + hc) * hc, width = hc * D, splits = hcSplits(nmix, width);
  if (!c.cpuOrder(runtime::KernelFamily::Mhc) && splits > 0) {
    // Token chunks of kHcTokenChunk bound the scratch; each chunk's rows
    // are computed as in one launch (no row depends on the others).
    const long long chunk = std::min<long long>(S, abi::kHcTokenChunk);
    const long long items = chunk * (nmix + 1) * splits;
    const long long groupFloats = chunk * abi::torchGroupStride(width) * 32;
    auto partial = c.scratch(size_t(items) * sizeof(double) + size_t(groupFloats) * sizeof(float));
    if (!partial)
      return partial.status();
    const size_t stage = size_t(hcStageBytes(nmix, width, splits));
    CUdeviceptr pp = *partial, gp = pp + CUdeviceptr(items) * sizeof(double);
    for (long long t0 = 0; t0 < S; t0 += chunk) {
      long long rows = std::min(chunk, S - t0), rowItems = rows * (nmix + 1) * splits;
      CUdeviceptr hr = hp + CUdeviceptr(t0 * width) * 2, prer = pre + CUdeviceptr(t0 * hc) * 4,
                  postr = post + CUdeviceptr(t0 * hc) * 4,
                  combr = comb + CUdeviceptr(t0 * hc * hc) * 4;
      if (Status s = c.launchEntry("dsc_hc_mixes_dot_fast", gemvGrid(rowItems), gemvBlock(), 0,
                                   args(hr, rows, width, fn, nmix, splits, pp, gp));
          !s)
        return s;
      if (Status s = c.launchEntry("dsc_hc_mixes_finish_fast", gridRows(rows), gemvBlock(), stage,
                                   args(p, hr, pp, gp, rows, splits, hc, D, sc, base, prer, postr,
                                        combr));
          !s)
        return s;
    }
    return Status::ok();
  }
  return c.launchEntry("dsc_hc_mixes", gridRows(S), block1(64), 0,
                       args(p, hp, S, hc, D, fn, sc, base, pre, post, comb));
}

Status hcPre(CudaLaunchContext &c) {
  const CudaTensor &h = *c.inputs[0];
  long long S = h.dim(0), hc = h.dim(1), D = h.dim(2);
  CUdeviceptr hp = h.ptr, pre = c.inputs[1]->ptr, y = c.outputs[0]->ptr;
  return c.launchEntry("dsc_hc_pre", gridFor(S * D), block1(), 0, args(hp, S, hc, D, pre, y));
}

Status hcPost(CudaLaunchContext &c) {
  const CudaTensor &res = *c.inputs[1];
  long long S = res.dim(0), hc = res.dim(1), D = res.dim(2);
  CUdeviceptr x = c.inputs[0]->ptr, rp = res.ptr, post = c.inputs[2]->ptr,
              comb = c.inputs[3]->ptr, out = c.outputs[0]->ptr;
  return c.launchEntry("dsc_hc_post", gridFor(S * hc * D), block1(), 0,
                       args(x, rp, post, comb, S, hc, D, out));
}

Status copyMean(CudaLaunchContext &c) {
  const CudaTensor &h = *c.inputs[0];
  long long S = h.dim(0), hc = h.dim(1), D = h.dim(2);
  CUdeviceptr hp = h.ptr, y = c.outputs[0]->ptr;
  return c.launchEntry("dsc_copy_mean", gridFor(S * D), block1(), 0, args(hp, S, hc, D, y));
}

Status head(CudaLaunchContext &c) {
  const CudaTensor &x = *c.inputs[0], &w = *c.inputs[1];
  CudaTensor &logits = *c.outputs[0];
  long long rows = logits.dim(0), D = x.shape.back(), V = w.dim(0);
  if (rows > rowsOf(x))
    return runtime::invalidArgument("head: more logit rows than input rows");
  // last_only: the head runs on the last `rows` positions (rows = 1).
  CUdeviceptr first = x.ptr + CUdeviceptr((rowsOf(x) - rows) * D * 2), wp = w.ptr,
              lp = logits.ptr;
  if (!c.cpuOrder(runtime::KernelFamily::Head) && D % 8 == 0 && aligned16({first, wp}))
    return c.launchEntry("dsc_head_fast", gemvGrid(V), gemvBlock(), 0,
                         args(first, rows, D, wp, V, lp));
  return c.launchEntry("dsc_head", gridFor(rows * V), block1(), 0, args(first, rows, D, wp, V, lp));
}

Status groupedOutput(CudaLaunchContext &c, const abi::GroupedOutputParams &p) {
  long long G = p.groups;
  const CudaTensor &o = *c.inputs[0], &woA = *c.inputs[1], &woB = *c.inputs[2];
  if (G <= 0)
    return runtime::invalidArgument("grouped_output: groups must be positive");
  long long S = o.dim(0), Din = o.dim(1) * o.dim(2) / G, R = woA.dim(0) / G, D = woB.dim(0);
  long long K = G * R;
  if (K % 32 != 0)
    return runtime::invalidArgument("grouped_output: groups*rank is not a multiple of 32");
  auto z = c.scratch(size_t(S * K) * 2);
  if (!z)
    return z.status();
  CUdeviceptr op = o.ptr, ap = woA.ptr, zp = *z, bp = woB.ptr, bs = c.inputs[3]->ptr,
              yp = c.outputs[0]->ptr;
  if (!c.cpuOrder(runtime::KernelFamily::GroupedOutput) && Din % 8 == 0 && aligned16({op, ap, zp, bp})) {
    if (Status s = c.launchEntry("dsc_grouped_output_woa_fast", gemvGrid(K), gemvBlock(), 0,
                                 args(p, op, S, Din, ap, R, zp));
        !s)
      return s;
    return quantizedGemv(c, "dsc_grouped_output",
                         {"dsc_grouped_output_fp8_fast", "dsc_grouped_output_fp8_lanes",
                          "dsc_grouped_output_fp8_slots", "dsc_grouped_output_fp8_wg",
                          "dsc_grouped_output_fp8_rows"},
                         zp, S, K,
                         bp, bs, D, yp);
  }
  if (Status s = c.launchEntry("dsc_grouped_output_woa", gridFor(S * K), block1(), 0,
                               args(p, op, S, Din, ap, R, zp));
      !s)
    return s;
  auto q = actQuantScratch(c, S, K);
  if (!q)
    return q.status();
  if (Status s = actQuant(c, "dsc_grouped_output", zp, S, K, *q); !s)
    return s;
  return c.launchEntry("dsc_grouped_output_fp8", gridFor(S * D), block1(), 0,
                       args(q->codes, q->scales, S, K, bp, bs, D, yp));
}

/// Calls of at most this many tokens run the gate's scores and select as
/// one launch (dsc_moe_gate_fused_fast).
constexpr long long kFusedGateMaxTokens = 16;

Status moeGate(CudaLaunchContext &c, const abi::MoeGateParams &p) {
  const CudaTensor &x = *c.inputs[0], &w = *c.inputs[1];
  long long T = x.dim(0), D = x.dim(1), E = w.dim(0);
  size_t smem = size_t(E) * (2 * sizeof(float) + 1);
  if (smem > 48 * 1024)
    return runtime::invalidArgument("moe_gate: too many experts for the CUDA kernel");
  CUdeviceptr xp = x.ptr, wp = w.ptr, bias = c.inputs.size() > 2 ? c.inputs[2]->ptr : 0,
              weights = c.outputs[0]->ptr, ids = c.outputs[1]->ptr;
  // The fast select keeps the keys, scores and picks in shared memory.
  if (!c.cpuOrder(runtime::KernelFamily::MoeGate) && D % 8 == 0 &&
      E <= abi::kMoeSelectMaxExperts && p.topk <= abi::kMoeSelectMaxTopk && aligned16({xp, wp})) {
    auto scores = c.scratch(size_t(T * E) * sizeof(float));
    auto choice = c.scratch(size_t(T * E) * sizeof(float));
    if (!scores || !choice)
      return !scores ? scores.status() : choice.status();
    CUdeviceptr sp = *scores, cp = *choice;
    // Few tokens (decode, M-row steps): scores and select in one launch, the
    // last block selecting (one block selects every token, so long calls
    // keep the select's grid of a block per token). The same values.
    if (T <= kFusedGateMaxTokens) {
      auto counter = c.scratch(sizeof(unsigned)); // zeroed when made; the kernel leaves it zero
      if (!counter)
        return counter.status();
      CUdeviceptr tp = *counter;
      return c.launchEntry("dsc_moe_gate_fused_fast", gemvGrid(E), gemvBlock(), 0,
                           args(p, xp, T, D, wp, bias, E, sp, cp, tp, weights, ids));
    }
    if (Status s = c.launchEntry("dsc_moe_gate_scores_fast", gemvGrid(E), gemvBlock(), 0,
                                 args(p, xp, T, D, wp, bias, E, sp, cp));
        !s)
      return s;
    return c.launchEntry("dsc_moe_gate_select_fast", gridRows(T), gemvBlock(), 0,
                         args(p, sp, cp, T, E, weights, ids));
  }
  return c.launchEntry("dsc_moe_gate", gridRows(T), block1(), smem,
                       args(p, xp, T, D, wp, bias, E, weights, ids));
}

/// The fast MoE path's token tile: its h buffer is [tile, k + 1, I] bf16;
/// longer calls (prefill) run tile after tile (every token's arithmetic is
/// the same in any tile, so chunked == one call stays byte-identical).
constexpr long long kFastMoeTile = 256;

/// dsc_moe_experts_up_fast, _down_fast and _combine_fast (moe_experts.cu): all
/// ranks and the shared expert in three launches per token tile (plus
/// act_quant launches when the activations exceed shared memory).
Status moeExpertsFast(CudaLaunchContext &c, const abi::MoeExpertsParams &p, long long T,
                      long long D, long long I, long long E, long long k) {
  CUdeviceptr r1 = c.inputs[3]->ptr, r1s = c.inputs[4]->ptr, r3 = c.inputs[5]->ptr,
              r3s = c.inputs[6]->ptr, r2 = c.inputs[7]->ptr, r2s = c.inputs[8]->ptr;
  CUdeviceptr s1 = c.inputs[9]->ptr, s1s = c.inputs[10]->ptr, s3 = c.inputs[11]->ptr,
              s3s = c.inputs[12]->ptr, s2 = c.inputs[13]->ptr, s2s = c.inputs[14]->ptr;
  const long long tile = T < kFastMoeTile ? T : kFastMoeTile;
  auto hbuf = c.scratch(size_t(tile * (k + 1) * I) * 2);
  auto obuf = c.scratch(size_t(tile * (k + 1) * D) * sizeof(float));
  if (!hbuf || !obuf)
    return !hbuf ? hbuf.status() : obuf.status();
  CUdeviceptr op = *obuf;
  using runtime::GemvKernels;
  // The warpgroups stage a slot's whole activation row (K / 32 <=
  // kWgMaxStageBlocks, whole steps); other widths run the lanes.
  auto wgFits = [](long long K) { return K / 32 <= abi::kWgMaxStageBlocks; };
  const GemvKernels family =
      c.gemv == GemvKernels::Warpgroups &&
              !(wgTakes(D, r1s) && wgTakes(D, r3s) && wgTakes(D, s1s) && wgTakes(D, s3s) &&
                wgTakes(I, r2s) && wgTakes(I, s2s) && wgFits(D) && wgFits(I))
          ? GemvKernels::Lanes
          : c.gemv;
  const bool wg = family == GemvKernels::Warpgroups;
  const bool upShared = moeQuantInBlocks(family, tile * (k + 1), I, tile, D);
  const bool downShared = moeQuantInBlocks(family, tile * (k + 1), D, tile * (k + 1), I);
  ActQuant qx, qh;
  if (!upShared) {
    auto q = actQuantScratch(c, tile, D);
    if (!q)
      return q.status();
    qx = *q;
  }
  if (!downShared) {
    auto q = actQuantScratch(c, tile * (k + 1), I);
    if (!q)
      return q.status();
    qh = *q;
  }
  CUdeviceptr hp = *hbuf;
  for (long long t0 = 0; t0 < T; t0 += tile) {
    long long Tt = T - t0 < tile ? T - t0 : tile, slots = Tt * (k + 1);
    CUdeviceptr xp = c.inputs[0]->ptr + CUdeviceptr(t0 * D * 2),
                wp = c.inputs[1]->ptr + CUdeviceptr(t0 * k * 4),
                ip = c.inputs[2]->ptr + CUdeviceptr(t0 * k * 4),
                yp = c.outputs[0]->ptr + CUdeviceptr(t0 * D * 2);
    // The activation operands of a step: x (quantised in the blocks) or the
    // codes of a global act_quant, and the dynamic shared memory that goes with it.
    struct Operand {
      CUdeviceptr x = 0, codes = 0, scales = 0;
      size_t smem = 0;
    };
    auto operand = [&](bool shared, CUdeviceptr x, long long rows, long long K, int mats,
                       const ActQuant &q) -> Expected<Operand> {
      if (shared)
        return Operand{x, 0, 0, moeLaunchSmem(family, true, rows, K, mats)};
      if (Status s = c.launchEntry("dsc_moe_experts_act_quant_fast", gemvGrid(rows * (K / 32)),
                                   gemvBlock(), 0, args(x, rows, K, q.codes, q.scales));
          !s)
        return s;
      return Operand{0, q.codes, q.scales, moeLaunchSmem(family, false, rows, K, mats)};
    };
    auto up = operand(upShared, xp, Tt, D, 2, qx);
    if (!up)
      return up.status();
    const char *upEntry = family == GemvKernels::Lanes   ? "dsc_moe_experts_up_lanes"
                          : family == GemvKernels::Rows  ? "dsc_moe_experts_up_rows"
                          : family == GemvKernels::Slots ? "dsc_moe_experts_up_slots"
                          : wg                           ? "dsc_moe_experts_up_wg"
                          : c.moeE4m3Mma                 ? "dsc_moe_experts_up_fast_e4m3"
                                                         : "dsc_moe_experts_up_fast";
    const MoeStepShape upShape = moeStepShape(family, true, Tt, k, I);
    if (Status s = c.launchEntry(upEntry, upShape.grid, upShape.block, up->smem,
                                 args(p, up->x, up->codes, up->scales, Tt, D, I, r1, r1s, r3, r3s,
                                      s1, s1s, s3, s3s, ip, wp, k, E, hp));
        !s)
      return s;
    auto down = operand(downShared, hp, slots, I, 1, qh);
    if (!down)
      return down.status();
    const char *downEntry = family == GemvKernels::Lanes   ? "dsc_moe_experts_down_lanes"
                            : family == GemvKernels::Rows  ? "dsc_moe_experts_down_rows"
                            : family == GemvKernels::Slots ? "dsc_moe_experts_down_slots"
                            : wg                           ? "dsc_moe_experts_down_wg"
                            : c.moeE4m3Mma                 ? "dsc_moe_experts_down_fast_e4m3"
                                                           : "dsc_moe_experts_down_fast";
    const MoeStepShape downShape = moeStepShape(family, false, Tt, k, D);
    if (Status s = c.launchEntry(downEntry, downShape.grid, downShape.block, down->smem,
                                 args(down->x, down->codes, down->scales, Tt, I, D, r2, r2s, s2,
                                      s2s, ip, k, E, op));
        !s)
      return s;
    const Dim3 combineGrid{unsigned(ceilDiv(D, kBlock * abi::kMoeCombinePerThread)),
                           unsigned(Tt), 1};
    if (Status s = c.launchEntry("dsc_moe_experts_combine_fast", combineGrid, block1(), 0,
                                 args(op, ip, Tt, k, E, D, yp));
        !s)
      return s;
  }
  return Status::ok();
}

Status moeExperts(CudaLaunchContext &c, const abi::MoeExpertsParams &p) {
  if (c.inputs.size() < 15)
    return runtime::invalidArgument("moe_experts: expected 15 inputs");
  const CudaTensor &x = *c.inputs[0], &weights = *c.inputs[1], &ids = *c.inputs[2];
  const CudaTensor &w1 = *c.inputs[3];
  long long T = x.dim(0), D = x.dim(1), I = w1.dim(1), E = w1.dim(0), k = ids.dim(1);
  if (D % 32 != 0 || I % 32 != 0)
    return runtime::invalidArgument("moe_experts: dim and inter must be multiples of 32");
  if (!c.cpuOrder(runtime::KernelFamily::MoeExperts) && T > 0) {
    bool ok = k <= abi::kMoeCombineMaxTopk; // the combine step orders the slots in shared memory
    for (size_t i = 0; i < 15; ++i) // x and every weight: 16-byte rows
      ok = ok && (i == 1 || i == 2 || aligned16({c.inputs[i]->ptr}));
    if (ok)
      return moeExpertsFast(c, p, T, D, I, E, k);
  }
  auto acc = c.scratch(size_t(T * D) * sizeof(float));
  auto order = c.scratch(size_t(T * k) * sizeof(int32_t));
  auto hbuf = c.scratch(size_t(T * I) * 2);
  if (!acc || !order || !hbuf)
    return !acc ? acc.status() : !order ? order.status() : hbuf.status();
  auto qx = actQuantScratch(c, T, D);
  auto qh = actQuantScratch(c, T, I);
  if (!qx || !qh)
    return !qx ? qx.status() : qh.status();
  CUdeviceptr xp = x.ptr, wp = weights.ptr, ip = ids.ptr, ap = *acc, op = *order, hp = *hbuf;
  CUdeviceptr r1 = c.inputs[3]->ptr, r1s = c.inputs[4]->ptr, r3 = c.inputs[5]->ptr,
              r3s = c.inputs[6]->ptr, r2 = c.inputs[7]->ptr, r2s = c.inputs[8]->ptr;
  CUdeviceptr s1 = c.inputs[9]->ptr, s1s = c.inputs[10]->ptr, s3 = c.inputs[11]->ptr,
              s3s = c.inputs[12]->ptr, s2 = c.inputs[13]->ptr, s2s = c.inputs[14]->ptr;
  CUdeviceptr yp = c.outputs[0]->ptr;
  long long TD = T * D;
  if (Status s = c.launchEntry("dsc_moe_experts_zero", gridFor(TD), block1(), 0, args(ap, TD)); !s)
    return s;
  if (Status s = c.launchEntry("dsc_moe_experts_order", gridFor(T), block1(), 0,
                               args(ip, T, k, E, op));
      !s)
    return s;
  const std::string prefix = "dsc_moe_experts";
  if (Status s = actQuant(c, prefix, xp, T, D, *qx); !s)
    return s;
  for (long long rank = 0; rank < k; ++rank) {
    if (Status s = c.launchEntry("dsc_moe_experts_up_fp4", gridFor(T * I), block1(), 0,
                                 args(p, qx->codes, qx->scales, T, D, I, r1, r1s, r3, r3s, ip,
                                      wp, op, k, rank, hp));
        !s)
      return s;
    if (Status s = actQuant(c, prefix, hp, T, I, *qh); !s)
      return s;
    if (Status s = c.launchEntry("dsc_moe_experts_down_fp4", gridFor(T * D), block1(), 0,
                                 args(qh->codes, qh->scales, T, I, D, r2, r2s, ip, op, k, rank,
                                      ap));
        !s)
      return s;
  }
  if (Status s = c.launchEntry("dsc_moe_experts_up_fp8", gridFor(T * I), block1(), 0,
                               args(p, qx->codes, qx->scales, T, D, I, s1, s1s, s3, s3s, hp));
      !s)
    return s;
  if (Status s = actQuant(c, prefix, hp, T, I, *qh); !s)
    return s;
  return c.launchEntry("dsc_moe_experts_down_fp8", gridFor(T * D), block1(), 0,
                       args(qh->codes, qh->scales, T, I, D, s2, s2s, ap, yp));
}

Status engramLookup(CudaLaunchContext &c, const abi::EngramLookupParams &p) {
  long long slot = p.slot;
  const CudaTensor &hashes = *c.inputs[0], &table = *c.inputs[1];
  long long S = hashes.dim(0), layers = hashes.dim(1), cols = hashes.dim(2);
  if (slot < 0 || slot >= layers)
    return runtime::invalidArgument("engram_lookup: slot outside the hash layers");
  long long stride = layers * cols, rows = table.dim(0), hd = table.dim(1);
  // The kernel reads the slot's columns (hashes + p.slot * cols).
  CUdeviceptr hp = hashes.ptr, tp = table.ptr, sp = c.inputs[2]->ptr, out = c.outputs[0]->ptr;
  return c.launchEntry("dsc_engram_lookup", gridFor(S * cols * hd), block1(), 0,
                       args(p, hp, S, cols, stride, tp, sp, rows, hd, out));
}

Status engramGate(CudaLaunchContext &c, const abi::EngramGateParams &p) {
  const CudaTensor &h = *c.inputs[0];
  long long S = h.dim(0), hc = h.dim(1), D = h.dim(2);
  // self.dim ** -0.5 rounded to fp32 (Engram.cpp).
  float invSqrtD = float(1.0 / std::sqrt(double(D)));
  CUdeviceptr hp = h.ptr, kv = c.inputs[1]->ptr, q = c.inputs[2]->ptr, kw = c.inputs[3]->ptr,
              out = c.outputs[0]->ptr;
  return c.launchEntry("dsc_engram_gate", gridRows(S * hc), block1(), 0,
                       args(p, hp, S, hc, D, kv, q, kw, invSqrtD, out));
}

} // namespace

void registerCudaDenseAdapters(CudaAdapterTable &table) {
  add<abi::LinearParams>(table, linear);
  add<abi::RmsNormParams>(table, rmsNorm);
  add<abi::HcMixesParams>(table, hcMixes);
  add<abi::HcPreParams>(table, hcPre);
  add<abi::HcPostParams>(table, hcPost);
  add<abi::CopyMeanParams>(table, copyMean);
  add<abi::HeadParams>(table, head);
  add<abi::GroupedOutputParams>(table, groupedOutput);
  add<abi::MoeGateParams>(table, moeGate);
  add<abi::MoeExpertsParams>(table, moeExperts);
  add<abi::EngramLookupParams>(table, engramLookup);
  add<abi::EngramGateParams>(table, engramGate);
}

} // namespace dsc::cuda
