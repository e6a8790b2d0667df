//===- Linear.cpp - CPU reference GEMMs -----------------------------------===//
#include "runtime/cpu/kernels/dense/Linear.h"

#include "runtime/cpu/ParallelFor.h"
#include "runtime/cpu/kernels/dense/DenseUtil.h"

#include "dsc/numerics/Quantize.h"
#include "dsc/numerics/ScalarCodecs.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace dsc::cpu {

namespace nx = dsc::numerics;

namespace {

/// act_quant of x [M, K] (spec §3.2): E4M3 code values as fp32 and the
/// per-(row, 32 K) scales as fp32.
void quantizeActivations(const uint16_t *x, int64_t M, int64_t K, std::vector<float> &codes,
                         std::vector<float> &scales) {
  const int64_t kb = K / nx::kFp8ActBlock;
  codes.resize(static_cast<size_t>(M * K));
  scales.resize(static_cast<size_t>(M * kb));
  parallelFor(M, std::max<int64_t>(1, 8192 / std::max<int64_t>(K, 1)), [&](int64_t b, int64_t e) {
    float blk[nx::kFp8ActBlock];
    uint8_t q[nx::kFp8ActBlock];
    for (int64_t m = b; m < e; ++m)
      for (int64_t j = 0; j < kb; ++j) {
        const uint16_t *src = x + m * K + j * nx::kFp8ActBlock;
        for (int i = 0; i < nx::kFp8ActBlock; ++i)
          blk[i] = nx::bf16ToFloat(src[i]);
        const uint8_t s = nx::quantizeFp8Block(blk, nx::kFp8ActBlock, q);
        float *dst = codes.data() + m * K + j * nx::kFp8ActBlock;
        for (int i = 0; i < nx::kFp8ActBlock; ++i)
          dst[i] = nx::e4m3ToFloat(q[i]);
        scales[static_cast<size_t>(m * kb + j)] = nx::ue8m0ToFloat(s);
      }
  });
}

enum class WeightKind { Fp8, Fp4 };

/// The block-scaled GEMM of spec §3.4 with fp32 output (before the cast).
template <WeightKind kind, typename Store>
void blockScaledLinear(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w,
                       const uint8_t *scale, int64_t N, Store store) {
  assert(K % 32 == 0 && "act_quant needs K % 32 == 0");
  if (M <= 0 || N <= 0)
    return;
  std::vector<float> aCodes, aScales;
  quantizeActivations(x, M, K, aCodes, aScales);
  const int64_t kb = K / 32;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(M * K, 1));
  parallelFor(N, grain, [&](int64_t nb, int64_t ne) {
    std::vector<float> b(static_cast<size_t>(K)), bs(static_cast<size_t>(kb));
    for (int64_t n = nb; n < ne; ++n) {
      if constexpr (kind == WeightKind::Fp8) {
        const uint8_t *row = w + n * K;
        for (int64_t k = 0; k < K; ++k)
          b[k] = nx::e4m3ToFloat(row[k]);
        const uint8_t *srow = scale + (n / nx::kFp8WeightBlock) * kb;
        for (int64_t j = 0; j < kb; ++j)
          bs[j] = nx::ue8m0ToFloat(srow[j]);
      } else {
        const uint8_t *row = w + n * (K / 2);
        for (int64_t k = 0; k < K; ++k)
          b[k] = nx::e2m1ToFloat(nx::fp4CodeAt(row, k));
        const uint8_t *srow = scale + n * kb;
        for (int64_t j = 0; j < kb; ++j)
          bs[j] = nx::ue8m0ToFloat(srow[j]);
      }
      for (int64_t m = 0; m < M; ++m)
        store(m, n,
              nx::blockScaledDot(aCodes.data() + m * K, aScales.data() + m * kb, b.data(),
                                 bs.data(), static_cast<int>(K)));
    }
  });
}

} // namespace

void linearFp8(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
               int64_t N, uint16_t *y) {
  blockScaledLinear<WeightKind::Fp8>(x, M, K, w, scale, N, [&](int64_t m, int64_t n, float v) {
    y[m * N + n] = nx::bf16FromFloat(v);
  });
}

void linearFp4(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
               int64_t N, uint16_t *y) {
  blockScaledLinear<WeightKind::Fp4>(x, M, K, w, scale, N, [&](int64_t m, int64_t n, float v) {
    y[m * N + n] = nx::bf16FromFloat(v);
  });
}

void linearFp8F32(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
                  int64_t N, float *y) {
  blockScaledLinear<WeightKind::Fp8>(x, M, K, w, scale, N,
                                     [&](int64_t m, int64_t n, float v) { y[m * N + n] = v; });
}

void linearFp4F32(const uint16_t *x, int64_t M, int64_t K, const uint8_t *w, const uint8_t *scale,
                  int64_t N, float *y) {
  blockScaledLinear<WeightKind::Fp4>(x, M, K, w, scale, N,
                                     [&](int64_t m, int64_t n, float v) { y[m * N + n] = v; });
}

namespace {

/// y[m, n] = store(sum_k double(x[m,k]) * double(w[n,k])) with w rows widened
/// by `widen` into an fp32 buffer.
template <typename WRow, typename Store>
void denseLinear(const float *xf, int64_t M, int64_t K, int64_t N, WRow widenRow, Store store) {
  if (M <= 0 || N <= 0)
    return;
  const int64_t grain = std::max<int64_t>(1, 65536 / std::max<int64_t>(M * K, 1));
  parallelFor(N, grain, [&](int64_t nb, int64_t ne) {
    std::vector<float> wr(static_cast<size_t>(K));
    for (int64_t n = nb; n < ne; ++n) {
      widenRow(n, wr.data());
      for (int64_t m = 0; m < M; ++m)
        store(m, n, dotF64(xf + m * K, wr.data(), K));
    }
  });
}

} // namespace

void linearBf16(const uint16_t *x, int64_t M, int64_t K, const uint16_t *w, int64_t N,
                uint16_t *y) {
  const std::vector<float> xf = widenBf16(x, M * K);
  denseLinear(
      xf.data(), M, K, N,
      [&](int64_t n, float *dst) {
        for (int64_t k = 0; k < K; ++k)
          dst[k] = nx::bf16ToFloat(w[n * K + k]);
      },
      [&](int64_t m, int64_t n, double v) {
        y[m * N + n] = nx::bf16FromFloat(static_cast<float>(v));
      });
}

void linearF32(const float *x, int64_t M, int64_t K, const uint16_t *w, int64_t N, float *y) {
  denseLinear(
      x, M, K, N,
      [&](int64_t n, float *dst) {
        for (int64_t k = 0; k < K; ++k)
          dst[k] = nx::bf16ToFloat(w[n * K + k]);
      },
      [&](int64_t m, int64_t n, double v) { y[m * N + n] = static_cast<float>(v); });
}

void linearF32W32(const float *x, int64_t M, int64_t K, const float *w, int64_t N, float *y) {
  denseLinear(
      x, M, K, N,
      [&](int64_t n, float *dst) {
        for (int64_t k = 0; k < K; ++k)
          dst[k] = w[n * K + k];
      },
      [&](int64_t m, int64_t n, double v) { y[m * N + n] = static_cast<float>(v); });
}

void dequantizeFp8WeightToBf16(const uint8_t *w, const uint8_t *scale, int64_t N, int64_t K,
                               uint16_t *out) {
  parallelFor(N, 64, [&](int64_t b, int64_t e) {
    for (int64_t n = b; n < e; ++n)
      for (int64_t k = 0; k < K; ++k)
        out[n * K + k] = nx::bf16FromFloat(nx::fp8WeightAt(w, scale, K, n, k));
  });
}

} // namespace dsc::cpu
