//===- Norm.cpp - CPU reference RMSNorm -----------------------------------===//
#include "runtime/cpu/kernels/dense/Norm.h"

#include "runtime/cpu/ParallelFor.h"
#include "runtime/cpu/kernels/dense/DenseUtil.h"
#include "runtime/cpu/kernels/dense/TorchReduce.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace dsc::cpu {

namespace nx = dsc::numerics;

float rmsRsqrt(const float *x, int64_t n, float eps) {
  // Squares of bf16 values are exact in fp32; the sum follows torch's order.
  std::vector<float> squares(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    squares[static_cast<size_t>(i)] = x[i] * x[i];
  const float sum = torchSumF32(squares.data(), n);
  const float mean = sum / static_cast<float>(n);
  return 1.0f / std::sqrt(mean + eps);
}

void rmsNorm(const uint16_t *x, int64_t rows, int64_t n, const uint16_t *w, float eps,
             uint16_t *y) {
  parallelFor(rows, std::max<int64_t>(1, 16384 / std::max<int64_t>(n, 1)),
              [&](int64_t b, int64_t e) {
                std::vector<float> xf(static_cast<size_t>(n));
                for (int64_t r = b; r < e; ++r) {
                  for (int64_t i = 0; i < n; ++i)
                    xf[i] = nx::bf16ToFloat(x[r * n + i]);
                  const float rs = rmsRsqrt(xf.data(), n, eps);
                  for (int64_t i = 0; i < n; ++i) {
                    const float normed = xf[i] * rs;
                    y[r * n + i] = nx::bf16FromFloat(nx::bf16ToFloat(w[i]) * normed);
                  }
                }
              });
}

} // namespace dsc::cpu
