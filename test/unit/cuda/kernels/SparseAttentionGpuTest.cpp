//===- SparseAttentionGpuTest.cpp - The tensor-core split-KV attention ----===//
//
// dsc_sparse_attention_logits_tc + _pv_tc + _merge_fast (sparse_attention_tc.cuh) on a
// decode row over window rows, against attention computed on the host in
// double from the same bf16 queries and values (softmax over the visible
// entries with the sink in the denominator): within the rounding of bf16
// probabilities and a bf16 output, and within two bf16 steps of the split-KV
// walk (the same roundings, another logits sum order). The walk kernels
// (_logits_fast, _pv_fast, _merge_fast) run on the same operands and must
// meet the same bound, and the tensor-core output must be the same bytes on
// a second run (deterministic). Shapes: the released heads and width (H 64,
// D 512), padded heads and a short width (H 5, D 64: one warp, a partial
// 128-channel chunk), a partial last block (96 entries) and invisible
// window slots (a position before the ring fills: -1 entries), and three
// query rows in one launch (every row's own queries, the same slots).
//===----------------------------------------------------------------------===//
#include "test/unit/cuda/kernels/GpuKernelTest.h"

#include "dsc/abi/KernelParams.h"
#include "dsc/abi/LaunchShapes.h"
#include "dsc/numerics/KvLayout.h"
#include "dsc/numerics/ScalarCodecs.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using dsc::tools::kernelArgs;
namespace num = dsc::numerics;

struct Shape {
  long long H, D, window, startPos, S = 1;
};

class SparseAttentionGpu : public dsc::test::GpuKernelTest<::testing::TestWithParam<Shape>> {};

/// The decode row's visible window slots in walk order (sparse_attention.cu
/// sparseEntry, chunk == false): slot (p % W + 1 + e) % W, -1 past p.
std::vector<long long> windowEntries(long long window, long long startPos) {
  std::vector<long long> ids;
  for (long long e = 0; e < window; ++e) {
    const long long slot = (startPos % window + 1 + e) % window;
    ids.push_back(slot > startPos ? -1 : slot);
  }
  return ids;
}

TEST_P(SparseAttentionGpu, TensorCoreSplitMatchesDoubleAttention) {
  const Shape sh = GetParam();
  const long long H = sh.H, D = sh.D, W = sh.window, S = sh.S, R = W;
  std::mt19937 rng(uint32_t(H * 7 + D + W + sh.startPos));
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<uint16_t> q(size_t(S * H * D));
  for (uint16_t &v : q)
    v = num::bf16FromFloat(normal(rng));
  std::vector<float> rows(size_t(R * D)); // window rows hold bf16 values
  for (float &v : rows)
    v = num::bf16ToFloat(num::bf16FromFloat(2.0f * normal(rng)));
  std::vector<float> sink(static_cast<size_t>(H));
  for (float &v : sink)
    v = normal(rng);
  const float scale = 1.0f / std::sqrt(float(D));

  // The host reference in double.
  const std::vector<long long> ids = windowEntries(W, sh.startPos);
  std::vector<double> want(size_t(S * H * D));
  double maxAbs = 0.0;
  for (long long sh = 0; sh < S * H; ++sh) { // every row sees the same window slots
    const long long h = sh % H;
    std::vector<double> logit(ids.size(), -INFINITY);
    double m = sink[size_t(h)];
    for (size_t e = 0; e < ids.size(); ++e) {
      if (ids[e] < 0)
        continue;
      double dot = 0.0;
      for (long long d = 0; d < D; ++d)
        dot += double(num::bf16ToFloat(q[size_t(sh * D + d)])) * rows[size_t(ids[e] * D + d)];
      logit[e] = dot * scale;
      m = std::max(m, logit[e]);
    }
    double denom = std::exp(double(sink[size_t(h)]) - m);
    for (size_t e = 0; e < ids.size(); ++e)
      if (ids[e] >= 0)
        denom += std::exp(logit[e] - m);
    for (long long d = 0; d < D; ++d) {
      double o = 0.0;
      for (size_t e = 0; e < ids.size(); ++e)
        if (ids[e] >= 0)
          o += std::exp(logit[e] - m) / denom * rows[size_t(ids[e] * D + d)];
      want[size_t(sh * D + d)] = o;
      maxAbs = std::max(maxAbs, std::fabs(o));
    }
  }

  // Operands: window rows only (no main KV pool, no top-k list).
  const num::KvRecordFormat f = num::swaKvFormat(int32_t(D));
  int values = int(D), tile = f.valuesPerTile, valueType = int(f.valueType),
      scaleType = int(f.scaleType), tokensPerPage = 4, order = 0;
  long long Sv = S, Hv = H, Dv = D, Rv = R, ratio = 0, k = 0, window = W, windowWidth = W,
            rowsH = S * H, rowBase = 0;
  const long long K = W, nb = (K + dsc::abi::kSparseBlock - 1) / dsc::abi::kSparseBlock, Kv = K;
  const long long callState[3] = {sh.startPos, 1, 0};
  const size_t scratchFloats =
      size_t(rowsH * K + (rowsH * K) % 2 + 2 * rowsH * K + 2 * rowsH * nb + rowsH * nb * D);
  CUdeviceptr qp = harness_->upload(q), rp = harness_->upload(rows), sk = harness_->upload(sink),
              cs = harness_->upload(callState, sizeof(callState)),
              scratch = harness_->upload(nullptr, scratchFloats * 4),
              out = harness_->upload(nullptr, size_t(S * H * D) * 2), none = 0;
  dsc::abi::SparseAttentionParams p{};
  p.scale = scale;
  dsc::abi::RopeParams rope{};
  // bf16 probabilities (2^-8 relative each) and a bf16 output: a few bf16
  // steps of the largest output value. Returns the output's bytes.
  auto check = [&](const char *path) {
    const std::vector<uint16_t> got = harness_->download<uint16_t>(out, size_t(S * H * D));
    const double bound = maxAbs / 64.0;
    long long bad = 0;
    for (long long i = 0; i < S * H * D; ++i) {
      const double err = std::fabs(double(num::bf16ToFloat(got[size_t(i)])) - want[size_t(i)]);
      if (!(err <= bound) && bad++ < 4)
        ADD_FAILURE() << path << ": head " << i / D << " channel " << i % D << " error " << err
                      << " > " << bound;
    }
    EXPECT_EQ(bad, 0) << path;
    return got;
  };
  auto runTc = [&]() {
    dsc::runtime::Status st = harness_->launch2D(
        "sparse_attention", "dsc_sparse_attention_logits_tc", unsigned(S), unsigned(nb),
        dsc::abi::kTcThreads, size_t(dsc::abi::tcLogitsBytes(H, D)),
        kernelArgs(p, qp, Sv, Hv, Dv, rp, Rv, none, values, tile, valueType, scaleType,
                   tokensPerPage, order, ratio, none, k, cs, window, windowWidth, rowsH, scratch,
                   rowBase));
    ASSERT_TRUE(st) << st.message();
    st = harness_->launch2D("sparse_attention", "dsc_sparse_attention_pv_tc", unsigned(S),
                            unsigned(nb), dsc::abi::kTcThreads, size_t(dsc::abi::tcPvBytes(H, D)),
                            kernelArgs(Dv, rp, Rv, none, values, tile, valueType, scaleType,
                                       tokensPerPage, order, Kv, rowsH, Hv, scratch));
    ASSERT_TRUE(st) << st.message();
    st = harness_->launch("sparse_attention", "dsc_sparse_attention_merge_fast", unsigned(S * H),
                          128, size_t(D) * 4,
                          kernelArgs(p, rope, Hv, Dv, Kv, rowsH, scratch, sk, cs, none, out,
                                     rowBase));
    ASSERT_TRUE(st) << st.message();
  };
  runTc();
  const std::vector<uint16_t> first = check("tensor-core split");
  runTc();
  EXPECT_EQ(harness_->download<uint16_t>(out, size_t(S * H * D)), first) << "a second run";

  // The split-KV walk on the same operands, the same bound.
  dsc::runtime::Status st = harness_->launch2D(
      "sparse_attention", "dsc_sparse_attention_logits_fast", unsigned(S * H), unsigned(nb), 128,
      size_t(D) * 4,
      kernelArgs(p, qp, Sv, Hv, Dv, rp, Rv, none, values, tile, valueType, scaleType,
                 tokensPerPage, order, ratio, none, k, cs, window, windowWidth, rowsH, scratch,
                 rowBase));
  ASSERT_TRUE(st) << st.message();
  st = harness_->launch2D("sparse_attention", "dsc_sparse_attention_pv_fast", unsigned(S * H),
                          unsigned(nb), 128, 0,
                          kernelArgs(Dv, rp, Rv, none, values, tile, valueType, scaleType,
                                     tokensPerPage, order, Kv, rowsH, scratch));
  ASSERT_TRUE(st) << st.message();
  st = harness_->launch("sparse_attention", "dsc_sparse_attention_merge_fast", unsigned(S * H), 128,
                        size_t(D) * 4,
                        kernelArgs(p, rope, Hv, Dv, Kv, rowsH, scratch, sk, cs, none, out,
                                   rowBase));
  ASSERT_TRUE(st) << st.message();
  const std::vector<uint16_t> walk = check("split-KV walk");
  // The two differ only in the logits' sum order: within two bf16 steps of
  // the largest output.
  for (long long i = 0; i < S * H * D; ++i)
    ASSERT_LE(std::fabs(num::bf16ToFloat(first[size_t(i)]) - num::bf16ToFloat(walk[size_t(i)])),
              maxAbs / 128.0)
        << "tensor-core vs walk: head " << i / D << " channel " << i % D;
}

INSTANTIATE_TEST_SUITE_P(Shapes, SparseAttentionGpu,
                         ::testing::Values(Shape{64, 512, 128, 1000}, Shape{64, 512, 128, 40},
                                           Shape{5, 64, 96, 500}, Shape{20, 128, 128, 127},
                                           Shape{64, 512, 128, 300, 3}),
                         [](const auto &info) {
                           const Shape &s = info.param;
                           return "H" + std::to_string(s.H) + "D" + std::to_string(s.D) + "W" +
                                  std::to_string(s.window) + "P" + std::to_string(s.startPos) + "S" +
                                  std::to_string(s.S);
                         });

} // namespace
