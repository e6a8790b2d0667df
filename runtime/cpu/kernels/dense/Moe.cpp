//===- Moe.cpp - CPU reference MoE ----------------------------------------===//
#include "runtime/cpu/kernels/dense/Moe.h"

#include "runtime/cpu/ParallelFor.h"
#include "runtime/cpu/kernels/dense/DenseUtil.h"
#include "runtime/cpu/kernels/dense/Linear.h"

#include "dsc/numerics/SparseSelect.h"

#include <cmath>
#include <cstring>
#include <functional>

namespace dsc::cpu {

namespace nx = dsc::numerics;

namespace {

/// torch.nn.functional.softplus(x) with beta 1, threshold 20.
float softplusF32(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

} // namespace

void moeGate(const uint16_t *x, int64_t T, int64_t D, const uint16_t *gateW, const float *bias,
             const float *biasVl, const uint8_t *imageMask, const MoeGateParams &p,
             int32_t *indices, float *weights, float *scoresOut) {
  const int64_t E = p.nExperts, k = p.topk;
  std::vector<float> scores(static_cast<size_t>(T * E));
  {
    const std::vector<float> xf = widenBf16(x, T * D);
    linearF32(xf.data(), T, D, gateW, E, scores.data());
  }
  parallelFor(T, 16, [&](int64_t b, int64_t e) {
    std::vector<float> choice(static_cast<size_t>(E));
    for (int64_t t = b; t < e; ++t) {
      float *s = scores.data() + t * E;
      for (int64_t i = 0; i < E; ++i)
        s[i] = s[i] / p.gateTemp;
      switch (p.scoreFunc) {
      case MoeScoreFunc::SqrtSoftplus:
        for (int64_t i = 0; i < E; ++i)
          s[i] = std::sqrt(softplusF32(s[i]));
        break;
      case MoeScoreFunc::Sigmoid:
        for (int64_t i = 0; i < E; ++i)
          s[i] = sigmoidF32(s[i]);
        break;
      case MoeScoreFunc::Softmax: {
        float mx = -INFINITY;
        for (int64_t i = 0; i < E; ++i)
          mx = s[i] > mx ? s[i] : mx;
        float sum = 0.0f;
        for (int64_t i = 0; i < E; ++i) {
          s[i] = std::exp(s[i] - mx);
          sum += s[i];
        }
        for (int64_t i = 0; i < E; ++i)
          s[i] = s[i] / sum;
        break;
      }
      }
      const float *bz = (imageMask && biasVl && imageMask[t]) ? biasVl : bias;
      for (int64_t i = 0; i < E; ++i)
        choice[i] = bz ? s[i] + bz[i] : s[i];
      const std::vector<int64_t> top = nx::topKIndices(choice.data(), E, k);
      float *w = weights + t * k;
      for (int64_t j = 0; j < k; ++j) {
        indices[t * k + j] = static_cast<int32_t>(top[j]);
        w[j] = s[top[j]];
      }
      if (p.normTopkProb && k > 1) {
        float sum = 0.0f;
        for (int64_t j = 0; j < k; ++j)
          sum += w[j];
        const float denom = sum + 1e-20f;
        for (int64_t j = 0; j < k; ++j)
          w[j] = w[j] / denom;
      }
      for (int64_t j = 0; j < k; ++j)
        w[j] = w[j] * p.routeScale;
    }
  });
  if (scoresOut)
    std::memcpy(scoresOut, scores.data(), scores.size() * sizeof(float));
}

std::vector<MoeRoutedExpert> moeExpertViews(const MoeStackedExperts &st, int64_t E, int64_t D,
                                            int64_t I) {
  std::vector<MoeRoutedExpert> v(static_cast<size_t>(E));
  for (int64_t e = 0; e < E; ++e) {
    MoeRoutedExpert &x = v[static_cast<size_t>(e)];
    x.w1 = st.w1 + e * I * (D / 2);
    x.w1Scale = st.w1Scale + e * I * (D / 32);
    x.w3 = st.w3 + e * I * (D / 2);
    x.w3Scale = st.w3Scale + e * I * (D / 32);
    x.w2 = st.w2 + e * D * (I / 2);
    x.w2Scale = st.w2Scale + e * D * (I / 32);
  }
  return v;
}

void moeSwiglu(const float *g, const float *u, int64_t n, float lim, const float *routeW,
               uint16_t *out) {
  for (int64_t i = 0; i < n; ++i) {
    float gi = g[i], ui = u[i];
    if (lim > 0.0f) {
      ui = ui < -lim ? -lim : (ui > lim ? lim : ui);
      gi = gi > lim ? lim : gi;
    }
    const float silu = gi / (1.0f + std::exp(-gi));
    float y = silu * ui;
    if (routeW)
      y = *routeW * y;
    out[i] = nx::bf16FromFloat(y);
  }
}

namespace {

/// One expert on rows xs [n, D]: out bf16 [n, D]. routeW [n] or null.
template <typename Gemm>
void runExpert(const uint16_t *xs, int64_t n, int64_t D, int64_t I, float lim,
               const float *routeW, Gemm gemm1, Gemm gemm3, Gemm gemm2, uint16_t *out) {
  std::vector<uint16_t> gb(static_cast<size_t>(n * I)), ub(static_cast<size_t>(n * I)),
      hb(static_cast<size_t>(n * I));
  gemm1(xs, n, D, gb.data(), I);
  gemm3(xs, n, D, ub.data(), I);
  const std::vector<float> g = widenBf16(gb.data(), n * I), u = widenBf16(ub.data(), n * I);
  for (int64_t r = 0; r < n; ++r)
    moeSwiglu(g.data() + r * I, u.data() + r * I, I, lim, routeW ? routeW + r : nullptr,
              hb.data() + r * I);
  gemm2(hb.data(), n, I, out, D);
}

} // namespace

namespace {
/// One of an expert's three GEMMs: (input, rows, K, output, N).
using ExpertGemm = std::function<void(const uint16_t *, int64_t, int64_t, uint16_t *, int64_t)>;
using QuantizedLinear = void (*)(const uint16_t *, int64_t, int64_t, const uint8_t *,
                                 const uint8_t *, int64_t, uint16_t *);
/// Binds a quantised linear (linearFp4 / linearFp8) to one weight and scale.
ExpertGemm boundGemm(QuantizedLinear linear, const uint8_t *w, const uint8_t *scale) {
  return [=](const uint16_t *a, int64_t m, int64_t k, uint16_t *o, int64_t n) {
    linear(a, m, k, w, scale, n, o);
  };
}
} // namespace

void moeExperts(const uint16_t *x, int64_t T, const MoeExpertsParams &p,
                const MoeRoutedExpert *experts, int64_t E, const MoeSharedExpert &shared,
                const int32_t *indices, const float *weights, int64_t topk, uint16_t *y) {
  const int64_t D = p.dim, I = p.inter;
  std::vector<float> acc(static_cast<size_t>(T * D), 0.0f);
  std::vector<int64_t> rows;
  std::vector<float> rw;
  std::vector<uint16_t> xs, out;
  for (int64_t e = 0; e < E; ++e) {
    rows.clear();
    rw.clear();
    for (int64_t t = 0; t < T; ++t)
      for (int64_t j = 0; j < topk; ++j)
        if (indices[t * topk + j] == e) {
          rows.push_back(t);
          rw.push_back(weights[t * topk + j]);
        }
    if (rows.empty())
      continue;
    const int64_t n = static_cast<int64_t>(rows.size());
    xs.resize(static_cast<size_t>(n * D));
    out.resize(static_cast<size_t>(n * D));
    for (int64_t r = 0; r < n; ++r)
      std::memcpy(xs.data() + r * D, x + rows[r] * D, static_cast<size_t>(D) * sizeof(uint16_t));
    const MoeRoutedExpert &ex = experts[e];
    runExpert<ExpertGemm>(xs.data(), n, D, I, p.swigluLimit, rw.data(),
                          boundGemm(linearFp4, ex.w1, ex.w1Scale),
                          boundGemm(linearFp4, ex.w3, ex.w3Scale),
                          boundGemm(linearFp4, ex.w2, ex.w2Scale), out.data());
    for (int64_t r = 0; r < n; ++r) {
      float *dst = acc.data() + rows[r] * D;
      for (int64_t d = 0; d < D; ++d)
        dst[d] = dst[d] + nx::bf16ToFloat(out[r * D + d]);
    }
  }
  out.resize(static_cast<size_t>(T * D));
  runExpert<ExpertGemm>(x, T, D, I, p.swigluLimit, nullptr,
                        boundGemm(linearFp8, shared.w1, shared.w1Scale),
                        boundGemm(linearFp8, shared.w3, shared.w3Scale),
                        boundGemm(linearFp8, shared.w2, shared.w2Scale), out.data());
  for (int64_t i = 0; i < T * D; ++i)
    y[i] = nx::bf16FromFloat(acc[i] + nx::bf16ToFloat(out[i]));
}

void moe(const uint16_t *x, int64_t T, const uint16_t *gateW, const float *bias,
         const float *biasVl, const uint8_t *imageMask, const MoeGateParams &gp,
         const MoeExpertsParams &ep, const MoeRoutedExpert *experts,
         const MoeSharedExpert &shared, uint16_t *y) {
  std::vector<int32_t> idx(static_cast<size_t>(T * gp.topk));
  std::vector<float> w(static_cast<size_t>(T * gp.topk));
  moeGate(x, T, ep.dim, gateW, bias, biasVl, imageMask, gp, idx.data(), w.data());
  moeExperts(x, T, ep, experts, gp.nExperts, shared, idx.data(), w.data(), gp.topk, y);
}

} // namespace dsc::cpu
