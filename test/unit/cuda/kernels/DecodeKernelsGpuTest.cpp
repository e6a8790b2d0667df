//===- DecodeKernelsGpuTest.cpp - Session-8 decode kernels against the CPU ===//
//
// The kernels spread over warps in session 8, byte for byte against the CPU
// reference: dsc_window_kv (one warp per FP8 tile) + dsc_window_kv_ring
// against cpu::windowKvDecode over several decode steps (the ring's record
// bytes in both page orders, and the decoded rows); the fast mHC mixes
// (dsc_hc_mixes_dot_fast + _finish_fast) against the CPU-order dsc_hc_mixes
// (bytes) and cpu::hcMixes (within the device expf's few ulps); dsc_moe_gate_select_fast
// (scores in shared memory) against the reference's top-k order (NaN first,
// larger first, lower id at ties) and its normalisation, and
// dsc_moe_gate_fused_fast (scores + the last block's select) against the two
// launches (bytes, its ticket word left zero); dsc_index_queries_rope_qdq (one warp per
// 32-value block: RoPE then FP4 E8M0 QDQ) against dsc_rope (itself within one bf16 step of
// cpu::applyRope: the device's sinf/cosf) + numerics::qdqFp4E8M0Row (what
// cpu::indexQueries does after its GEMM), and dsc_moe_experts_combine_fast
// (slots ranked once per block) against the CPU's order of the sum over
// experts (valid slots in ascending expert id, ties in slot order, then the
// shared expert). Needs a GPU (skips without one); written in session 8 with
// no device time left: first run on the H200 pending.
//===----------------------------------------------------------------------===//
#include "test/unit/cuda/kernels/GpuKernelTest.h"

#include "dsc/abi/KernelParams.h"
#include "dsc/abi/LaunchShapes.h"
#include "dsc/numerics/Quantize.h"
#include "dsc/numerics/Rope.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "runtime/cpu/kernels/attention/KvRecords.h"
#include "runtime/cpu/kernels/attention/Rope.h"
#include "runtime/cpu/kernels/attention/WindowKv.h"
#include "runtime/cpu/kernels/dense/Mhc.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

namespace {

using dsc::tools::kernelArgs;
using dsc::tools::KernelHarness;

using DecodeKernelsGpu = dsc::test::GpuKernelTest<>;

TEST_F(DecodeKernelsGpu, IndexQueriesRopeQdqEqualsRopeThenTheNumericsQdq) {
  const long long H = 5, dk = 128, ropeDim = 64;
  for (const long long S : {1LL, 3LL}) {
    for (const long long startPos : {0LL, 777LL, 65535LL}) {
      std::mt19937 rng(uint32_t(S * 131 + startPos));
      std::normal_distribution<float> normal(0.0f, 2.0f);
      std::vector<uint16_t> qb(static_cast<size_t>(S * H * dk));
      for (uint16_t &v : qb)
        v = dsc::numerics::bf16FromFloat(normal(rng));
      qb[7] = dsc::numerics::bf16FromFloat(0.0f); // a zero and a large value in the blocks
      qb[40] = dsc::numerics::bf16FromFloat(3.0e4f);
      dsc::cpu::RopeFreqs freqs = dsc::cpu::makeRopeFreqs(ropeDim, 10000.0);
      const long long callState[3] = {startPos, S, 0};
      CUdeviceptr qbp = harness_->upload(qb), f = harness_->upload(freqs.invFreq),
                  cs = harness_->upload(callState, sizeof(callState)),
                  q = harness_->upload(nullptr, qb.size() * 2),
                  r = harness_->upload(nullptr, qb.size() * 2);
      long long Sv = S, Hv = H, dkv = dk;
      // The rotation as dsc_rope computes it (the device's sinf/cosf may differ
      // from the host libm's by an ulp, so the CPU's applyRope is not a
      // byte reference for it), then the QDQ on the host (numerics).
      dsc::abi::RopeParams rp{};
      rp.rope.dim = ropeDim;
      dsc::runtime::Status st =
          harness_->launch("rope", "dsc_rope", unsigned((S * H * dk + 255) / 256), 256, 0,
                           kernelArgs(rp, qbp, r, Sv, Hv, dkv, f, cs));
      ASSERT_TRUE(st) << st.message();
      const std::vector<uint16_t> rotated = harness_->download<uint16_t>(r, qb.size());
      std::vector<uint16_t> cpuRotated = qb; // and the CPU's within one bf16 step of it
      dsc::cpu::applyRope(cpuRotated.data(), S, H, dk, freqs, startPos, 1, false);
      for (size_t i = 0; i < qb.size(); ++i) {
        const float a = dsc::numerics::bf16ToFloat(rotated[i]),
                    b = dsc::numerics::bf16ToFloat(cpuRotated[i]);
        ASSERT_LE(std::fabs(a - b), std::fabs(b) / 128.0f + 1e-30f) << "channel " << i;
      }
      std::vector<uint16_t> expected(qb.size());
      std::vector<float> in(static_cast<size_t>(dk)), out(static_cast<size_t>(dk));
      for (long long v = 0; v < S * H; ++v) {
        for (long long c = 0; c < dk; ++c)
          in[size_t(c)] = dsc::numerics::bf16ToFloat(rotated[size_t(v * dk + c)]);
        dsc::numerics::qdqFp4E8M0Row(in.data(), int(dk), dsc::numerics::kFp4E8M0Block, out.data());
        for (long long c = 0; c < dk; ++c)
          expected[size_t(v * dk + c)] = dsc::numerics::bf16FromFloat(out[size_t(c)]);
      }
      dsc::abi::IndexQueriesParams p{};
      p.rope.dim = ropeDim;
      const unsigned grid = unsigned((S * H * dk + 255) / 256); // a warp per 32-value block
      st = harness_->launch("index_queries", "dsc_index_queries_rope_qdq", grid, 256, 0,
                            kernelArgs(p, qbp, Sv, Hv, dkv, f, cs, q));
      ASSERT_TRUE(st) << st.message();
      EXPECT_EQ(harness_->download<uint16_t>(q, qb.size()), expected)
          << "S " << S << " startPos " << startPos;
    }
  }
}

TEST_F(DecodeKernelsGpu, WindowKvDecodeWritesTheCpuRingBytes) {
  namespace num = dsc::numerics;
  for (const int order : {0, 1}) { // KvPageOrder TokenInterleaved, PagePlanar
    for (const long long D : {96LL, 512LL}) {
      const long long W = 8;
      num::KvPageLayout layout;
      layout.format = num::swaKvFormat(int32_t(D));
      layout.tokensPerPage = 4;
      layout.order = num::KvPageOrder(order);
      dsc::cpu::KvRecordStore store(layout, W);
      const size_t ringBytes = store.bytes().size();
      CUdeviceptr ring = harness_->upload(nullptr, ringBytes);
      CUdeviceptr rows = harness_->upload(nullptr, size_t(W * D) * 4);
      std::vector<float> cpuRows(static_cast<size_t>(W * D));
      std::mt19937 rng(uint32_t(D + order));
      std::normal_distribution<float> normal(0.0f, 3.0f);
      dsc::abi::WindowKvParams p{};
      p.window = W;
      int values = int(D), tile = layout.format.valuesPerTile,
          valueType = int(layout.format.valueType), scaleType = int(layout.format.scaleType),
          tokensPerPage = layout.tokensPerPage, ord = order;
      for (long long pos = 1; pos <= 11; ++pos) { // wraps the ring of 8
        std::vector<uint16_t> kv(static_cast<size_t>(D));
        for (uint16_t &v : kv)
          v = num::bf16FromFloat(normal(rng));
        kv[3] = num::bf16FromFloat(0.0f);
        if (pos == 4)
          for (long long c = 32; c < 64; ++c) // an all-zero tile
            kv[size_t(c)] = num::bf16FromFloat(0.0f);
        dsc::cpu::windowKvDecode(kv.data(), D, pos, store.pool(), W, cpuRows.data());
        const long long callState[3] = {pos, 1, 0};
        CUdeviceptr kvp = harness_->upload(kv), cs = harness_->upload(callState, sizeof(callState));
        CUdeviceptr none = 0;
        long long S = 1, headDim = D, writeFrom = 0;
        const unsigned tilesThreads = unsigned(D / tile * 32);
        dsc::runtime::Status st =
            harness_->launch("window_kv", "dsc_window_kv", (tilesThreads + 255) / 256, 256, 0,
                             kernelArgs(p, kvp, S, headDim, cs, writeFrom, ring, values, tile,
                                        valueType, scaleType, tokensPerPage, ord, none));
        ASSERT_TRUE(st) << st.message();
        st = harness_->launch("window_kv", "dsc_window_kv_ring", unsigned((W * D + 255) / 256), 256,
                              0,
                              kernelArgs(p, ring, headDim, values, tile, valueType, scaleType,
                                         tokensPerPage, ord, rows));
        ASSERT_TRUE(st) << st.message();
        EXPECT_EQ(harness_->download<uint8_t>(ring, ringBytes), store.bytes())
            << "ring bytes, order " << order << " D " << D << " pos " << pos;
        EXPECT_EQ(harness_->download<float>(rows, size_t(W * D)), cpuRows)
            << "decoded ring, order " << order << " D " << D << " pos " << pos;
      }
    }
  }
}

TEST_F(DecodeKernelsGpu, FastHcMixesEqualTheCpuOrderKernel) {
  const long long hc = 4, nmix = (2 + hc) * hc, splits = 64; // dsc::abi::kHcSplits
  for (const long long D : {96LL, 5120LL}) {
    for (const long long S : {1LL, 3LL}) {
      const long long width = hc * D;
      std::mt19937 rng(uint32_t(D * 3 + S));
      std::normal_distribution<float> normal(0.0f, 1.0f);
      std::vector<uint16_t> h(static_cast<size_t>(S * width));
      for (uint16_t &v : h)
        v = dsc::numerics::bf16FromFloat(normal(rng));
      std::vector<float> fn(static_cast<size_t>(nmix * width)), base(static_cast<size_t>(nmix));
      std::vector<float> scale = {0.5f, 0.7f, 1.1f};
      for (float &v : fn)
        v = 0.02f * normal(rng);
      for (float &v : base)
        v = 0.1f * normal(rng);
      dsc::abi::HcMixesParams p{};
      p.sinkhorn_iters = 20;
      p.eps = 1e-6;
      p.norm_eps = 1e-6;
      CUdeviceptr hp = harness_->upload(h), fp = harness_->upload(fn), sp = harness_->upload(scale),
                  bp = harness_->upload(base);
      auto outputs = [&] {
        return std::vector<CUdeviceptr>{harness_->upload(nullptr, size_t(S * hc) * 4),
                                        harness_->upload(nullptr, size_t(S * hc) * 4),
                                        harness_->upload(nullptr, size_t(S * hc * hc) * 4)};
      };
      const std::vector<CUdeviceptr> ref = outputs(), fast = outputs();
      long long Sv = S, hcv = hc, Dv = D, widthv = width, nmixv = nmix, splitsv = splits;
      CUdeviceptr r0 = ref[0], r1 = ref[1], r2 = ref[2], f0 = fast[0], f1 = fast[1], f2 = fast[2];
      dsc::runtime::Status st =
          harness_->launch("hc_mixes", "dsc_hc_mixes", unsigned(S), 64, 0,
                           kernelArgs(p, hp, Sv, hcv, Dv, fp, sp, bp, r0, r1, r2));
      ASSERT_TRUE(st) << st.message();
      const long long items = S * (nmix + 1) * splits;
      const long long groupFloats = S * dsc::abi::torchGroupStride(width) * 32;
      CUdeviceptr pp = harness_->upload(nullptr, size_t(items) * 8),
                  gp = harness_->upload(nullptr, size_t(groupFloats) * 4);
      st = harness_->launch("hc_mixes", "dsc_hc_mixes_dot_fast", unsigned((items + 7) / 8), 256, 0,
                            kernelArgs(hp, Sv, widthv, fp, nmixv, splitsv, pp, gp));
      ASSERT_TRUE(st) << st.message();
      const size_t stage = size_t(nmix * splits * 8 + dsc::abi::torchGroupStride(width) * 32 * 4);
      st = harness_->launch("hc_mixes", "dsc_hc_mixes_finish_fast", unsigned(S), 256, stage,
                            kernelArgs(p, hp, pp, gp, Sv, splitsv, hcv, Dv, sp, bp, f0, f1, f2));
      ASSERT_TRUE(st) << st.message();
      std::vector<float> cpuPre(static_cast<size_t>(S * hc)), cpuPost(static_cast<size_t>(S * hc));
      std::vector<float> cpuComb(static_cast<size_t>(S * hc * hc));
      dsc::cpu::hcMixes(h.data(), S, hc, D, fn.data(), scale.data(), base.data(), 20, 1e-6f, 1e-6f,
                        cpuPre.data(), cpuPost.data(), cpuComb.data());
      const std::vector<float> *cpu[3] = {&cpuPre, &cpuPost, &cpuComb};
      for (int o = 0; o < 3; ++o) {
        const size_t n = cpu[o]->size();
        const std::vector<float> a = harness_->download<float>(ref[size_t(o)], n);
        EXPECT_EQ(harness_->download<float>(fast[size_t(o)], n), a)
            << "output " << o << " D " << D << " S " << S << ": fast != CPU-order";
        for (size_t i = 0; i < n; ++i)
          EXPECT_NEAR(a[i], (*cpu[o])[i], 1e-5f) << "output " << o << " element " << i;
      }
    }
  }
}

TEST_F(DecodeKernelsGpu, MoeGateSelectPicksTheReferenceTopK) {
  const long long T = 3, E = 384, k = 6;
  std::mt19937 rng(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> scores(static_cast<size_t>(T * E)), choice(static_cast<size_t>(T * E));
  for (size_t i = 0; i < scores.size(); ++i) {
    scores[i] = std::fabs(normal(rng)) + 0.01f;
    choice[i] = scores[i] + 0.25f * normal(rng); // the bias moves the picks, not the weights
  }
  // Token 1: ties at the top (the lower id ranks first) and -0 vs +0 below.
  for (long long e : {40LL, 7LL, 300LL})
    choice[size_t(1 * E + e)] = 9.0f;
  choice[size_t(1 * E + 5)] = -0.0f;
  choice[size_t(1 * E + 6)] = 0.0f;
  // Token 2: a NaN choice ranks first.
  choice[size_t(2 * E + 200)] = std::numeric_limits<float>::quiet_NaN();
  dsc::abi::MoeGateParams p{};
  p.topk = k;
  p.route_scale = 1.5;
  p.normalize = true;
  std::vector<int> expectIds(static_cast<size_t>(T * k));
  std::vector<float> expectW(static_cast<size_t>(T * k));
  auto before = [](float a, long long ia, float b, long long ib) {
    if (std::isnan(a) != std::isnan(b))
      return std::isnan(a);
    if (!std::isnan(a) && a != b)
      return a > b;
    return ia < ib;
  };
  for (long long t = 0; t < T; ++t) {
    std::vector<bool> taken(size_t(E), false);
    for (long long j = 0; j < k; ++j) {
      long long best = -1;
      for (long long e = 0; e < E; ++e)
        if (!taken[size_t(e)] &&
            (best < 0 || before(choice[size_t(t * E + e)], e, choice[size_t(t * E + best)], best)))
          best = e;
      taken[size_t(best)] = true;
      expectIds[size_t(t * k + j)] = int(best);
      expectW[size_t(t * k + j)] = scores[size_t(t * E + best)];
    }
    float sum = 0.0f; // the rank-order fp32 sum, + 1e-20, then the route scale
    for (long long j = 0; j < k; ++j)
      sum += expectW[size_t(t * k + j)];
    const float denom = sum + 1e-20f;
    for (long long j = 0; j < k; ++j)
      expectW[size_t(t * k + j)] = expectW[size_t(t * k + j)] / denom * float(p.route_scale);
  }
  EXPECT_EQ(expectIds[size_t(1 * k)], 7) << "the test's own tie order";
  EXPECT_EQ(expectIds[size_t(2 * k)], 200) << "the test's own NaN order";
  CUdeviceptr sp = harness_->upload(scores), cp = harness_->upload(choice),
              wp = harness_->upload(nullptr, expectW.size() * 4),
              ip = harness_->upload(nullptr, expectIds.size() * 4);
  long long Tv = T, Ev = E;
  dsc::runtime::Status st = harness_->launch("moe_gate", "dsc_moe_gate_select_fast", unsigned(T),
                                             256, 0, kernelArgs(p, sp, cp, Tv, Ev, wp, ip));
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(harness_->download<int>(ip, expectIds.size()), expectIds);
  EXPECT_EQ(harness_->download<float>(wp, expectW.size()), expectW);
}

TEST_F(DecodeKernelsGpu, MoeGateFusedEqualsScoresThenSelectAndLeavesItsTicketZero) {
  // dsc_moe_gate_fused_fast (decode: the last block selects) against the two
  // launches it replaces (dsc_moe_gate_select_fast is checked against the
  // reference's order above): the same ids and weights, bytes; launched
  // twice on one ticket word, which it must leave zero for the next call.
  const long long E = 384, D = 1000, k = 6;
  for (const long long T : {1LL, 3LL}) {
    std::mt19937 rng(uint32_t(17 + T));
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::vector<uint16_t> x(size_t(T * D)), w(size_t(E * D));
    for (uint16_t &v : x)
      v = dsc::numerics::bf16FromFloat(normal(rng));
    for (uint16_t &v : w)
      v = dsc::numerics::bf16FromFloat(0.05f * normal(rng));
    std::vector<float> bias(static_cast<size_t>(E));
    for (float &v : bias)
      v = 0.1f * normal(rng);
    dsc::abi::MoeGateParams p{};
    p.topk = k;
    p.route_scale = 1.5;
    p.normalize = true;
    p.temperature = 1.0;
    CUdeviceptr xp = harness_->upload(x), wp = harness_->upload(w), bp = harness_->upload(bias);
    CUdeviceptr sp = harness_->upload(nullptr, size_t(T * E) * 4),
                cp = harness_->upload(nullptr, size_t(T * E) * 4);
    const unsigned zero = 0;
    CUdeviceptr ticket = harness_->upload(&zero, sizeof(zero));
    long long Tv = T, Dv = D, Ev = E;
    const unsigned grid = unsigned((E + 7) / 8); // gemvGrid(E): a warp per expert row
    auto outputs = [&](CUdeviceptr wt, CUdeviceptr id) {
      return std::make_pair(harness_->download<int>(id, size_t(T * k)),
                            harness_->download<float>(wt, size_t(T * k)));
    };
    CUdeviceptr w1 = harness_->upload(nullptr, size_t(T * k) * 4),
                i1 = harness_->upload(nullptr, size_t(T * k) * 4);
    ASSERT_TRUE(harness_->launch("moe_gate", "dsc_moe_gate_scores_fast", grid, 256, 0,
                                 kernelArgs(p, xp, Tv, Dv, wp, bp, Ev, sp, cp)));
    ASSERT_TRUE(harness_->launch("moe_gate", "dsc_moe_gate_select_fast", unsigned(T), 256, 0,
                                 kernelArgs(p, sp, cp, Tv, Ev, w1, i1)));
    const auto expected = outputs(w1, i1);
    for (int call = 0; call < 2; ++call) {
      SCOPED_TRACE("T " + std::to_string(T) + " call " + std::to_string(call));
      CUdeviceptr w2 = harness_->upload(nullptr, size_t(T * k) * 4),
                  i2 = harness_->upload(nullptr, size_t(T * k) * 4);
      ASSERT_TRUE(harness_->launch("moe_gate", "dsc_moe_gate_fused_fast", grid, 256, 0,
                                   kernelArgs(p, xp, Tv, Dv, wp, bp, Ev, sp, cp, ticket, w2, i2)));
      const auto got = outputs(w2, i2);
      EXPECT_EQ(got.first, expected.first);
      EXPECT_EQ(got.second, expected.second);
      EXPECT_EQ(harness_->download<unsigned>(ticket, 1)[0], 0u);
    }
  }
}

TEST_F(DecodeKernelsGpu, MoeCombineSumsTheSlotsInTheCpuOrder) {
  const long long T = 3, k = 6, E = 16, D = 300;
  std::mt19937 rng(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> outs(static_cast<size_t>(T * (k + 1) * D));
  for (float &v : outs)
    v = dsc::numerics::roundToBf16(normal(rng) * 100.0f); // the down step's bf16-valued rows
  // Token 0: distinct ids; token 1: a repeated expert and an invalid slot;
  // token 2: every routed slot invalid (only the shared expert counts).
  const std::vector<int> ids = {9, 2, 15, 0, 7, 4, 3, 3, -1, 12, 16, 1, -1, -1, 99, 16, -5, -1};
  std::vector<uint16_t> expected(static_cast<size_t>(T * D));
  for (long long t = 0; t < T; ++t) {
    std::vector<long long> order;
    for (long long j = 0; j < k; ++j)
      if (ids[size_t(t * k + j)] >= 0 && ids[size_t(t * k + j)] < E)
        order.push_back(j);
    std::stable_sort(order.begin(), order.end(), [&](long long a, long long b) {
      return ids[size_t(t * k + a)] < ids[size_t(t * k + b)];
    });
    for (long long d = 0; d < D; ++d) {
      float total = 0.0f;
      for (long long j : order)
        total += outs[size_t((t * (k + 1) + j) * D + d)];
      total += outs[size_t((t * (k + 1) + k) * D + d)];
      expected[size_t(t * D + d)] = dsc::numerics::bf16FromFloat(total);
    }
  }
  CUdeviceptr op = harness_->upload(outs), ip = harness_->upload(ids),
              y = harness_->upload(nullptr, expected.size() * 2);
  long long Tv = T, kv = k, Ev = E, Dv = D;
  const unsigned gridX = unsigned((D + 255) / 256); // kMoeCombinePerThread = 1
  dsc::runtime::Status st =
      harness_->launch2D("moe_experts", "dsc_moe_experts_combine_fast", gridX, unsigned(T), 256, 0,
                         kernelArgs(op, ip, Tv, kv, Ev, Dv, y));
  ASSERT_TRUE(st) << st.message();
  EXPECT_EQ(harness_->download<uint16_t>(y, expected.size()), expected);
}

} // namespace
