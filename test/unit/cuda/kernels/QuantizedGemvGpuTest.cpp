//===- QuantizedGemvGpuTest.cpp - The FP8/FP4 GEMVs against the CPU reference ===//
//
// The lane-block entries dsc_linear_fp8_lanes / _fp4_lanes (codegen/kernels/
// lane_gemv.cuh) and the block-slot entries dsc_linear_fp8_slots / _fp4_slots
// (slot_gemv.cuh) and the warpgroup entries dsc_linear_fp8_wg / _fp4_wg
// (wg_gemv.cuh: FP8 wgmma; K % 128 == 0 shapes only) and the row-lane entries
// dsc_linear_fp8_rows / _fp4_rows (row_gemv.cuh: f16 staging where it fits,
// else a global act_quant), through linear.cu, on the GPU against
// cpu::linearFp8 / linearFp4 (the reference's
// block-scaled GEMMs) at odd shapes, M = 1 included, with one K range and
// with K splits reduced by dsc_linear_splitk_reduce_fast. The kernels sum in
// their own fixed order (the mma's, then the lanes' xor tree), so an output
// may differ from the CPU's by one bf16 rounding step of its fp32 sum, never
// more (outputs that nearly cancel are judged by a step of the outputs' rms /
// 64); and, what the runtime relies on: two runs give the same bytes, and a
// row's bytes do not depend on the other rows of the call.
// Needs a GPU (skips without one). First run on the H200 in session 9 (the
// lanes: PASS).
//===----------------------------------------------------------------------===//
#include "test/unit/cuda/kernels/GpuKernelTest.h"

#include "dsc/abi/LaunchShapes.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "runtime/cpu/kernels/dense/Linear.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <tuple>

namespace {

using dsc::tools::kernelArgs;
using dsc::tools::KernelHarness;

struct Shape {
  long long M, N, K, splits;
};

struct Operands {
  std::vector<uint16_t> x; ///< bf16 [M, K]
  std::vector<uint8_t> w,
      ws; ///< E4M3 [N, K] + UE8M0 [ceil(N/32), K/32], or E2M1 [N, K/2] + [N, K/32]
};

Operands makeOperands(const Shape &s, bool fp4, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  Operands o;
  o.x.resize(size_t(s.M * s.K));
  for (uint16_t &v : o.x)
    v = dsc::numerics::bf16FromFloat(normal(rng));
  std::uniform_int_distribution<int> byte(0, 255), scale(118, 130);
  o.w.resize(size_t(fp4 ? s.N * s.K / 2 : s.N * s.K));
  for (uint8_t &v : o.w) {
    int b = byte(rng);
    if (!fp4 && (b & 0x7f) == 0x7f) // no E4M3 NaN codes
      b &= 0xfe;
    v = uint8_t(b);
  }
  o.ws.resize(size_t((fp4 ? s.N : (s.N + 31) / 32) * (s.K / 32)));
  for (uint8_t &v : o.ws)
    v = uint8_t(scale(rng));
  return o;
}

/// The GPU's y [M, N] bf16 for the operands (quantised in the block, as the
/// runtime's decode path does).
/// The GEMV family under test: its entry suffix, weight rows per item and
/// whether an item is a warp (8 per block of 256 threads) or a warpgroup
/// block (dsc::abi::kWgThreads threads, its own staging smem).
struct Family {
  const char *suffix;
  long long tileRows, actRows;
  bool warpgroups;
  bool halfStaging = false; ///< row_gemv.cuh: f16 staging, global codes beyond 48 KiB
};
constexpr Family kLanes{"_lanes", 8, 8, false}, kSlots{"_slots", 16, 8, false},
    kWg{"_wg", dsc::abi::kWgTileRows, dsc::abi::kWgItemRows, true},
    kRows{"_rows", 8, 8, false, true};

std::vector<uint16_t> runGemv(KernelHarness &h, const Family &f, const Shape &s, bool fp4,
                              const Operands &o) {
  CUdeviceptr x = h.upload(o.x), w = h.upload(o.w), ws = h.upload(o.ws);
  CUdeviceptr y = h.upload(nullptr, size_t(s.M * s.N) * 2);
  CUdeviceptr partial = h.upload(nullptr, size_t(s.splits * s.M * s.N) * 4);
  CUdeviceptr none = 0;
  long long M = s.M, K = s.K, N = s.N, splits = s.splits;
  const unsigned items =
      unsigned(((N + f.tileRows - 1) / f.tileRows) * ((M + f.actRows - 1) / f.actRows) * splits);
  // The warpgroups stage each item's K range: wgGemv's perSplit blocks.
  const long long unit = dsc::abi::kWgStepBlocks * dsc::abi::kWgGroups;
  const long long itemBlocks = ((K / 32 + splits - 1) / splits + unit - 1) / unit * unit;
  size_t smem = f.warpgroups ? size_t(dsc::abi::wgSharedBytes(itemBlocks, 1))
                             : size_t(M * K + M * (K / 32) * 4); // dsc_gemv::quantBytes
  const unsigned grid = f.warpgroups ? items : (items + 7) / 8; // 8 warps per block
  const unsigned threads = f.warpgroups ? unsigned(dsc::abi::kWgThreads) : 256u;
  const std::string entry = std::string(fp4 ? "dsc_linear_fp4" : "dsc_linear_fp8") + f.suffix;
  CUdeviceptr xq = x, codes = none, scales = none;
  dsc::runtime::Status st;
  if (f.halfStaging) { // rowHalfBytes; beyond 48 KiB the global codes, read as they are
    smem = size_t(M * K * 2 + M * (K / 32) * 4);
    if (smem > 48 * 1024) {
      smem = 0;
      codes = h.upload(nullptr, size_t(M * K));
      scales = h.upload(nullptr, size_t(M * (K / 32)) * 4);
      xq = none;
      st = h.launch("linear", "dsc_linear_act_quant_fast", unsigned((M * (K / 32) + 7) / 8), 256,
                    0, kernelArgs(x, M, K, codes, scales));
      EXPECT_TRUE(st) << st.message();
    }
  }
  st = h.launch("linear", entry.c_str(), grid, threads, smem,
                kernelArgs(xq, codes, scales, M, K, w, ws, N, y, splits, partial));
  EXPECT_TRUE(st) << st.message();
  if (splits > 1) {
    long long MN = M * N;
    st = h.launch("linear", "dsc_linear_splitk_reduce_fast", unsigned((MN + 255) / 256), 256, 0,
                  kernelArgs(partial, splits, MN, y));
    EXPECT_TRUE(st) << st.message();
  }
  return h.download<uint16_t>(y, size_t(M * N));
}

/// |a - b| in bf16 rounding steps: one ulp of the larger, but at least one ulp
/// of `floor` (an output that nearly cancels to zero has a tiny ulp, while
/// the two sums' difference scales with the terms, not with the result).
double bf16Steps(uint16_t a, uint16_t b, float floor) {
  if (a == b)
    return 0.0;
  const float fa = dsc::numerics::bf16ToFloat(a), fb = dsc::numerics::bf16ToFloat(b);
  if (!std::isfinite(fa) || !std::isfinite(fb))
    return INFINITY; // a NaN or an infinity is never within a step
  if (fa == fb)
    return 0.0; // +0 and -0
  float big = std::fabs(fa) > std::fabs(fb) ? std::fabs(fa) : std::fabs(fb);
  big = big > floor ? big : floor;
  const double ulp = std::ldexp(1.0, std::ilogb(big) - 7); // bf16: 8 significant bits
  return std::fabs(double(fa) - double(fb)) / ulp;
}

using QuantizedGemvGpu =
    dsc::test::GpuKernelTest<::testing::TestWithParam<std::tuple<bool, Family>>>;

TEST_P(QuantizedGemvGpu, MatchesTheCpuReferenceWithinOneBf16Step) {
  const auto [fp4, family] = GetParam();
  for (const Shape &s : {Shape{1, 40, 96, 1}, Shape{1, 1280, 5120, 4}, Shape{3, 77, 160, 1},
                         Shape{8, 264, 512, 3}, Shape{13, 8, 2304, 2}, Shape{2, 1792, 5120, 16},
                         Shape{5, 33, 1280, 1}, Shape{1, 100, 1280, 1}, Shape{1, 5120, 8192, 4},
                         Shape{9, 130, 384, 1}, Shape{1, 64, 128, 1}}) {
    if (family.warpgroups && s.K % 128 != 0)
      continue; // the warpgroups take whole steps of K (the runtime runs the lanes there)
    SCOPED_TRACE("M " + std::to_string(s.M) + " N " + std::to_string(s.N) + " K " +
                 std::to_string(s.K) + " splits " + std::to_string(s.splits));
    const Operands o = makeOperands(s, fp4, uint32_t(s.M * 7919 + s.N * 31 + s.K));
    std::vector<uint16_t> cpu(size_t(s.M * s.N));
    if (fp4)
      dsc::cpu::linearFp4(o.x.data(), s.M, s.K, o.w.data(), o.ws.data(), s.N, cpu.data());
    else
      dsc::cpu::linearFp8(o.x.data(), s.M, s.K, o.w.data(), o.ws.data(), s.N, cpu.data());
    const std::vector<uint16_t> gpu = runGemv(*harness_, family, s, fp4, o);
    double sumSq = 0.0; // the outputs' rms / 64 is the floor of the step size
    for (uint16_t v : cpu)
      sumSq += double(dsc::numerics::bf16ToFloat(v)) * dsc::numerics::bf16ToFloat(v);
    const float floor = float(std::sqrt(sumSq / double(cpu.size())) / 64.0);
    size_t equal = 0, worst = 0;
    double worstSteps = 0.0;
    for (size_t i = 0; i < cpu.size(); ++i) {
      const double d = bf16Steps(gpu[i], cpu[i], floor);
      equal += d == 0.0;
      if (d > worstSteps) {
        worstSteps = d;
        worst = i;
      }
    }
    EXPECT_LE(worstSteps, 1.0) << "output " << worst << ": gpu "
                               << dsc::numerics::bf16ToFloat(gpu[worst]) << " cpu "
                               << dsc::numerics::bf16ToFloat(cpu[worst]);
    EXPECT_GE(double(equal), 0.9 * double(cpu.size())) << "most outputs round the same";
    EXPECT_EQ(runGemv(*harness_, family, s, fp4, o), gpu) << "same input, same bytes";
  }
}

TEST_P(QuantizedGemvGpu, ARowsBytesDoNotDependOnTheOtherRows) {
  const auto [fp4, family] = GetParam();
  const Shape all{11, 96, 640, 2};
  const Operands o = makeOperands(all, fp4, 17);
  const std::vector<uint16_t> together = runGemv(*harness_, family, all, fp4, o);
  for (long long m : {0LL, 3LL, 5LL, 7LL, 10LL}) {
    Operands one = o;
    one.x.assign(o.x.begin() + m * all.K, o.x.begin() + (m + 1) * all.K);
    const std::vector<uint16_t> alone =
        runGemv(*harness_, family, Shape{1, all.N, all.K, all.splits}, fp4, one);
    EXPECT_TRUE(std::equal(alone.begin(), alone.end(), together.begin() + m * all.N))
        << "row " << m;
  }
}

INSTANTIATE_TEST_SUITE_P(Formats, QuantizedGemvGpu,
                         ::testing::Combine(::testing::Values(false, true),
                                            ::testing::Values(kLanes, kSlots, kWg, kRows)),
                         [](const auto &info) {
                           const Family &f = std::get<1>(info.param);
                           return std::string(std::get<0>(info.param) ? "Fp4" : "Fp8") +
                                  (f.warpgroups    ? "Wg"
                                   : f.halfStaging ? "Rows"
                                   : f.tileRows == 8 ? "Lanes"
                                                     : "Slots");
                         });

} // namespace
