//===- DenseUtil.h - Small helpers shared by the dense CPU kernels --------===//
//
// Internal to runtime/cpu/kernels/dense. Accumulation rule used wherever the
// reference reduces in fp32 through a BLAS / vectorised torch reduction whose
// order cannot be reproduced: exact products (double) summed in double in
// index order, rounded once by the caller. This is deterministic and within
// about one fp32 ulp of any reasonable fp32 order.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_DENSEUTIL_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_DENSEUTIL_H

#include "dsc/numerics/ScalarCodecs.h"

#include <cmath>
#include <cstdint>
#include <vector>

namespace dsc::cpu {

inline std::vector<float> widenBf16(const uint16_t *x, int64_t n) {
  std::vector<float> out(static_cast<size_t>(n > 0 ? n : 0));
  for (int64_t i = 0; i < n; ++i)
    out[static_cast<size_t>(i)] = numerics::bf16ToFloat(x[i]);
  return out;
}

/// sum_k double(a[k]) * double(b[k]) (exact products), index order.
inline double dotF64(const float *a, const float *b, int64_t n) {
  // Four interleaved partial sums, combined in a fixed order: deterministic,
  // and lets the compiler pipeline the loop.
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  int64_t k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 += double(a[k]) * double(b[k]);
    s1 += double(a[k + 1]) * double(b[k + 1]);
    s2 += double(a[k + 2]) * double(b[k + 2]);
    s3 += double(a[k + 3]) * double(b[k + 3]);
  }
  for (; k < n; ++k)
    s0 += double(a[k]) * double(b[k]);
  return (s0 + s1) + (s2 + s3);
}

/// sum of fp32-rounded squares (x.square() is an fp32 tensor in torch),
/// accumulated in double.
inline double sumSquaresF32(const float *x, int64_t n) {
  double s = 0;
  for (int64_t k = 0; k < n; ++k) {
    const float sq = x[k] * x[k];
    s += double(sq);
  }
  return s;
}

/// torch sigmoid on fp32: 1 / (1 + exp(-x)).
inline float sigmoidF32(float x) { return 1.0f / (1.0f + std::exp(-x)); }

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_DENSEUTIL_H
