//===- HostReferenceTest.cpp - Sinkhorn, YaRN, candidates, top-k ----------===//
//
// YaRN: the correction ranges quoted in reference-spec §9.2 (released 15/25,
// tiny goldens 0/2 and 0/4) and numpy float32 evaluation of the reference
// formula. Sinkhorn: hand cases (uniform comb), invariants (columns sum to 1
// after the final column step) and a numpy float32 replay of the op order.
// Selection: hand-worked candidate masks and top-k sets, incl. ties,
// invisible positions and the compressLen == 0 edge.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/HyperConnection.h"
#include "dsc/numerics/Rope.h"
#include "dsc/numerics/SparseSelect.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "test/unit/numerics/NumpyRunner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>

#include <cmath>
#include <limits>
#include <random>
#include <vector>

using namespace dsc::numerics;

namespace {
const float kInf = std::numeric_limits<float>::infinity();
} // namespace

TEST(NumericsYarn, CorrectionRanges) {
  // Released: d 64, compress_rope_theta 160000, original 65536, beta 32 / 1.
  YarnRange r = yarnCorrectionRange(64, 160000.0, 65536, 32, 1);
  EXPECT_EQ(r.low, 15);
  EXPECT_EQ(r.high, 25);
  // tiny40: d 16, original 32 -> 0 / 2; tiny6: d 32, original 64 -> 0 / 4.
  r = yarnCorrectionRange(16, 160000.0, 32, 32, 1);
  EXPECT_EQ(r.low, 0);
  EXPECT_EQ(r.high, 2);
  r = yarnCorrectionRange(32, 160000.0, 64, 32, 1);
  EXPECT_EQ(r.low, 0);
  EXPECT_EQ(r.high, 4);
}

TEST(NumericsYarn, InvFreqShape) {
  const std::vector<float> plain = ropeInvFreq(64, 160000.0);
  const std::vector<float> yarn = ropeInvFreq(64, 160000.0, 65536, 16, 32, 1);
  ASSERT_EQ(plain.size(), 32u);
  EXPECT_EQ(plain[0], 1.0f);
  // Below low the frequency is kept; from high on it is divided by 16.
  for (int k = 0; k <= 15; ++k)
    EXPECT_EQ(yarn[k], plain[k]) << k;
  for (int k = 25; k < 32; ++k)
    EXPECT_EQ(yarn[k], plain[k] / 16.0f * 1.0f + plain[k] * 0.0f) << k;
  for (int k = 16; k < 25; ++k) {
    EXPECT_LT(yarn[k], plain[k]);
    EXPECT_GT(yarn[k], plain[k] / 16.0f);
  }
  EXPECT_EQ(ropeAngle(3, 0.5f), 1.5f);
}

TEST(NumericsYarn, InvFreqMatchesNumpyFloat32) {
  DSC_REQUIRE_NUMPY(python);
  const char *script = R"PY(
import sys, math, numpy as np
out = sys.argv[1]
res = []
for d, base, orig, factor in [(64, 160000.0, 65536, 16), (16, 160000.0, 32, 16),
                              (32, 160000.0, 64, 16), (64, 10000.0, 0, 16), (32, 40000.0, 100, 40)]:
    e = np.arange(0, d, 2, dtype=np.float32) / np.float32(d)
    p = (np.float64(np.float32(base)) ** e.astype(np.float64)).astype(np.float32)  # correctly rounded
    simd = np.float32(base) ** e                                                     # numpy's SIMD powf
    assert np.all(np.abs(simd.view(np.int32) - p.view(np.int32)) <= 1), 'pow differs by > 1 ulp'
    f = np.float32(1.0) / p
    if orig > 0:
        corr = lambda r: d * math.log(orig / (r * 2 * math.pi)) / (2 * math.log(base))
        low = max(math.floor(corr(32)), 0); high = min(math.ceil(corr(1)), d - 1)
        den = np.float32(max(high - low, 1e-3))
        ramp = np.clip((np.arange(d // 2, dtype=np.float32) - np.float32(low)) / den, 0, 1).astype(np.float32)
        smooth = np.float32(1) - ramp
        f = f / np.float32(factor) * (np.float32(1) - smooth) + f * smooth
    res.append(f.astype(np.float32))
np.concatenate(res).tofile(out)
)PY";
  dsc::test::ScratchDir dir("yarn");
  ASSERT_EQ(dsc::test::runPython(python, dir, script, dir.file("f.bin")), 0);
  const auto expected = dsc::test::readRaw<uint32_t>(dir.file("f.bin"));
  std::vector<float> ours;
  for (auto v : {ropeInvFreq(64, 160000.0, 65536, 16), ropeInvFreq(16, 160000.0, 32, 16),
                 ropeInvFreq(32, 160000.0, 64, 16), ropeInvFreq(64, 10000.0, 0, 16),
                 ropeInvFreq(32, 40000.0, 100, 40)})
    ours.insert(ours.end(), v.begin(), v.end());
  ASSERT_EQ(expected.size(), ours.size());
  for (size_t i = 0; i < ours.size(); ++i)
    EXPECT_EQ(floatBits(ours[i]), expected[i]) << "entry " << i << ": " << ours[i];
}

TEST(NumericsSinkhorn, UniformComb) {
  // Zero mixes and bases: pre = sigmoid(0) + eps, post = 2 sigmoid(0) = 1,
  // comb uniform: every step keeps all entries equal (~1/4).
  std::vector<float> mixes(24, 0.0f), base(24, 0.0f);
  const float scale[3] = {1.0f, 1.0f, 1.0f};
  float pre[4], post[4], comb[16];
  hcSplitSinkhorn(mixes.data(), scale, base.data(), 4, 20, 1e-6f, pre, post, comb);
  for (int c = 0; c < 4; ++c) {
    EXPECT_EQ(pre[c], 0.5f + 1e-6f);
    EXPECT_EQ(post[c], 1.0f);
  }
  for (int i = 0; i < 16; ++i) {
    EXPECT_EQ(comb[i], comb[0]);
    EXPECT_NEAR(comb[i], 0.25f, 1e-5f);
  }
}

TEST(NumericsSinkhorn, EndsOnColumnNormalisation) {
  // Moderate logits, so every column keeps mass >> eps (a column with mass
  // S sums to S/(S+eps) after the final step).
  std::mt19937 rng(3);
  std::normal_distribution<float> n(0.0f, 1.0f);
  std::vector<float> mixes(24), base(24);
  for (float &v : mixes) v = n(rng);
  for (float &v : base) v = n(rng);
  const float scale[3] = {0.7f, 1.3f, 0.5f};
  float pre[4], post[4], comb[16];
  hcSplitSinkhorn(mixes.data(), scale, base.data(), 4, 20, 1e-6f, pre, post, comb);
  for (int j = 0; j < 4; ++j) {
    float col = 0.0f;
    for (int i = 0; i < 4; ++i)
      col += comb[i * 4 + j];
    EXPECT_NEAR(col, 1.0f, 1e-5f) << "column " << j;
  }
  for (int c = 0; c < 4; ++c) {
    EXPECT_GT(pre[c], 0.0f);
    EXPECT_LE(pre[c], 1.0f + 1e-6f);
    EXPECT_GT(post[c], 0.0f);
    EXPECT_LT(post[c], 2.0f);
  }
  // With one iteration the rows are the (column-normalised) softmax rows.
  float comb1[16];
  hcSplitSinkhorn(mixes.data(), scale, base.data(), 4, 1, 1e-6f, pre, post, comb1);
  for (int j = 0; j < 4; ++j) {
    float col = 0.0f;
    for (int i = 0; i < 4; ++i)
      col += comb1[i * 4 + j];
    EXPECT_NEAR(col, 1.0f, 1e-5f);
  }
}

TEST(NumericsSinkhorn, MatchesNumpyFloat32Replay) {
  DSC_REQUIRE_NUMPY(python);
  const char *script = R"PY(
import sys, numpy as np
m = np.fromfile(sys.argv[1], dtype=np.float32).reshape(-1, 24)
base = np.fromfile(sys.argv[2], dtype=np.float32)
sc = np.array([0.7, 1.3, 2.0], dtype=np.float32)
eps = np.float32(1e-6); one = np.float32(1)
sig = lambda x: one / (one + np.exp(-x))
pre = sig(m[:, :4] * sc[0] + base[:4]) + eps
post = np.float32(2) * sig(m[:, 4:8] * sc[1] + base[4:8])
c = (m[:, 8:] * sc[2] + base[8:]).reshape(-1, 4, 4)
c = np.exp(c - c.max(-1, keepdims=True))
s = c[..., 0] + c[..., 1] + c[..., 2] + c[..., 3]
c = c / s[..., None] + eps
def colnorm(c):
    s = c[:, 0, :] + c[:, 1, :] + c[:, 2, :] + c[:, 3, :]
    return c / (s[:, None, :] + eps)
def rownorm(c):
    s = c[..., 0] + c[..., 1] + c[..., 2] + c[..., 3]
    return c / (s[..., None] + eps)
c = colnorm(c)
for _ in range(19):
    c = colnorm(rownorm(c))
np.concatenate([pre, post, c.reshape(-1, 16)], 1).astype(np.float32).tofile(sys.argv[3])
)PY";
  const int tokens = 200;
  std::mt19937 rng(5);
  std::normal_distribution<float> n(0.0f, 2.0f);
  std::vector<float> mixes(tokens * 24), base(24);
  for (float &v : mixes) v = n(rng);
  for (float &v : base) v = n(rng);
  dsc::test::ScratchDir dir("sinkhorn");
  dsc::test::writeRaw(dir.file("m.bin"), mixes);
  dsc::test::writeRaw(dir.file("b.bin"), base);
  ASSERT_EQ(dsc::test::runPython(python, dir, script,
                                 dir.file("m.bin") + " " + dir.file("b.bin") + " " +
                                     dir.file("o.bin")),
            0);
  const auto expected = dsc::test::readRaw<float>(dir.file("o.bin"));
  ASSERT_EQ(expected.size(), static_cast<size_t>(tokens * 24));
  const float scale[3] = {0.7f, 1.3f, 2.0f};
  float maxRel = 0.0f;
  int64_t exact = 0;
  for (int t = 0; t < tokens; ++t) {
    float out[24];
    hcSplitSinkhorn(mixes.data() + t * 24, scale, base.data(), 4, 20, 1e-6f, out, out + 4,
                    out + 8);
    for (int i = 0; i < 24; ++i) {
      const float e = expected[t * 24 + i];
      exact += floatBits(out[i]) == floatBits(e);
      maxRel = std::max(maxRel, std::fabs(out[i] - e) / std::max(std::fabs(e), 1e-30f));
    }
  }
  // Same op order; only exp may differ in the last ulp between libm and
  // numpy's SIMD exp, and Sinkhorn amplifies that a little.
  EXPECT_LT(maxRel, 2e-6f);
  EXPECT_GT(exact, tokens * 24 / 2);
}

TEST(NumericsSparseSelect, VisibilityAndTopK) {
  // width 8, compressLen 5: positions 5..7 invisible.
  std::vector<float> s = {0.5f, 3.0f, 1.0f, 3.0f, -2.0f, 9.0f, 9.0f, 9.0f};
  maskInvisible(s.data(), 8, 5);
  EXPECT_EQ(s[5], -kInf);
  EXPECT_EQ(s[4], -2.0f);
  // k = 3: 3.0@1, 3.0@3, 1.0@2 -> sorted [1,2,3] + offset 16.
  EXPECT_EQ(indexerTopK(s.data(), 8, 5, 3, 16), (std::vector<int32_t>{17, 18, 19}));
  // k = 7 > visible: two -inf picks (lowest indices 5, 6) map to -1.
  EXPECT_EQ(indexerTopK(s.data(), 8, 5, 7, 16),
            (std::vector<int32_t>{16, 17, 18, 19, 20, -1, -1}));
  // k is clamped to the width.
  EXPECT_EQ(indexerTopK(s.data(), 8, 5, 512, 0).size(), 8u);
}

TEST(NumericsSparseSelect, TieRuleLowerIndexWins) {
  // Exact ties at the k-th place (reference-spec §15.2): the lower index wins.
  const std::vector<float> s = {0.0f, 2.0f, 0.0f, 0.0f, 2.0f, 0.0f};
  EXPECT_EQ(topKIndices(s.data(), 6, 3), (std::vector<int64_t>{1, 4, 0}));
  EXPECT_EQ(indexerTopK(s.data(), 6, 6, 4, 0), (std::vector<int32_t>{0, 1, 2, 4}));
  // NaN ranks first (torch.topk).
  const std::vector<float> n = {1.0f, NAN, 5.0f};
  EXPECT_EQ(topKIndices(n.data(), 3, 2), (std::vector<int64_t>{1, 2}));
}

TEST(NumericsSparseSelect, CandidateBlocks) {
  // width 10, blocks of 4 (last padded with -inf): maxima 5, 2, 9.
  std::vector<float> s = {1, 5, 0, 0, 2, 2, 2, 2, 9, -kInf};
  // compressLen 9: newest block (9-1)//4 = 2 pinned; top-2 = {2, 0}.
  EXPECT_EQ(selectCandidateBlocks(s.data(), 10, 9, 2, 4),
            (std::vector<uint8_t>{1, 1, 1, 1, 0, 0, 0, 0, 1, 1}));
  // The pin beats a higher block: compressLen 6 pins block 1 (max 2).
  std::vector<float> t = {1, 5, 0, 0, 2, 2, -kInf, -kInf, -kInf, -kInf};
  EXPECT_EQ(selectCandidateBlocks(t.data(), 10, 6, 1, 4),
            (std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 1, 1, 0, 0}));
  // More picks than reachable blocks: -inf blocks are dropped.
  EXPECT_EQ(selectCandidateBlocks(t.data(), 10, 6, 3, 4),
            (std::vector<uint8_t>{1, 1, 1, 1, 1, 1, 1, 1, 0, 0}));
  // compressLen 0: (0-1)//4 = -1 pins nothing; all -inf -> no candidates.
  std::vector<float> none(10, -kInf);
  EXPECT_EQ(selectCandidateBlocks(none.data(), 10, 0, 4, 4), std::vector<uint8_t>(10, 0));
  // Tied block scores: the lower block index wins.
  std::vector<float> tie = {3, 0, 0, 0, 3, 0, 0, 0, 1, 0, 0, 0};
  EXPECT_EQ(selectCandidateBlocks(tie.data(), 12, 12, 2, 4),
            (std::vector<uint8_t>{1, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1}));
  // Level two masks the non-candidates.
  std::vector<float> scores = {4, 3, 2, 1, 8, 7, 6, 5, 0, 0};
  const std::vector<uint8_t> mask = selectCandidateBlocks(s.data(), 10, 9, 2, 4);
  maskNonCandidates(scores.data(), mask.data(), 10);
  EXPECT_EQ(scores[4], -kInf);
  EXPECT_EQ(indexerTopK(scores.data(), 10, 9, 3, 0), (std::vector<int32_t>{0, 1, 2}));
}

TEST(NumericsSparseSelect, CandidateBlockIds) {
  // The same cases as block lists: picked ids ascending, -1 padding.
  std::vector<float> s = {1, 5, 0, 0, 2, 2, 2, 2, 9, -kInf};
  EXPECT_EQ(selectCandidateBlockIds(s.data(), 10, 9, 2, 4), (std::vector<int32_t>{0, 2}));
  std::vector<float> t = {1, 5, 0, 0, 2, 2, -kInf, -kInf, -kInf, -kInf};
  EXPECT_EQ(selectCandidateBlockIds(t.data(), 10, 6, 1, 4), (std::vector<int32_t>{1}));
  // Three picks, one block all -inf: two ids and one -1.
  EXPECT_EQ(selectCandidateBlockIds(t.data(), 10, 6, 3, 4), (std::vector<int32_t>{0, 1, -1}));
  // More picks than blocks: padding.
  EXPECT_EQ(selectCandidateBlockIds(s.data(), 10, 9, 5, 4),
            (std::vector<int32_t>{0, 1, 2, -1, -1}));
  std::vector<float> none(10, -kInf);
  EXPECT_EQ(selectCandidateBlockIds(none.data(), 10, 0, 4, 4), std::vector<int32_t>(4, -1));
  const int32_t ids[] = {2, 0, -1};
  EXPECT_EQ(candidateMaskFromBlocks(ids, 3, 4, 10),
            (std::vector<uint8_t>{1, 1, 1, 1, 0, 0, 0, 0, 1, 1}));
  // Random rows with many ties: ids ascending, distinct, in range, the
  // newest visible block (pinned) always picked, padding only at the end.
  uint64_t state = 12345;
  for (int row = 0; row < 200; ++row) {
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    const int64_t width = 1 + int64_t((state >> 33) % 97), cl = int64_t((state >> 40) % (width + 1));
    std::vector<float> r(static_cast<size_t>(width));
    for (float &v : r) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      v = float(int64_t(state >> 60)) - 8.0f;
    }
    const int64_t k = 1 + row % 7, bs = 1 + row % 5, nblocks = (width + bs - 1) / bs;
    std::vector<int32_t> list = selectCandidateBlockIds(r.data(), width, cl, k, bs);
    ASSERT_EQ(int64_t(list.size()), k);
    auto end = std::find(list.begin(), list.end(), -1);
    EXPECT_TRUE(std::all_of(end, list.end(), [](int32_t v) { return v == -1; })) << row;
    EXPECT_TRUE(std::adjacent_find(list.begin(), end, std::greater_equal<int32_t>()) == end) << row;
    EXPECT_TRUE(std::all_of(list.begin(), end, [&](int32_t v) { return v >= 0 && v < nblocks; }));
    EXPECT_EQ(end - list.begin(), std::min(k, nblocks)) << "every finite block is pickable";
    if (cl > 0)
      EXPECT_TRUE(std::find(list.begin(), end, int32_t((cl - 1) / bs)) != end) << row;
  }
}
