//===- MhcEntryGpuTest.cpp - The one-launch mhc_entry against its steps ---===//
//
// dsc_mhc_entry_decode_fast (codegen/kernels/mhc_entry.cu) runs a native
// mhc_entry group's [hc_post] hc_pre rms_norm in one launch. Its contract is
// the steps' bytes: here it runs on random operands next to the steps' fast
// kernels (dsc_hc_post, dsc_hc_pre, dsc_rms_norm_fast, each already checked
// against the CPU reference), with and without hc_post, at a tiny and the
// released width, 1 to 5 rows and a grid smaller than the rows (the block
// loop), and every output (the stream h, the normed row y) must be
// byte-identical. The collapse weights are an input (the previous
// sublayer's pre), as in the model. Needs a GPU (skips without one).
//===----------------------------------------------------------------------===//
#include "test/unit/cuda/kernels/GpuKernelTest.h"

#include "dsc/abi/KernelParams.h"
#include "dsc/abi/LaunchShapes.h"
#include "dsc/numerics/ScalarCodecs.h"

#include <gtest/gtest.h>

#include <random>

namespace {

using dsc::tools::kernelArgs;

using MhcEntryGpu = dsc::test::GpuKernelTest<>;

std::vector<uint16_t> randomBf16(size_t n, float sd, std::mt19937 &rng) {
  std::normal_distribution<float> normal(0.0f, sd);
  std::vector<uint16_t> v(n);
  for (uint16_t &x : v)
    x = dsc::numerics::bf16FromFloat(normal(rng));
  return v;
}
std::vector<float> randomF32(size_t n, float mean, float sd, std::mt19937 &rng) {
  std::normal_distribution<float> normal(mean, sd);
  std::vector<float> v(n);
  for (float &x : v)
    x = normal(rng);
  return v;
}

TEST_F(MhcEntryGpu, OneLaunchEqualsTheStepsBytes) {
  const long long hc = 4;
  const unsigned threads = 256; // the steps' elementwise blocks
  for (const long long D : {96LL, 5120LL})
    for (const long long S : {1LL, 5LL})
      for (const bool withPost : {false, true}) {
        const long long width = hc * D;
        std::mt19937 rng(uint32_t(D * 7 + S * 3 + withPost));
        const std::vector<uint16_t> res = randomBf16(size_t(S * width), 1.0f, rng),
                                    x = randomBf16(size_t(S * D), 1.0f, rng),
                                    w = randomBf16(size_t(D), 1.0f, rng);
        const std::vector<float> postIn = randomF32(size_t(S * hc), 1.0f, 0.3f, rng),
                                 combIn = randomF32(size_t(S * hc * hc), 0.25f, 0.1f, rng),
                                 pre = randomF32(size_t(S * hc), 0.5f, 0.2f, rng);
        dsc::abi::RmsNormParams np{};
        np.eps = 1e-6;
        CUdeviceptr xp = harness_->upload(x), rp = harness_->upload(res),
                    pip = harness_->upload(postIn), cip = harness_->upload(combIn),
                    mp = harness_->upload(pre), wp = harness_->upload(w);
        CUdeviceptr ha = harness_->upload(nullptr, size_t(S * width) * 2),
                    hb = harness_->upload(nullptr, size_t(S * width) * 2),
                    ya = harness_->upload(nullptr, size_t(S * D) * 2),
                    yb = harness_->upload(nullptr, size_t(S * D) * 2);
        long long Sv = S, hcv = hc, Dv = D;
        // The steps. Without hc_post the stream is `res` itself.
        CUdeviceptr streamA = withPost ? ha : rp, streamB = withPost ? hb : rp;
        dsc::runtime::Status st;
        if (withPost) {
          st = harness_->launch("hc_post", "dsc_hc_post", unsigned((S * width + 255) / 256), threads,
                                0, kernelArgs(xp, rp, pip, cip, Sv, hcv, Dv, ha));
          ASSERT_TRUE(st) << st.message();
        }
        CUdeviceptr collapsed = harness_->upload(nullptr, size_t(S * D) * 2);
        st = harness_->launch("hc_pre", "dsc_hc_pre", unsigned((S * D + 255) / 256), threads, 0,
                              kernelArgs(streamA, Sv, hcv, Dv, mp, collapsed));
        ASSERT_TRUE(st) << st.message();
        long long rows = S, n = D;
        st = harness_->launch("rms_norm", "dsc_rms_norm_fast", unsigned(S),
                              unsigned(dsc::abi::kNormThreads), 0,
                              kernelArgs(np, collapsed, rows, n, wp, ya));
        ASSERT_TRUE(st) << st.message();
        // The one launch, with one block per row and with fewer blocks.
        for (const unsigned grid : {unsigned(S), 2u}) {
          CUdeviceptr xb = withPost ? xp : 0, resb = withPost ? rp : 0;
          // Zeroed first: each launch must write every byte itself.
          ASSERT_EQ(harness_->driver().cuMemsetD8(yb, 0, size_t(S * D) * 2), CUDA_SUCCESS);
          if (withPost) {
            ASSERT_EQ(harness_->driver().cuMemsetD8(hb, 0, size_t(S * width) * 2), CUDA_SUCCESS);
          }
          st = harness_->launch("mhc_entry", "dsc_mhc_entry_decode_fast", grid,
                                unsigned(dsc::abi::kMhcDecodeThreads), size_t(2 * D),
                                kernelArgs(np, xb, resb, pip, cip, streamB, Sv, hcv, Dv, mp, wp,
                                           yb));
          ASSERT_TRUE(st) << st.message();
          const std::string at = " (D " + std::to_string(D) + ", S " + std::to_string(S) +
                                 (withPost ? ", hc_post" : "") + ", grid " +
                                 std::to_string(grid) + ")";
          if (withPost) {
            EXPECT_EQ(harness_->download<uint16_t>(hb, size_t(S * width)),
                      harness_->download<uint16_t>(ha, size_t(S * width)))
                << "stream" << at;
          }
          EXPECT_EQ(harness_->download<uint16_t>(yb, size_t(S * D)),
                    harness_->download<uint16_t>(ya, size_t(S * D)))
              << "normed row" << at;
        }
        ASSERT_TRUE(harness_->status()) << harness_->status().message();
      }
}

} // namespace
