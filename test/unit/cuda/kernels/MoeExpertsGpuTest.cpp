//===- MoeExpertsGpuTest.cpp - The fast MoE steps against the CPU reference -===//
//
// The decode MoE path as moeExpertsFast (runtime/cuda/CudaAdaptersDense.cpp)
// launches it with a global act_quant: dsc_moe_experts_act_quant_fast of x,
// the up step (dsc_moe_experts_up_lanes / _wg: the routed FP4 experts' and
// the shared FP8 expert's w1, w3 and swiglu -> h), act_quant of h, the down
// step (_down_lanes / _wg -> one fp32 row per slot) and
// dsc_moe_experts_combine_fast (the slots in ascending expert id, plus the
// shared expert's row), on random operands, against cpu::moeExperts (the
// reference's MoE.forward after the gate). The GEMVs sum in their own fixed
// orders, so h may differ from the CPU's by a bf16 step and the output by a
// little more: the gate is 5% of the output's largest magnitude for any
// element and 1% of its rms for the rms of the differences (a wrong expert,
// slot, weight or row is off by the output's whole size). And what the
// runtime relies on: two runs give the same bytes, and a token's bytes do
// not depend on the other tokens of the call. Widths: D = 256, I = 128 (whole
// warpgroup steps), 12 experts, top-6, 1 and 3 tokens. Needs a GPU (skips
// without one); written in session 16, first run on the device next.
//===----------------------------------------------------------------------===//
#include "test/unit/cuda/kernels/GpuKernelTest.h"

#include "dsc/abi/KernelParams.h"
#include "dsc/abi/LaunchShapes.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "runtime/cpu/kernels/dense/Moe.h"
#include "runtime/cuda/GemvLaunch.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using dsc::tools::kernelArgs;
using dsc::tools::KernelHarness;
namespace cu = dsc::cuda;

constexpr long long kD = 256, kI = 128, kE = 12, kTopk = 6;
constexpr float kSwigluLimit = 10.0f;

/// Random FP4 / FP8 codes (no E4M3 NaN) and UE8M0 scales near 1.
std::vector<uint8_t> codes(size_t n, bool fp8, std::mt19937 &rng) {
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> v(n);
  for (uint8_t &b : v) {
    int x = byte(rng);
    if (fp8 && (x & 0x7f) == 0x7f)
      x &= 0xfe;
    b = uint8_t(x);
  }
  return v;
}
std::vector<uint8_t> scales(size_t n, std::mt19937 &rng) {
  std::uniform_int_distribution<int> scale(118, 126);
  std::vector<uint8_t> v(n);
  for (uint8_t &b : v)
    b = uint8_t(scale(rng));
  return v;
}

/// The operands of one MoE call of up to T tokens: stacked routed experts
/// [E, I, D/2] (w1, w3) and [E, D, I/2] (w2) with their per-row scales, the
/// shared expert's FP8 matrices with 32 x 32 block scales, x, the routes.
struct Operands {
  std::vector<uint16_t> x;
  std::vector<uint8_t> w1, w1s, w3, w3s, w2, w2s, s1, s1s, s3, s3s, s2, s2s;
  std::vector<int32_t> ids;
  std::vector<float> weights;
};
Operands makeOperands(long long T, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Operands o;
  o.x.resize(size_t(T * kD));
  for (uint16_t &v : o.x)
    v = dsc::numerics::bf16FromFloat(normal(rng));
  o.w1 = codes(size_t(kE * kI * kD / 2), false, rng);
  o.w1s = scales(size_t(kE * kI * kD / 32), rng);
  o.w3 = codes(size_t(kE * kI * kD / 2), false, rng);
  o.w3s = scales(size_t(kE * kI * kD / 32), rng);
  o.w2 = codes(size_t(kE * kD * kI / 2), false, rng);
  o.w2s = scales(size_t(kE * kD * kI / 32), rng);
  o.s1 = codes(size_t(kI * kD), true, rng);
  o.s1s = scales(size_t((kI / 32) * (kD / 32)), rng);
  o.s3 = codes(size_t(kI * kD), true, rng);
  o.s3s = scales(size_t((kI / 32) * (kD / 32)), rng);
  o.s2 = codes(size_t(kD * kI), true, rng);
  o.s2s = scales(size_t((kD / 32) * (kI / 32)), rng);
  std::uniform_real_distribution<float> route(0.05f, 0.4f);
  for (long long t = 0; t < T; ++t)
    for (long long j = 0; j < kTopk; ++j) {
      o.ids.push_back(int32_t((t * 5 + 2 * j) % kE)); // distinct within a token
      o.weights.push_back(route(rng));
    }
  return o;
}

/// The CPU reference's y [T, D].
std::vector<uint16_t> cpuMoe(const Operands &o, long long T) {
  dsc::cpu::MoeStackedExperts stacked{o.w1.data(), o.w1s.data(), o.w3.data(),
                                      o.w3s.data(), o.w2.data(), o.w2s.data()};
  const std::vector<dsc::cpu::MoeRoutedExpert> experts =
      dsc::cpu::moeExpertViews(stacked, kE, kD, kI);
  dsc::cpu::MoeSharedExpert shared{o.s1.data(), o.s1s.data(), o.s3.data(),
                                   o.s3s.data(), o.s2.data(), o.s2s.data()};
  dsc::cpu::MoeExpertsParams p;
  p.dim = kD;
  p.inter = kI;
  p.swigluLimit = kSwigluLimit;
  std::vector<uint16_t> y(size_t(T * kD));
  dsc::cpu::moeExperts(o.x.data(), T, p, experts.data(), kE, shared, o.ids.data(),
                       o.weights.data(), kTopk, y.data());
  return y;
}

/// The GPU's y [T, D] through `family`'s up and down entries.
/// staged: the up step act_quants x in its blocks (x as xq) and both steps
/// get the family's staging memory (the runtime's decode path); else both
/// read a global act_quant.
std::vector<uint16_t> gpuMoe(KernelHarness &h, dsc::runtime::GemvKernels family,
                             const Operands &o, long long T, bool staged = false) {
  const long long slots = T * (kTopk + 1);
  CUdeviceptr x = h.upload(o.x), w1 = h.upload(o.w1), w1s = h.upload(o.w1s),
              w3 = h.upload(o.w3), w3s = h.upload(o.w3s), w2 = h.upload(o.w2),
              w2s = h.upload(o.w2s), s1 = h.upload(o.s1), s1s = h.upload(o.s1s),
              s3 = h.upload(o.s3), s3s = h.upload(o.s3s), s2 = h.upload(o.s2),
              s2s = h.upload(o.s2s), ids = h.upload(o.ids), weights = h.upload(o.weights);
  CUdeviceptr xc = h.upload(nullptr, size_t(T * kD)),
              xs = h.upload(nullptr, size_t(T * (kD / 32)) * 4),
              hbuf = h.upload(nullptr, size_t(slots * kI) * 2),
              hc = h.upload(nullptr, size_t(slots * kI)),
              hs = h.upload(nullptr, size_t(slots * (kI / 32)) * 4),
              outs = h.upload(nullptr, size_t(slots * kD) * 4),
              y = h.upload(nullptr, size_t(T * kD) * 2);
  CUdeviceptr none = 0;
  long long Tv = T, D = kD, I = kI, k = kTopk, E = kE, slotsv = slots;
  dsc::abi::MoeExpertsParams p{};
  p.swiglu_limit = kSwigluLimit;
  const bool wg = family == dsc::runtime::GemvKernels::Warpgroups,
             rows = family == dsc::runtime::GemvKernels::Rows;
  const std::string suffix = wg ? "_wg" : rows ? "_rows" : "_lanes";
  const cu::MoeStepShape upShape = cu::moeStepShape(family, true, T, kTopk, kI),
                         downShape = cu::moeStepShape(family, false, T, kTopk, kD);
  dsc::runtime::Status st =
      h.launch("moe_experts", "dsc_moe_experts_act_quant_fast", cu::gemvGrid(T * (kD / 32)).x,
               cu::gemvBlock().x, 0, kernelArgs(x, Tv, D, xc, xs));
  EXPECT_TRUE(st) << st.message();
  st = h.launch("moe_experts", "dsc_moe_experts_up" + suffix,
                upShape.grid.x, upShape.block.x, cu::moeLaunchSmem(family, staged, T, kD, 2),
                kernelArgs(p, staged ? x : none, staged ? none : xc, staged ? none : xs, Tv, D, I,
                           w1, w1s, w3, w3s, s1, s1s, s3, s3s, ids, weights, k, E, hbuf));
  EXPECT_TRUE(st) << st.message();
  st = h.launch("moe_experts", "dsc_moe_experts_act_quant_fast",
                cu::gemvGrid(slots * (kI / 32)).x, cu::gemvBlock().x, 0,
                kernelArgs(hbuf, slotsv, I, hc, hs));
  EXPECT_TRUE(st) << st.message();
  st = h.launch("moe_experts", "dsc_moe_experts_down" + suffix,
                downShape.grid.x, downShape.block.x,
                cu::moeLaunchSmem(family, staged, slots, kI, 1),
                kernelArgs(none, hc, hs, Tv, I, D, w2, w2s, s2, s2s, ids, k, E, outs));
  EXPECT_TRUE(st) << st.message();
  const unsigned combineX = unsigned(cu::ceilDiv(kD, 256 * dsc::abi::kMoeCombinePerThread));
  st = h.launch2D("moe_experts", "dsc_moe_experts_combine_fast", combineX, unsigned(T), 256, 0,
                  kernelArgs(outs, ids, Tv, k, E, D, y));
  EXPECT_TRUE(st) << st.message();
  return h.download<uint16_t>(y, size_t(T * kD));
}

using MoeExpertsGpu =
    dsc::test::GpuKernelTest<::testing::TestWithParam<dsc::runtime::GemvKernels>>;

TEST_P(MoeExpertsGpu, MatchesTheCpuReferenceDeterministicallyPerToken) {
  const dsc::runtime::GemvKernels family = GetParam();
  for (const long long T : {1LL, 3LL}) {
    SCOPED_TRACE("T " + std::to_string(T));
    const Operands o = makeOperands(T, 7);
    const std::vector<uint16_t> cpu = cpuMoe(o, T), gpu = gpuMoe(*harness_, family, o, T);
    ASSERT_TRUE(harness_->status()) << harness_->status().message();
    double maxRef = 0.0, sumRef = 0.0, maxDiff = 0.0, sumDiff = 0.0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      const double a = dsc::numerics::bf16ToFloat(cpu[i]), b = dsc::numerics::bf16ToFloat(gpu[i]);
      ASSERT_TRUE(std::isfinite(b)) << "element " << i;
      maxRef = std::max(maxRef, std::fabs(a));
      sumRef += a * a;
      maxDiff = std::max(maxDiff, std::fabs(a - b));
      sumDiff += (a - b) * (a - b);
    }
    ASSERT_GT(maxRef, 0.0) << "the reference output is all zero: the operands test nothing";
    EXPECT_LE(maxDiff, 0.05 * maxRef);
    EXPECT_LE(std::sqrt(sumDiff), 0.01 * std::sqrt(sumRef));
    EXPECT_EQ(gpuMoe(*harness_, family, o, T), gpu) << "a second run";
  }
  // Token 0 alone vs token 0 among three: the generator's draws differ with
  // T, so the T = 3 operands take the T = 1 ones' weights and token 0's row
  // and route weights (its expert ids are the same for any T).
  Operands one = makeOperands(1, 7), three = makeOperands(3, 7);
  std::copy(one.x.begin(), one.x.begin() + kD, three.x.begin());
  std::copy(one.weights.begin(), one.weights.begin() + kTopk, three.weights.begin());
  three.w1 = one.w1, three.w1s = one.w1s, three.w3 = one.w3, three.w3s = one.w3s;
  three.w2 = one.w2, three.w2s = one.w2s, three.s1 = one.s1, three.s1s = one.s1s;
  three.s3 = one.s3, three.s3s = one.s3s, three.s2 = one.s2, three.s2s = one.s2s;
  const std::vector<uint16_t> alone = gpuMoe(*harness_, family, one, 1),
                              among = gpuMoe(*harness_, family, three, 3);
  EXPECT_EQ(std::vector<uint16_t>(among.begin(), among.begin() + kD), alone)
      << "token 0's bytes depend on the call's other tokens";
  // The in-block act_quant (and, for the row lanes, the f16 staging) gives
  // the bytes of the global act_quant path.
  if (family != dsc::runtime::GemvKernels::Warpgroups)
    EXPECT_EQ(gpuMoe(*harness_, family, three, 3, true), among)
        << "the staged activation path changes the bytes";
}

INSTANTIATE_TEST_SUITE_P(Families, MoeExpertsGpu,
                         ::testing::Values(dsc::runtime::GemvKernels::Lanes,
                                           dsc::runtime::GemvKernels::Warpgroups,
                                           dsc::runtime::GemvKernels::Rows),
                         [](const auto &info) {
                           return info.param == dsc::runtime::GemvKernels::Lanes ? "lanes"
                                  : info.param == dsc::runtime::GemvKernels::Rows ? "rows"
                                                                                   : "wg";
                         });

} // namespace
