//===- CudaAdaptersDense.cpp - CUDA launch adapters for the dense kernels --===//
//
// linear, rms_norm, hc_mixes / hc_pre / hc_post, copy_mean, head,
// grouped_output, moe_gate, moe_experts, engram_lookup, engram_gate: each
// adapter reads the launch's tensors in the same order as its CPU twin
// (runtime/cpu/CpuAdaptersDense.cpp) and launches the entries of
// codegen/kernels/<name>.cu (docs/cuda-kernels-dense.md). Intermediate
// buffers (quantised activations, MoE accumulators) are launch scratch.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"

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

/// act_quant scratch of an [M, K] bf16 activation: E4M3 codes + fp32 scales.
struct ActQuant {
  CUdeviceptr codes = 0, scales = 0;
};
Expected<ActQuant> actQuantScratch(CudaLaunchContext &c, long long M, long long K) {
  ActQuant q;
  auto codes = c.scratch(size_t(M * K));
  if (!codes)
    return codes.status();
  auto scales = c.scratch(size_t(M * (K / 32)) * sizeof(float));
  if (!scales)
    return scales.status();
  q.codes = *codes;
  q.scales = *scales;
  return q;
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
  auto q = actQuantScratch(c, M, K);
  if (!q)
    return q.status();
  if (Status s = actQuant(c, "dsc_linear", xp, M, K, *q); !s)
    return s;
  CUdeviceptr sp = c.inputs[2]->ptr;
  return c.launchEntry(p.quant == Q::fp8 ? "dsc_linear_fp8" : "dsc_linear_fp4", gridFor(M * N),
                       block1(), 0, args(q->codes, q->scales, M, K, wp, sp, N, yp));
}

Status rmsNorm(CudaLaunchContext &c, const abi::RmsNormParams &p) {
  const CudaTensor &x = *c.inputs[0];
  long long rows = rowsOf(x), n = x.shape.back();
  CUdeviceptr xp = x.ptr, wp = c.inputs[1]->ptr, yp = c.outputs[0]->ptr;
  return c.launchEntry("dsc_rms_norm", gridRows(rows), block1(), 0, args(p, xp, rows, n, wp, yp));
}

Status hcMixes(CudaLaunchContext &c, const abi::HcMixesParams &p) {
  const CudaTensor &h = *c.inputs[0];
  long long S = h.dim(0), hc = h.dim(1), D = h.dim(2);
  if (hc < 1 || hc > 8)
    return runtime::invalidArgument("hc_mixes: the CUDA kernel supports 1..8 copies, not " +
                                    std::to_string(hc));
  CUdeviceptr hp = h.ptr, fn = c.inputs[1]->ptr, sc = c.inputs[2]->ptr, base = c.inputs[3]->ptr,
              pre = c.outputs[0]->ptr, post = c.outputs[1]->ptr, comb = c.outputs[2]->ptr;
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

Status moeGate(CudaLaunchContext &c, const abi::MoeGateParams &p) {
  const CudaTensor &x = *c.inputs[0], &w = *c.inputs[1];
  long long T = x.dim(0), D = x.dim(1), E = w.dim(0);
  size_t smem = size_t(E) * (2 * sizeof(float) + 1);
  if (smem > 48 * 1024)
    return runtime::invalidArgument("moe_gate: too many experts for the CUDA kernel");
  CUdeviceptr xp = x.ptr, wp = w.ptr, bias = c.inputs.size() > 2 ? c.inputs[2]->ptr : 0,
              weights = c.outputs[0]->ptr, ids = c.outputs[1]->ptr;
  return c.launchEntry("dsc_moe_gate", gridRows(T), block1(), smem,
                       args(p, xp, T, D, wp, bias, E, weights, ids));
}

Status moeExperts(CudaLaunchContext &c, const abi::MoeExpertsParams &p) {
  if (c.inputs.size() < 15)
    return runtime::invalidArgument("moe_experts: expected 15 inputs");
  const CudaTensor &x = *c.inputs[0], &weights = *c.inputs[1], &ids = *c.inputs[2];
  const CudaTensor &w1 = *c.inputs[3];
  long long T = x.dim(0), D = x.dim(1), I = w1.dim(1), E = w1.dim(0), k = ids.dim(1);
  if (D % 32 != 0 || I % 32 != 0)
    return runtime::invalidArgument("moe_experts: dim and inter must be multiples of 32");
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
