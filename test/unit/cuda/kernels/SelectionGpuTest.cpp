//===- SelectionGpuTest.cpp - The indexer's selections against the CPU -----===//
//
// dsc_indexer_topk_radix and dsc_candidate_blocks_radix (select.cuh
// selectTop16Ascending: 16-bit keys of bf16 scores, contiguous chunks per
// thread, the candidate ids walked along each chunk) against the CPU
// reference's indexMaskCandidates + indexTopK and indexSelectCandidates
// (runtime/cpu/kernels/attention/Indexer.h), id for id: widths from 1 to
// 40,000 (more than one position per thread, and more than 32,768), rows of
// one decode step and of a prefill chunk (rows with shorter visibility),
// scores drawn from few values (long runs of ties broken by the lower
// position), NaN, -0 and +0, -inf runs (invisible and non-candidate
// positions), with and without candidate ids. Needs a GPU (skips without one).
//===----------------------------------------------------------------------===//
#include "test/unit/cuda/kernels/GpuKernelTest.h"

#include "dsc/abi/KernelParams.h"
#include "dsc/abi/LaunchShapes.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "runtime/cpu/kernels/attention/Indexer.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

namespace {

using dsc::tools::kernelArgs;

using SelectionGpu = dsc::test::GpuKernelTest<>;

/// One case: S rows ending at the call's last position, scores [S, width]
/// with width = (startPos + S) / ratio.
struct Case {
  long long width, S, ratio;
};

/// bf16 scores with ties, NaN, signed zeros and -inf beyond each row's
/// visibility (as dsc_indexer_score leaves them).
std::vector<uint16_t> makeScores(const Case &c, long long startPos, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 3.0f);
  std::uniform_int_distribution<int> pick(0, 99);
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<uint16_t> s(static_cast<size_t>(c.S * c.width));
  for (long long r = 0; r < c.S; ++r) {
    const long long visible = (startPos + r + 1) / c.ratio;
    for (long long j = 0; j < c.width; ++j) {
      float v = std::round(normal(rng)) * 0.5f; // few distinct values: ties everywhere
      const int u = pick(rng);
      if (u == 0)
        v = std::numeric_limits<float>::quiet_NaN();
      else if (u == 1)
        v = -0.0f;
      else if (u == 2)
        v = 0.0f;
      else if (u == 3)
        v = 1000.0f + float(j % 7); // a few large ones
      if (j >= visible)
        v = -inf;
      s[size_t(r * c.width + j)] = dsc::numerics::bf16FromFloat(v);
    }
  }
  return s;
}

std::vector<float> widen(const std::vector<uint16_t> &b) {
  std::vector<float> f(b.size());
  for (size_t i = 0; i < b.size(); ++i)
    f[i] = dsc::numerics::bf16ToFloat(b[i]);
  return f;
}

/// Candidate ids per row: an ascending random subset of the blocks (at most
/// `count`), -1 padded.
std::vector<int32_t> makeCandidates(const Case &c, long long blockSize, long long count,
                                    uint32_t seed) {
  std::mt19937 rng(seed);
  const long long nblocks = (c.width + blockSize - 1) / blockSize;
  std::vector<int32_t> ids(static_cast<size_t>(c.S * count), -1);
  for (long long r = 0; r < c.S; ++r) {
    std::vector<int32_t> all(static_cast<size_t>(nblocks));
    for (long long b = 0; b < nblocks; ++b)
      all[size_t(b)] = int32_t(b);
    std::shuffle(all.begin(), all.end(), rng);
    const long long n = std::min<long long>(count, (nblocks * 2 + 2) / 3); // ~2/3 of them
    std::sort(all.begin(), all.begin() + n);
    std::copy(all.begin(), all.begin() + n, ids.begin() + r * count);
  }
  return ids;
}

const Case kCases[] = {{1, 1, 1},     {5, 1, 1},     {513, 1, 1},    {600, 3, 1},
                       {4097, 1, 2},  {16384, 1, 2}, {32768, 1, 1},  {40000, 4, 1}};

TEST_F(SelectionGpu, IndexerTopKRadixEqualsTheCpuTopK) {
  const long long k = 512, blockSize = 8, topkBlocks = 2048, offset = 128;
  for (const Case &c : kCases) {
    const long long startPos = c.width * c.ratio - c.S; // (p + S) / ratio == width
    for (const bool withCandidates : {false, true}) {
      const uint32_t seed = uint32_t(c.width * 7 + c.S + (withCandidates ? 1 : 0));
      const std::vector<uint16_t> scores = makeScores(c, startPos, seed);
      const std::vector<int32_t> ids = makeCandidates(c, blockSize, topkBlocks, seed + 1);
      std::vector<float> masked = widen(scores);
      if (withCandidates)
        dsc::cpu::indexMaskCandidates(masked.data(), ids.data(), topkBlocks, blockSize, c.S,
                                      c.width);
      const long long used = dsc::cpu::indexTopKWidth(k, c.width);
      std::vector<int32_t> cpu(static_cast<size_t>(c.S * used));
      dsc::cpu::indexTopK(masked.data(), c.S, c.width, startPos, c.ratio, k, offset, cpu.data());
      std::vector<int32_t> expected(static_cast<size_t>(c.S * k), -1);
      for (long long r = 0; r < c.S; ++r)
        std::copy(cpu.begin() + r * used, cpu.begin() + (r + 1) * used,
                  expected.begin() + r * k);

      dsc::abi::IndexerTopKParams p{};
      p.topk = k;
      p.ratio = c.ratio;
      p.block_size = blockSize;
      const long long callState[3] = {startPos, c.S, c.S > 1 ? 1 : 0};
      std::vector<int32_t> garbage(static_cast<size_t>(c.S * k), 12345); // every slot is written
      CUdeviceptr sp = harness_->upload(scores), cs = harness_->upload(callState, sizeof(callState)),
                  cand = withCandidates ? harness_->upload(ids) : 0, out = harness_->upload(garbage);
      long long blocks = withCandidates ? topkBlocks : 0, S = c.S, off = offset;
      dsc::runtime::Status st = harness_->launch(
          "indexer_topk", "dsc_indexer_topk_radix", unsigned(c.S), dsc::abi::kSelectThreads, 0,
          kernelArgs(p, sp, cand, blocks, S, cs, off, out));
      ASSERT_TRUE(st) << st.message();
      EXPECT_EQ(harness_->download<int32_t>(out, expected.size()), expected)
          << "width " << c.width << " S " << c.S << " ratio " << c.ratio
          << (withCandidates ? " with" : " without") << " candidates";
    }
  }
}

TEST_F(SelectionGpu, CandidateBlocksRadixEqualsTheCpuSelection) {
  const long long blockSize = 8;
  for (const Case &c : kCases) {
    const long long startPos = c.width * c.ratio - c.S;
    for (const long long topkBlocks : {16LL, 2048LL}) {
      const std::vector<uint16_t> scores =
          makeScores(c, startPos, uint32_t(c.width * 13 + c.S + topkBlocks));
      const std::vector<float> wide = widen(scores);
      std::vector<int32_t> expected(static_cast<size_t>(c.S * topkBlocks));
      dsc::cpu::indexSelectCandidates(wide.data(), c.S, c.width, startPos, c.ratio, topkBlocks,
                                      blockSize, expected.data());
      dsc::abi::CandidateBlocksParams p{};
      p.blocks = topkBlocks;
      p.block_size = blockSize;
      p.ratio = c.ratio;
      const long long callState[3] = {startPos, c.S, c.S > 1 ? 1 : 0};
      std::vector<int32_t> garbage(expected.size(), 777);
      CUdeviceptr sp = harness_->upload(scores), cs = harness_->upload(callState, sizeof(callState)),
                  out = harness_->upload(garbage);
      long long S = c.S;
      dsc::runtime::Status st =
          harness_->launch("candidate_blocks", "dsc_candidate_blocks_radix", unsigned(c.S),
                           dsc::abi::kSelectThreads, 0, kernelArgs(p, sp, S, cs, out));
      ASSERT_TRUE(st) << st.message();
      EXPECT_EQ(harness_->download<int32_t>(out, expected.size()), expected)
          << "width " << c.width << " S " << c.S << " ratio " << c.ratio << " topkBlocks "
          << topkBlocks;
    }
  }
}

} // namespace
