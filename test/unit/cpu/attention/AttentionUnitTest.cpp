//===- AttentionUnitTest.cpp - Unit tests of the CPU attention kernels ----===//
//
// Hand cases and numpy comparisons for each kernel group: RoPE (vs numpy
// float32), window ring and index lists (hand), compressor (hand data, odd S
// carrying state into decode, consistency with a full prefill), sparse
// attention (vs a straightforward numpy softmax; hand cases for the sink,
// all -1 rows and duplicates), indexer scores (bf16 step rules), top-k
// visibility and offsets, record pools with page tables, and independence
// of the thread count.
//===----------------------------------------------------------------------===//
#include "runtime/cpu/kernels/attention/Compressor.h"
#include "runtime/cpu/kernels/attention/Indexer.h"
#include "runtime/cpu/kernels/attention/KvRecords.h"
#include "runtime/cpu/kernels/attention/Rope.h"
#include "runtime/cpu/kernels/attention/SparseAttention.h"
#include "runtime/cpu/kernels/attention/WindowKv.h"
#include "test/unit/numerics/NumpyRunner.h"

#include "dsc/numerics/Quantize.h"
#include "dsc/numerics/ScalarCodecs.h"

#include "runtime/cpu/ParallelFor.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace dsc;
using namespace dsc::cpu;
using numerics::bf16FromFloat;
using numerics::bf16ToFloat;

namespace {

std::vector<uint16_t> randomBf16(size_t n, float lo, float hi, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<uint16_t> v(n);
  for (auto &x : v)
    x = bf16FromFloat(dist(rng));
  return v;
}

std::vector<float> widen(const std::vector<uint16_t> &v) {
  std::vector<float> f(v.size());
  for (size_t i = 0; i < v.size(); ++i)
    f[i] = bf16ToFloat(v[i]);
  return f;
}

//===--------------------------------------------------------------------===//
// RoPE
//===--------------------------------------------------------------------===//

TEST(Rope, HandPairAndPositionZero) {
  RopeFreqs f;
  f.ropeDim = 2;
  f.invFreq = {0.5f};
  // [1 head, headDim 4]: channels 0,1 untouched, (2,3) rotated.
  std::vector<uint16_t> x = {bf16FromFloat(7.0f), bf16FromFloat(-3.0f), bf16FromFloat(1.0f),
                             bf16FromFloat(0.0f)};
  std::vector<uint16_t> y = x;
  applyRope(y.data(), 1, 1, 4, f, 1, 1, false); // theta = 0.5
  EXPECT_EQ(y[0], x[0]);
  EXPECT_EQ(y[1], x[1]);
  EXPECT_EQ(bf16ToFloat(y[2]), numerics::roundToBf16(std::cos(0.5f)));
  EXPECT_EQ(bf16ToFloat(y[3]), numerics::roundToBf16(std::sin(0.5f)));
  // Inverse at the same position rotates back by -theta.
  std::vector<uint16_t> z = {0, 0, bf16FromFloat(0.0f), bf16FromFloat(1.0f)};
  applyRope(z.data(), 1, 1, 4, f, 1, 1, true); // (0 + i) * (c - i s) = s + i c
  EXPECT_EQ(bf16ToFloat(z[2]), numerics::roundToBf16(std::sin(0.5f)));
  EXPECT_EQ(bf16ToFloat(z[3]), numerics::roundToBf16(std::cos(0.5f)));
  // Position 0 is the identity.
  std::vector<uint16_t> w = x;
  applyRope(w.data(), 1, 1, 4, f, 0, 1, false);
  EXPECT_EQ(w, x);
}

TEST(Rope, MatchesNumpyFloat32) {
  DSC_REQUIRE_NUMPY(python);
  const int64_t rows = 9, heads = 3, hd = 24, rd = 16;
  const RopeFreqs f = makeRopeFreqs(rd, 160000.0, 32, 16.0, 32.0, 1.0); // YaRN (tiny40-like)
  std::vector<int64_t> pos = {0, 1, 2, 7, 30, 31, 129, 1000, 4095};
  const std::vector<uint16_t> x = randomBf16(rows * heads * hd, -4.0f, 4.0f, 7);
  std::vector<uint16_t> fwd = x, inv = x;
  applyRopeAt(fwd.data(), rows, heads, hd, f, pos.data(), false);
  applyRopeAt(inv.data(), rows, heads, hd, f, pos.data(), true);

  dsc::test::ScratchDir dir("attn_rope");
  dsc::test::writeRaw(dir.file("x.bin"), x);
  dsc::test::writeRaw(dir.file("pos.bin"), pos);
  dsc::test::writeRaw(dir.file("inv.bin"), f.invFreq);
  const std::string script = R"PY(
import sys, numpy as np
d = sys.argv[1]; rows, heads, hd, rd = 9, 3, 24, 16
x = np.fromfile(d + '/x.bin', dtype=np.uint16).astype(np.uint32) << 16
x = x.view(np.float32).reshape(rows, heads, hd)
pos = np.fromfile(d + '/pos.bin', dtype=np.int64)
inv = np.fromfile(d + '/inv.bin', dtype=np.float32)
theta = pos.astype(np.float32)[:, None] * inv[None, :]          # fp32 outer product
c = np.cos(theta).astype(np.float32)[:, None, :]
s = np.sin(theta).astype(np.float32)[:, None, :]
def bf16(v):
    u = v.astype(np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7fff + ((u >> 16) & 1)) >> 16).astype(np.uint16)
for name, sg in (('fwd', 1.0), ('inv', -1.0)):
    ss = (s * np.float32(sg)).astype(np.float32)
    a = x[:, :, hd - rd::2]; b = x[:, :, hd - rd + 1::2]
    re = (a * c).astype(np.float32) - (b * ss).astype(np.float32)
    im = (a * ss).astype(np.float32) + (b * c).astype(np.float32)
    y = x.copy(); y[:, :, hd - rd::2] = re; y[:, :, hd - rd + 1::2] = im
    bf16(y).tofile(d + '/' + name + '.out')
)PY";
  ASSERT_EQ(dsc::test::runPython(python, dir, script, dir.file("")), 0);
  for (const char *name : {"fwd", "inv"}) {
    const std::vector<uint16_t> ref = dsc::test::readRaw<uint16_t>(dir.file(std::string(name) + ".out"));
    const std::vector<uint16_t> &got = std::string(name) == "fwd" ? fwd : inv;
    ASSERT_EQ(ref.size(), got.size());
    int64_t off = 0, offByMore = 0;
    for (size_t i = 0; i < ref.size(); ++i) {
      const int64_t c = static_cast<int64_t>(i) % hd;
      if (c < hd - rd) {
        EXPECT_EQ(got[i], ref[i]) << "non-rope channel changed at " << i;
        continue;
      }
      if (got[i] != ref[i]) {
        ++off;
        // numpy's SIMD cos/sin may differ from libm by an ulp: allow a bf16
        // ulp on a few values, never more.
        if (std::abs(int(got[i]) - int(ref[i])) > 1)
          ++offByMore;
      }
    }
    EXPECT_EQ(offByMore, 0) << name;
    EXPECT_LE(off, 3) << name;
  }
}

//===--------------------------------------------------------------------===//
// Window ring and index lists
//===--------------------------------------------------------------------===//

TEST(WindowKv, IndexListsByHand) {
  std::vector<int32_t> p(5 * 3);
  windowIdxPrefill(5, 3, p.data());
  EXPECT_EQ(p, (std::vector<int32_t>{0, -1, -1, 0, 1, -1, 0, 1, 2, 1, 2, 3, 2, 3, 4}));
  std::vector<int32_t> q(2 * 2);
  windowIdxPrefill(2, 4, q.data()); // width min(S, W) = 2
  EXPECT_EQ(q, (std::vector<int32_t>{0, -1, 0, 1}));
  EXPECT_EQ(windowIdxWidth(0, 2, 4), 2);
  EXPECT_EQ(windowIdxWidth(9, 1, 4), 4);
  EXPECT_EQ(windowKvRows(0, 6, 4), 6);
  EXPECT_EQ(windowKvRows(9, 1, 4), 4);
  std::vector<int32_t> d(4);
  windowIdxDecode(2, 4, d.data()); // oldest slot 3 (empty), then 0..2
  EXPECT_EQ(d, (std::vector<int32_t>{-1, 0, 1, 2}));
  windowIdxDecode(5, 4, d.data()); // slots 2,3,0,1 oldest first
  EXPECT_EQ(d, (std::vector<int32_t>{2, 3, 0, 1}));
  windowIdxDecode(7, 4, d.data());
  EXPECT_EQ(d, (std::vector<int32_t>{0, 1, 2, 3}));
  windowIdxDecode(1, 4, d.data());
  EXPECT_EQ(d, (std::vector<int32_t>{-1, -1, 0, 1}));
}

numerics::KvPageLayout ringLayout(int which) {
  return which == 0 ? numerics::KvPageLayout{numerics::swaKvFormat(64), 64,
                                             numerics::KvPageOrder::TokenInterleaved}
                    : numerics::KvPageLayout{numerics::swaKvFormat(64), 3,
                                             numerics::KvPageOrder::PagePlanar};
}

class WindowRingLayouts : public ::testing::TestWithParam<int> {};

TEST_P(WindowRingLayouts, RingSlotsHoldQdqRecords) {
  const int64_t W = 4, Dh = 64, S = 6;
  const numerics::KvPageLayout layout = ringLayout(GetParam());
  KvRecordStore store(layout, W);
  const KvRecordPool ring = store.view();
  const std::vector<uint16_t> kv = randomBf16(S * Dh, -3.0f, 3.0f, 11);
  std::vector<float> out(S * Dh);
  windowKvPrefill(kv.data(), S, Dh, ring, W, out.data());
  const std::vector<float> in = widen(kv);
  std::vector<float> qdq(Dh), rec(Dh);
  for (int64_t t = 0; t < S; ++t) {
    numerics::qdqFp8Row(in.data() + t * Dh, Dh, 32, qdq.data());
    for (int64_t i = 0; i < Dh; ++i)
      ASSERT_EQ(out[t * Dh + i], qdq[i]) << "row " << t;
    if (t >= S - W) { // seeded into slot t % W
      ring.read(t % W, rec.data());
      for (int64_t i = 0; i < Dh; ++i)
        ASSERT_EQ(rec[i], qdq[i]) << "slot " << t % W;
    }
  }
  // Decode at position 6 overwrites slot 6 % 4 = 2 (it held position 2,
  // the oldest); slot 1 still holds position 5.
  const std::vector<uint16_t> one = randomBf16(Dh, -1.0f, 1.0f, 12);
  std::vector<float> ringOut(W * Dh);
  windowKvDecode(one.data(), Dh, 6, ring, W, ringOut.data());
  numerics::qdqFp8Row(widen(one).data(), Dh, 32, qdq.data());
  for (int64_t i = 0; i < Dh; ++i)
    EXPECT_EQ(ringOut[2 * Dh + i], qdq[i]);
  numerics::qdqFp8Row(in.data() + 5 * Dh, Dh, 32, qdq.data()); // position 5 in slot 1
  for (int64_t i = 0; i < Dh; ++i)
    EXPECT_EQ(ringOut[1 * Dh + i], qdq[i]);
}

INSTANTIATE_TEST_SUITE_P(Pages, WindowRingLayouts, ::testing::Values(0, 1),
                         [](const ::testing::TestParamInfo<int> &info) {
                           return info.param == 0 ? std::string("Interleaved64")
                                                  : std::string("Planar3");
                         });

TEST(KvRecords, PageTableAndBothOrders) {
  for (numerics::KvPageOrder order :
       {numerics::KvPageOrder::TokenInterleaved, numerics::KvPageOrder::PagePlanar}) {
    numerics::KvPageLayout layout{numerics::mainKvFormat(32), 4, order};
    KvRecordStore store(layout, 10, {2, 0, 1}); // logical page p -> physical table[p]
    const KvRecordPool pool = store.view();
    std::vector<std::vector<float>> rows;
    for (int64_t t = 0; t < 10; ++t) {
      rows.push_back(widen(randomBf16(32, -2.0f, 2.0f, 100 + static_cast<uint32_t>(t))));
      pool.write(t, rows.back().data());
    }
    std::vector<float> got(32), qdq(32);
    for (int64_t t = 0; t < 10; ++t) {
      pool.read(t, got.data());
      numerics::qdqFp4E4M3Row(rows[t].data(), 32, 16, qdq.data());
      EXPECT_EQ(got, qdq) << "token " << t;
    }
    // Token 0 lives in physical page 2.
    EXPECT_EQ(layout.tokenDataOffset(0, pool.pageTable), 2 * layout.pageBytes());
  }
}

//===--------------------------------------------------------------------===//
// Compressor
//===--------------------------------------------------------------------===//

struct TinyCompressor {
  // dim 2, headDim 2: wkv = I (kv = x), wgate picks channel 0 (score = (x0, 0)).
  std::vector<uint16_t> wkv = {bf16FromFloat(1), 0, 0, bf16FromFloat(1)};
  std::vector<uint16_t> wgate = {bf16FromFloat(1), 0, 0, 0};
  std::vector<uint16_t> norm = {bf16FromFloat(1), bf16FromFloat(1)};
  CompressorWeights w(int64_t ratio) {
    return CompressorWeights{ratio, 2, 2, wkv.data(), wgate.data(), norm.data(), 1e-20f};
  }
};

/// Hand value of one ratio-2 latent from tokens a, b (double math, bf16 at
/// the reference's rounding points).
std::vector<float> handLatent(const float *a, const float *b) {
  const double e0 = 1.0, e1 = std::exp(double(b[0]) - double(a[0]));
  double p0 = (a[0] * e0 + b[0] * e1) / (e0 + e1); // channel 0: softmax of (a0, b0)
  double p1 = 0.5 * (a[1] + b[1]);                 // channel 1: scores 0, 0
  const float q0 = numerics::roundToBf16(float(p0)), q1 = numerics::roundToBf16(float(p1));
  const double r = 1.0 / std::sqrt((double(q0) * q0 + double(q1) * q1) / 2.0);
  return {numerics::roundToBf16(float(q0 * r)), numerics::roundToBf16(float(q1 * r))};
}

TEST(Compressor, RatioTwoHandValuesAndOddPrefillIntoDecode) {
  TinyCompressor tc;
  const CompressorWeights w = tc.w(2);
  // 6 tokens, bf16-exact values.
  const std::vector<float> xs = {0.0f, 2.0f, 1.0f, 1.0f, -0.5f, 3.0f, 0.25f, -1.0f, 2.0f, 0.5f, 2.0f, 1.5f};
  std::vector<uint16_t> x(xs.size());
  for (size_t i = 0; i < xs.size(); ++i)
    x[i] = bf16FromFloat(xs[i]);

  // Full prefill of 6 tokens: 3 latents.
  CompressorState full;
  full.reset(2, 2);
  std::vector<uint16_t> lf(6);
  ASSERT_EQ(compressorForward(w, x.data(), 6, 0, &full, lf.data()), 3);
  for (int j = 0; j < 3; ++j) {
    const std::vector<float> h = handLatent(xs.data() + 4 * j, xs.data() + 4 * j + 2);
    EXPECT_NEAR(bf16ToFloat(lf[2 * j]), h[0], std::fabs(h[0]) * 0.008f) << "latent " << j;
    EXPECT_NEAR(bf16ToFloat(lf[2 * j + 1]), h[1], std::fabs(h[1]) * 0.008f) << "latent " << j;
  }
  // Group 0 by hand: a=(0,2), b=(1,1): p0 = e/(1+e) = 0.7310586, p1 = 1.5.
  EXPECT_EQ(bf16ToFloat(lf[0]), numerics::roundToBf16(float(0.73046875 / std::sqrt((0.73046875 * 0.73046875 + 2.25) / 2))));

  // Odd prefill (3 tokens) keeps token 2 in slot 0, decode completes groups.
  CompressorState st;
  st.reset(2, 2);
  std::vector<uint16_t> l(2);
  ASSERT_EQ(compressorForward(w, x.data(), 3, 0, &st, l.data()), 1);
  EXPECT_EQ(l[0], lf[0]);
  EXPECT_EQ(l[1], lf[1]);
  EXPECT_EQ(st.kv[0], -0.5f);
  EXPECT_EQ(st.kv[1], 3.0f);
  EXPECT_EQ(st.score[0], -0.5f);
  EXPECT_EQ(st.score[1], 0.0f);
  EXPECT_EQ(st.kv[2], 0.0f); // slot 1 untouched
  EXPECT_EQ(st.score[2], -std::numeric_limits<float>::infinity());
  EXPECT_EQ(compressorLatentCount(2, 3, 1), 1);
  ASSERT_EQ(compressorForward(w, x.data() + 6, 1, 3, &st, l.data()), 1); // group {2,3}
  EXPECT_EQ(l[0], lf[2]);
  EXPECT_EQ(l[1], lf[3]);
  EXPECT_EQ(compressorLatentCount(2, 4, 1), 0);
  ASSERT_EQ(compressorForward(w, x.data() + 8, 1, 4, &st, l.data()), 0);
  ASSERT_EQ(compressorForward(w, x.data() + 10, 1, 5, &st, l.data()), 1); // group {4,5}
  EXPECT_EQ(l[0], lf[4]);
  EXPECT_EQ(l[1], lf[5]);
}

TEST(Compressor, RatioOneIsNormOfLinear) {
  TinyCompressor tc;
  const std::vector<uint16_t> x = {bf16FromFloat(3.0f), bf16FromFloat(4.0f), bf16FromFloat(-1.0f),
                                   bf16FromFloat(1.0f)};
  std::vector<uint16_t> l(4);
  ASSERT_EQ(compressorForward(tc.w(1), x.data(), 2, 0, nullptr, l.data()), 2);
  // (3,4)/sqrt(12.5) = (0.8485, 1.1314); (-1,1)/1 = (-1, 1).
  EXPECT_EQ(bf16ToFloat(l[0]), numerics::roundToBf16(3.0f / std::sqrt(12.5f)));
  EXPECT_EQ(bf16ToFloat(l[1]), numerics::roundToBf16(4.0f / std::sqrt(12.5f)));
  EXPECT_EQ(bf16ToFloat(l[2]), -1.0f);
  EXPECT_EQ(bf16ToFloat(l[3]), 1.0f);
}

TEST(Compressor, CompressKvRotatesAtGroupPositionThenFp4) {
  const int64_t Dh = 32, rd = 16, n = 3, j0 = 5, ratio = 2;
  const RopeFreqs f = makeRopeFreqs(rd, 160000.0, 32, 16.0, 32.0, 1.0);
  const std::vector<uint16_t> lat = randomBf16(n * Dh, -2.0f, 2.0f, 21);
  numerics::KvPageLayout layout{numerics::mainKvFormat(Dh), 4, numerics::KvPageOrder::PagePlanar};
  KvRecordStore store(layout, 16);
  compressKvWrite(lat.data(), n, j0, ratio, Dh, f, store.view());
  std::vector<float> got(Dh), qdq(Dh);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<uint16_t> row(lat.begin() + i * Dh, lat.begin() + (i + 1) * Dh);
    const int64_t pos = (j0 + i) * ratio;
    applyRopeAt(row.data(), 1, 1, Dh, f, &pos, false);
    numerics::qdqFp4E4M3Row(widen(row).data(), Dh, 16, qdq.data());
    store.pool().read(j0 + i, got.data());
    EXPECT_EQ(got, qdq) << "entry " << j0 + i;
  }
  // Entries before j0 were never written (zero records decode to 0).
  store.pool().read(0, got.data());
  for (float v : got)
    EXPECT_EQ(v, 0.0f);
}

//===--------------------------------------------------------------------===//
// Sparse attention
//===--------------------------------------------------------------------===//

TEST(SparseAttention, MatchesNumpySoftmax) {
  DSC_REQUIRE_NUMPY(python);
  const int64_t S = 3, H = 2, D = 16, nKv = 40, K = 150;
  const std::vector<uint16_t> q = randomBf16(S * H * D, -0.5f, 0.5f, 31);
  const std::vector<float> kv = widen(randomBf16(nKv * D, -1.0f, 1.0f, 32));
  const std::vector<float> sink = {0.3f, -1.5f};
  std::vector<int32_t> idx(S * K);
  std::mt19937 rng(33);
  for (int64_t s = 0; s < S; ++s)
    for (int64_t k = 0; k < K; ++k)
      idx[s * K + k] = (rng() % 5 == 0) ? -1 : static_cast<int32_t>(rng() % nKv); // -1s and duplicates
  std::vector<uint16_t> o(S * H * D);
  const float scale = sparseAttnScale(D);
  sparseAttention(q.data(), S, H, D, kv.data(), nKv, sink.data(), idx.data(), K, scale, o.data());

  dsc::test::ScratchDir dir("attn_sparse");
  dsc::test::writeRaw(dir.file("q.bin"), q);
  dsc::test::writeRaw(dir.file("kv.bin"), kv);
  dsc::test::writeRaw(dir.file("sink.bin"), sink);
  dsc::test::writeRaw(dir.file("idx.bin"), idx);
  const std::string script = R"PY(
import sys, numpy as np
d = sys.argv[1]; S, H, D, nKv, K = 3, 2, 16, 40, 150
q = (np.fromfile(d + '/q.bin', dtype=np.uint16).astype(np.uint32) << 16).view(np.float32)
q = q.reshape(S, H, D).astype(np.float64)
kv = np.fromfile(d + '/kv.bin', dtype=np.float32).reshape(nKv, D).astype(np.float64)
sink = np.fromfile(d + '/sink.bin', dtype=np.float32).astype(np.float64)
idx = np.fromfile(d + '/idx.bin', dtype=np.int32).reshape(S, K)
o = np.zeros((S, H, D))
for s in range(S):
    rows = idx[s][idx[s] >= 0]
    k = kv[rows]
    for h in range(H):
        l = k @ q[s, h] * D ** -0.5
        m = max(l.max(), sink[h])
        p = np.exp(l - m); den = p.sum() + np.exp(sink[h] - m)
        o[s, h] = (p[:, None] * k).sum(0) / den
o.astype(np.float32).tofile(d + '/o.bin')
)PY";
  ASSERT_EQ(dsc::test::runPython(python, dir, script, dir.file("")), 0);
  const std::vector<float> ref = dsc::test::readRaw<float>(dir.file("o.bin"));
  ASSERT_EQ(ref.size(), o.size());
  for (int64_t r = 0; r < S * H; ++r) {
    double num = 0, den = 0;
    for (int64_t i = 0; i < D; ++i) {
      const double a = bf16ToFloat(o[r * D + i]), b = ref[r * D + i];
      num += (a - b) * (a - b);
      den += b * b;
    }
    // bf16 probabilities and a bf16 output: well under 1% here.
    EXPECT_LE(std::sqrt(num / den), 5e-3) << "row " << r;
  }
}

TEST(SparseAttention, SinkAllMinusOneAndDuplicatesByHand) {
  const int64_t D = 4;
  const std::vector<float> kv = {1.0f, 2.0f, -4.0f, 8.0f,    // row 0
                                 3.0f, -1.0f, 0.5f, 0.25f}; // row 1
  const std::vector<uint16_t> q(2 * D, 0); // q = 0: every logit is 0
  // Row 0: one entry, sink ln 3 -> o = v / (1 + 3).
  // Row 1: all -1 -> exactly 0.
  const std::vector<int32_t> idx = {0, -1, -1, -1, -1, -1};
  const float sinkLn3 = std::log(3.0f);
  std::vector<uint16_t> o(2 * D);
  sparseAttention(q.data(), 2, 1, D, kv.data(), 2, &sinkLn3, idx.data(), 3, 1.0f, o.data());
  for (int64_t i = 0; i < D; ++i) {
    EXPECT_NEAR(bf16ToFloat(o[i]), kv[i] / 4.0f, std::fabs(kv[i]) / 256.0f) << i;
    EXPECT_EQ(o[D + i], 0) << "all -1 row must be +0";
  }
  // Duplicates are attended twice: idx {0, 0, 1} with a negligible sink
  // gives (2 v0 + v1) / 3, not (v0 + v1) / 2.
  const std::vector<int32_t> dup = {0, 0, 1};
  const float noSink = -1e30f;
  std::vector<uint16_t> od(D);
  sparseAttention(q.data(), 1, 1, D, kv.data(), 2, &noSink, dup.data(), 3, 1.0f, od.data());
  for (int64_t i = 0; i < D; ++i) {
    const float want = (2 * kv[i] + kv[D + i]) / 3.0f;
    EXPECT_NEAR(bf16ToFloat(od[i]), want, std::fabs(want) / 128.0f + 1e-6f) << i;
  }
  // The sink is not scaled: with scale 0.5 and logits 0 the result is the
  // same as with scale 1.
  std::vector<uint16_t> os(2 * D);
  sparseAttention(q.data(), 2, 1, D, kv.data(), 2, &sinkLn3, idx.data(), 3, 0.5f, os.data());
  for (int64_t i = 0; i < D; ++i)
    EXPECT_EQ(os[i], o[i]);
}

TEST(SparseAttention, ProbabilitiesRoundedToBf16AgainstRunningMax) {
  // Two blocks of 64: block 0 holds row 0 (logit 0, value (0, 1)), block 1
  // row 1 (logit L, value (L, 0)); q = (1, 0), scale 1, no sink. Online:
  // block 0 gives p = 1 (bf16-exact) against its running max 0, acc =
  // (0, 1); block 1 rescales by c = exp(-L): acc = (L, c), denom = c + 1.
  // Rounding exp(-L) to bf16 against the FINAL max instead would give
  // bf16(c) in channel 1: with L = 0.6875 the two differ after rounding.
  const float L = 0.6875f;
  const std::vector<float> kv = {0.0f, 1.0f, L, 0.0f};
  const std::vector<uint16_t> q = {bf16FromFloat(1.0f), 0};
  std::vector<int32_t> idx(65, -1);
  idx[0] = 0;
  idx[64] = 1;
  const float noSink = -1e30f;
  std::vector<uint16_t> o(2);
  sparseAttention(q.data(), 1, 1, 2, kv.data(), 2, &noSink, idx.data(), 65, 1.0f, o.data());
  const float c = std::exp(-L);
  const float denom = 1.0f * c + 1.0f;
  EXPECT_EQ(bf16ToFloat(o[0]), numerics::roundToBf16((0.0f * c + L) / denom));
  EXPECT_EQ(bf16ToFloat(o[1]), numerics::roundToBf16((1.0f * c + 0.0f) / denom));
  EXPECT_NE(bf16ToFloat(o[1]), numerics::roundToBf16(numerics::roundToBf16(c) / denom));
}

TEST(SparseAttention, IndependentOfThreadCount) {
  const int64_t S = 5, H = 3, D = 32, nKv = 50, K = 70;
  const std::vector<uint16_t> q = randomBf16(S * H * D, -1.0f, 1.0f, 41);
  const std::vector<float> kv = widen(randomBf16(nKv * D, -1.0f, 1.0f, 42));
  const std::vector<float> sink = {0.0f, 1.0f, -1.0f};
  std::vector<int32_t> idx(S * K);
  for (int64_t i = 0; i < S * K; ++i)
    idx[i] = static_cast<int32_t>((i * 7919) % (nKv + 1)) - 1;
  std::vector<std::vector<uint16_t>> outs;
  for (int64_t threads : {1, 2, 3}) {
    setCpuThreadCount(threads);
    std::vector<uint16_t> o(S * H * D);
    sparseAttention(q.data(), S, H, D, kv.data(), nKv, sink.data(), idx.data(), K,
                    sparseAttnScale(D), o.data());
    outs.push_back(o);
  }
  setCpuThreadCount(0);
  EXPECT_EQ(outs[0], outs[1]);
  EXPECT_EQ(outs[0], outs[2]);
}

//===--------------------------------------------------------------------===//
// Indexer
//===--------------------------------------------------------------------===//

TEST(Indexer, ScoresAreBf16StepsWithFp32HeadSum) {
  // 4 heads, Dk 2, one key (1, 0). Dots 256, 1, 1, -5 -> relu -> * w (1).
  // fp32 head sum 258 -> bf16 258 (a bf16 running sum would stay at 256).
  const std::vector<float> q = {256.0f, 0.0f, 1.0f, 0.0f, 1.0f, 0.0f, -5.0f, 0.0f};
  const std::vector<float> keys = {1.0f, 0.0f, 0.0f, 1.0f};
  const std::vector<uint16_t> w = {bf16FromFloat(1.0f), bf16FromFloat(1.0f), bf16FromFloat(1.0f),
                                   bf16FromFloat(1.0f)};
  std::vector<float> scores(2);
  indexScores(q.data(), w.data(), 1, 4, 2, keys.data(), 2, scores.data());
  EXPECT_EQ(scores[0], 258.0f);
  EXPECT_EQ(scores[1], 0.0f); // every dot with key (0, 1) is 0
  // Per-head product rounding: dot 3 * w 1.0078125 = 3.0234375 -> bf16 3.03125.
  const std::vector<float> q1 = {3.0f, 0.0f};
  const std::vector<uint16_t> w1 = {bf16FromFloat(1.0078125f)};
  indexScores(q1.data(), w1.data(), 1, 1, 2, keys.data(), 1, scores.data());
  EXPECT_EQ(scores[0], 3.03125f);
  // Einsum output rounding: dot 1 + 2^-9 rounds to 1 before * w = 1.5.
  const std::vector<float> q2 = {1.0f, 1.0f};
  const std::vector<float> k2 = {1.0f, 0.001953125f};
  const std::vector<uint16_t> w2 = {bf16FromFloat(1.5f)};
  indexScores(q2.data(), w2.data(), 1, 1, 2, k2.data(), 1, scores.data());
  EXPECT_EQ(scores[0], 1.5f);
}

TEST(Indexer, WeightScale) {
  EXPECT_EQ(indexWeightScale(32, 128), 1.0f / 64.0f); // released: exactly 1/64
  EXPECT_EQ(indexWeightScale(16, 32), static_cast<float>(1.0 / std::sqrt(512.0)));
  EXPECT_EQ(indexWeightScale(16, 64), 1.0f / 32.0f);
}

TEST(Indexer, TopKVisibilityAndOffsets) {
  const float ninf = -std::numeric_limits<float>::infinity();
  // Prefill, S = 4, ratio 2: width 2, compress_len per row 0, 1, 1, 2.
  std::vector<float> sc = {5.0f, 1.0f, 5.0f, 9.0f, 2.0f, 3.0f, 1.0f, 3.0f};
  indexMaskInvisible(sc.data(), 4, 2, 0, 2);
  EXPECT_EQ(sc, (std::vector<float>{ninf, ninf, 5.0f, ninf, 2.0f, ninf, 1.0f, 3.0f}));
  std::vector<int32_t> idx(4 * 2);
  indexTopK(sc.data(), 4, 2, 0, 2, 8, 4, idx.data()); // k = min(8, 2); offset S = 4
  EXPECT_EQ(idx, (std::vector<int32_t>{-1, -1, 4, -1, 4, -1, 4, 5}));
  std::vector<int32_t> one(4);
  indexTopK(sc.data(), 4, 2, 0, 2, 1, 4, one.data()); // k = 1
  EXPECT_EQ(one, (std::vector<int32_t>{-1, 4, 4, 5}));
  // Decode at start_pos 9, ratio 2: width 5, all visible, offset W = 16.
  const std::vector<float> d = {1.0f, 5.0f, 3.0f, 5.0f, 2.0f};
  std::vector<int32_t> di(3);
  indexTopK(d.data(), 1, 5, 9, 2, 3, 16, di.data());
  EXPECT_EQ(di, (std::vector<int32_t>{17, 18, 19})); // picks 1, 3, 2, sorted ascending
  // Exact ties: the lower index wins (implementation-defined in torch).
  const std::vector<float> t = {2.0f, 2.0f, 2.0f, 2.0f};
  std::vector<int32_t> ti(2);
  indexTopK(t.data(), 1, 4, 7, 2, 2, 16, ti.data());
  EXPECT_EQ(ti, (std::vector<int32_t>{16, 17}));
  EXPECT_EQ(indexTopKWidth(512, 3), 3);
}

TEST(Indexer, CandidatesAndLevelTwoMask) {
  const float ninf = -std::numeric_limits<float>::infinity();
  // One decode row (start_pos 9, ratio 1 -> compress_len 10), blocks of 4:
  // block scores max(0..3)=4, max(4..7)=9, max(8,9)=1 -> pinned (newest).
  std::vector<float> sc = {1, 4, 2, 0, 9, 3, 3, 3, 1, 0};
  std::vector<int32_t> cand(2);
  indexSelectCandidates(sc.data(), 1, 10, 9, 1, 2, 4, cand.data()); // 2 blocks
  EXPECT_EQ(cand, (std::vector<int32_t>{1, 2})); // blocks 1 (9) and 2 (pinned), ascending
  indexMaskCandidates(sc.data(), cand.data(), 2, 4, 1, 10);
  EXPECT_EQ(sc[1], ninf);
  EXPECT_EQ(sc[4], 9.0f);
  EXPECT_EQ(sc[9], 0.0f); // block 2 keeps its two positions
  // Three blocks requested, all three picked; one row of 4 requested: -1 padding.
  std::vector<float> sc2 = {1, 4, 2, 0, 9, 3, 3, 3, 1, 0};
  std::vector<int32_t> four(4);
  indexSelectCandidates(sc2.data(), 1, 10, 9, 1, 4, 4, four.data());
  EXPECT_EQ(four, (std::vector<int32_t>{0, 1, 2, -1}));
}

TEST(Indexer, QueriesAreFp4QdqAfterRope) {
  // wq_b = identity-like FP8 weight: E4M3 1.0 (code 0x38) on the diagonal,
  // scale 2^0 (UE8M0 127). Then q = qr (bf16 QDQ'd to FP8 activations:
  // values chosen FP8-exact), RoPE'd and FP4 QDQ'd.
  const int64_t Hi = 1, Dk = 32, R = 32;
  std::vector<uint8_t> w(Dk * R, 0), s(1, 127);
  for (int64_t i = 0; i < Dk; ++i)
    w[i * R + i] = 0x38;
  std::vector<uint16_t> qr(R);
  for (int64_t i = 0; i < R; ++i)
    qr[i] = bf16FromFloat(static_cast<float>((i % 7) - 3) * 0.5f);
  const RopeFreqs f = makeRopeFreqs(16, 10000.0);
  std::vector<float> q(Dk);
  indexQueries(qr.data(), 1, R, w.data(), s.data(), Hi, Dk, f, 5, q.data());
  std::vector<uint16_t> ref = qr;
  const int64_t pos = 5;
  applyRopeAt(ref.data(), 1, 1, Dk, f, &pos, false);
  std::vector<float> want(Dk);
  numerics::qdqFp4E8M0Row(widen(ref).data(), Dk, 32, want.data());
  EXPECT_EQ(q, want);
}

} // namespace
