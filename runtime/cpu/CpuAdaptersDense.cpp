//===- CpuAdaptersDense.cpp - Launch adapters for the dense kernels -------===//
//
// linear, rms_norm, hc_mixes / hc_pre / hc_post, copy_mean, head,
// grouped_output, moe_gate, moe_experts, engram_lookup, engram_gate: each
// adapter reads the launch's tensors in the order the lowering emits them
// (the ds op's operands; docs/kernels.md) and calls kernels/dense.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuAdapter.h"

#include "runtime/cpu/kernels/dense/Embedding.h"
#include "runtime/cpu/kernels/dense/Engram.h"
#include "runtime/cpu/kernels/dense/GroupedOutput.h"
#include "runtime/cpu/kernels/dense/Linear.h"
#include "runtime/cpu/kernels/dense/Mhc.h"
#include "runtime/cpu/kernels/dense/Moe.h"
#include "runtime/cpu/kernels/dense/Norm.h"

namespace dsc::cpu {
namespace {

int64_t rowsOf(const HostTensor &t) { return t.numElements() / t.shape().back(); }

Status linear(LaunchContext &c, const abi::LinearParams &p) {
  using Q = abi::LinearQuant;
  const HostTensor &x = *c.inputs[0], &w = *c.inputs[1];
  HostTensor &y = *c.outputs[0];
  int64_t M = rowsOf(x), K = x.shape().back(), N = w.dim(0);
  if (p.quant == Q::fp8)
    linearFp8(x.data<uint16_t>(), M, K, w.data<uint8_t>(), c.inputs[2]->data<uint8_t>(), N,
              y.data<uint16_t>());
  else if (p.quant == Q::fp4)
    linearFp4(x.data<uint16_t>(), M, K, w.data<uint8_t>(), c.inputs[2]->data<uint8_t>(), N,
              y.data<uint16_t>());
  else if (p.quant == Q::bf16)
    linearBf16(x.data<uint16_t>(), M, K, w.data<uint16_t>(), N, y.data<uint16_t>());
  else
    return runtime::failedPrecondition(std::string("linear: the CPU backend has no '") +
                                      abi::kLinearQuantNames[int(p.quant)] + "' linear");
  return Status::ok();
}

Status rmsNormAdapter(LaunchContext &c, const abi::RmsNormParams &p) {
  float eps = float(p.eps);
  const HostTensor &x = *c.inputs[0];
  rmsNorm(x.data<uint16_t>(), rowsOf(x), x.shape().back(), c.inputs[1]->data<uint16_t>(), eps,
          c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

Status hcMixesAdapter(LaunchContext &c, const abi::HcMixesParams &p) {
  int iters = int(p.sinkhorn_iters);
  float eps = float(p.eps), normEps = float(p.norm_eps);
  const HostTensor &h = *c.inputs[0];
  hcMixes(h.data<uint16_t>(), h.dim(0), h.dim(1), h.dim(2), c.inputs[1]->data<float>(),
          c.inputs[2]->data<float>(), c.inputs[3]->data<float>(), iters, normEps, eps,
          c.outputs[0]->data<float>(), c.outputs[1]->data<float>(), c.outputs[2]->data<float>());
  return Status::ok();
}

Status hcPreAdapter(LaunchContext &c) {
  const HostTensor &h = *c.inputs[0];
  hcPre(h.data<uint16_t>(), h.dim(0), h.dim(1), h.dim(2), c.inputs[1]->data<float>(),
        c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

Status hcPostAdapter(LaunchContext &c) {
  const HostTensor &res = *c.inputs[1];
  hcPost(c.inputs[0]->data<uint16_t>(), res.data<uint16_t>(), c.inputs[2]->data<float>(),
         c.inputs[3]->data<float>(), res.dim(0), res.dim(1), res.dim(2),
         c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

Status copyMean(LaunchContext &c) {
  const HostTensor &h = *c.inputs[0];
  hcCopyMean(h.data<uint16_t>(), h.dim(0), h.dim(1), h.dim(2), c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

Status head(LaunchContext &c) {
  const HostTensor &x = *c.inputs[0], &w = *c.inputs[1];
  HostTensor &logits = *c.outputs[0];
  int64_t rows = logits.dim(0), D = x.shape().back();
  if (rows > rowsOf(x))
    return runtime::invalidArgument("head: " + std::to_string(rows) + " logit rows, the input has " +
                                    std::to_string(rowsOf(x)));
  // last_only: the head runs on the last `rows` positions (rows = 1).
  const uint16_t *first = x.data<uint16_t>() + (rowsOf(x) - rows) * D;
  headLogits(first, rows, D, w.data<uint16_t>(), w.dim(0), logits.data<float>());
  return Status::ok();
}

Status groupedOutput(LaunchContext &c, const abi::GroupedOutputParams &p) {
  int64_t groups = p.groups;
  const HostTensor &o = *c.inputs[0], &woA = *c.inputs[1], &woB = *c.inputs[2];
  int64_t S = o.dim(0), din = o.dim(1) * o.dim(2) / groups, R = woA.dim(0) / groups;
  groupedOutputProjection(o.data<uint16_t>(), S, groups, din, woA.data<uint16_t>(), R,
                          woB.data<uint8_t>(), c.inputs[3]->data<uint8_t>(), woB.dim(0),
                          c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

Status moeGateAdapter(LaunchContext &c, const abi::MoeGateParams &p) {
  MoeGateParams gp;
  gp.topk = p.topk;
  gp.routeScale = float(p.route_scale);
  gp.gateTemp = float(p.temperature);
  gp.normTopkProb = p.normalize != 0;
  const HostTensor &x = *c.inputs[0], &w = *c.inputs[1];
  gp.nExperts = w.dim(0);
  moeGate(x.data<uint16_t>(), x.dim(0), x.dim(1), w.data<uint16_t>(), c.inputs[2]->data<float>(),
          nullptr, nullptr, gp, c.outputs[1]->data<int32_t>(), c.outputs[0]->data<float>());
  return Status::ok();
}

Status moeExpertsAdapter(LaunchContext &c, const abi::MoeExpertsParams &p) {
  MoeExpertsParams ep;
  ep.swigluLimit = float(p.swiglu_limit);
  const HostTensor &x = *c.inputs[0], &weights = *c.inputs[1], &ids = *c.inputs[2];
  const HostTensor &w1 = *c.inputs[3];
  ep.dim = x.dim(1);
  ep.inter = w1.dim(1);
  int64_t E = w1.dim(0);
  MoeStackedExperts stacked{w1.data<uint8_t>(),          c.inputs[4]->data<uint8_t>(),
                            c.inputs[5]->data<uint8_t>(), c.inputs[6]->data<uint8_t>(),
                            c.inputs[7]->data<uint8_t>(), c.inputs[8]->data<uint8_t>()};
  std::vector<MoeRoutedExpert> experts = moeExpertViews(stacked, E, ep.dim, ep.inter);
  MoeSharedExpert shared{c.inputs[9]->data<uint8_t>(),  c.inputs[10]->data<uint8_t>(),
                         c.inputs[11]->data<uint8_t>(), c.inputs[12]->data<uint8_t>(),
                         c.inputs[13]->data<uint8_t>(), c.inputs[14]->data<uint8_t>()};
  moeExperts(x.data<uint16_t>(), x.dim(0), ep, experts.data(), E, shared, ids.data<int32_t>(),
             weights.data<float>(), ids.dim(1), c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

Status engramLookupAdapter(LaunchContext &c, const abi::EngramLookupParams &p) {
  int64_t slot = p.slot;
  const HostTensor &hashes = *c.inputs[0], &table = *c.inputs[1];
  int64_t layers = hashes.dim(1), cols = hashes.dim(2);
  engramLookup(hashes.data<int64_t>() + slot * cols, hashes.dim(0), cols, layers * cols,
               table.data<uint8_t>(), c.inputs[2]->data<uint8_t>(), table.dim(0), table.dim(1),
               c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

Status engramGateAdapter(LaunchContext &c, const abi::EngramGateParams &p) {
  float eps = float(p.eps);
  const HostTensor &h = *c.inputs[0];
  engramGate(h.data<uint16_t>(), h.dim(0), h.dim(1), h.dim(2), c.inputs[1]->data<uint16_t>(),
             c.inputs[2]->data<uint16_t>(), c.inputs[3]->data<uint16_t>(), eps, nullptr,
             c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

} // namespace

void registerDenseAdapters(AdapterTable &table) {
  add<abi::LinearParams>(table, linear);
  add<abi::RmsNormParams>(table, rmsNormAdapter);
  add<abi::HcMixesParams>(table, hcMixesAdapter);
  add<abi::HcPreParams>(table, hcPreAdapter);
  add<abi::HcPostParams>(table, hcPostAdapter);
  add<abi::CopyMeanParams>(table, copyMean);
  add<abi::HeadParams>(table, head);
  add<abi::GroupedOutputParams>(table, groupedOutput);
  add<abi::MoeGateParams>(table, moeGateAdapter);
  add<abi::MoeExpertsParams>(table, moeExpertsAdapter);
  add<abi::EngramLookupParams>(table, engramLookupAdapter);
  add<abi::EngramGateParams>(table, engramGateAdapter);
}

} // namespace dsc::cpu
