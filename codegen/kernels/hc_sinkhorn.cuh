//===- hc_sinkhorn.cuh - mHC's hc_split_sinkhorn on the device -------------===//
//
// What: the split of one token's (2+hc)*hc mixes (already times the rms
// factor) into pre, post and the Sinkhorn-normalised comb (reference-spec
// §8.1), in numerics/lib/HyperConnection.cpp's fp32 operation order:
// splitSinkhorn by one thread, splitSinkhornWarp by a whole warp for
// hc * hc <= 32 (the same operations spread over the lanes, every sum read
// in the serial order through shuffles: bit-identical). expf is the
// device's (<= 2 ulp from the host libm). Shared by dsc_hc_mixes_finish_fast
// (hc_mixes.cu) and dsc_mhc_entry_decode_fast (mhc_entry.cu).
// Include after common.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_HC_SINKHORN_CUH
#define DSC_CODEGEN_KERNELS_HC_SINKHORN_CUH

#include "codegen/kernels/common.cuh"

namespace dsc_dense_hc {
__device__ float sigmoid(float x) { return __fdiv_rn(1.0f, __fadd_rn(1.0f, expf(-x))); }

/// hc_split_sinkhorn of one token from its (2+hc)*hc mixes (already times
/// the rms factor), by one thread: numerics/lib/HyperConnection.cpp's fp32
/// operation order.
__device__ void splitSinkhorn(const float *mixes, long long hc, const float *scale,
                              const float *base, float eps, int iters, float *pr, float *q,
                              float *cb) {
  const int n = (int)hc;
  for (int c = 0; c < n; ++c) {
    pr[c] = __fadd_rn(
        dsc_dense_hc::sigmoid(__fadd_rn(__fmul_rn(mixes[c], scale[0]), base[c])), eps);
    q[c] = __fmul_rn(2.0f, dsc_dense_hc::sigmoid(
                               __fadd_rn(__fmul_rn(mixes[n + c], scale[1]), base[n + c])));
  }
  const float *m = mixes + 2 * n;
  const float *b = base + 2 * n;
  for (int i = 0; i < n; ++i) {
    float *row = cb + i * n;
    float mx = __int_as_float(0xff800000);
    for (int j = 0; j < n; ++j) {
      row[j] = __fadd_rn(__fmul_rn(m[i * n + j], scale[2]), b[i * n + j]);
      mx = row[j] > mx ? row[j] : mx;
    }
    for (int j = 0; j < n; ++j)
      row[j] = expf(__fsub_rn(row[j], mx));
    float sum = 0.0f;
    for (int j = 0; j < n; ++j)
      sum = __fadd_rn(sum, row[j]);
    for (int j = 0; j < n; ++j)
      row[j] = __fadd_rn(__fdiv_rn(row[j], sum), eps);
  }
  // Divides each line a (row: stride n, along 1; column: stride 1, along n)
  // by its sum in index order + eps.
  auto normalise = [&](int lineStride, int step) {
    for (int a = 0; a < n; ++a) {
      float *line = cb + a * lineStride;
      float sum = 0.0f;
      for (int b = 0; b < n; ++b)
        sum = __fadd_rn(sum, line[b * step]);
      const float d = __fadd_rn(sum, eps);
      for (int b = 0; b < n; ++b)
        line[b * step] = __fdiv_rn(line[b * step], d);
    }
  };
  for (int it = 0; it < (iters < 1 ? 1 : iters); ++it) {
    if (it > 0) // rows, then columns, from the second round on
      normalise(n, 1);
    normalise(1, n);
  }
}
/// splitSinkhorn by a whole warp for n*n <= 32: lane l holds comb entry (l / n,
/// l % n); every sum is read in the serial order through shuffles, so the
/// result is bit-identical to splitSinkhorn. All 32 lanes must call it.
__device__ void splitSinkhornWarp(const float *mixes, long long hc, const float *scale,
                                  const float *base, float eps, int iters, float *pr, float *q,
                                  float *cb) {
  const int n = (int)hc, lane = threadIdx.x & 31, i = lane / n, j = lane % n;
  const bool live = lane < n * n;
  if (lane < n) {
    pr[lane] = __fadd_rn(sigmoid(__fadd_rn(__fmul_rn(mixes[lane], scale[0]), base[lane])), eps);
    q[lane] =
        __fmul_rn(2.0f, sigmoid(__fadd_rn(__fmul_rn(mixes[n + lane], scale[1]), base[n + lane])));
  }
  float v = live ? __fadd_rn(__fmul_rn(mixes[2 * n + lane], scale[2]), base[2 * n + lane]) : 0.0f;
  auto at = [&](float x, int src) { return __shfl_sync(0xffffffffu, x, src & 31); };
  auto rowSum = [&](float x) {
    float sum = 0.0f;
    for (int jj = 0; jj < n; ++jj)
      sum = __fadd_rn(sum, at(x, i * n + jj));
    return sum;
  };
  float mx = __int_as_float(0xff800000);
  for (int jj = 0; jj < n; ++jj) {
    const float o = at(v, i * n + jj);
    mx = o > mx ? o : mx;
  }
  v = expf(__fsub_rn(v, mx));
  v = __fadd_rn(__fdiv_rn(v, rowSum(v)), eps);
  for (int it = 0; it < (iters < 1 ? 1 : iters); ++it) {
    if (it > 0)
      v = __fdiv_rn(v, __fadd_rn(rowSum(v), eps));
    float sum = 0.0f;
    for (int ii = 0; ii < n; ++ii)
      sum = __fadd_rn(sum, at(v, ii * n + j));
    v = __fdiv_rn(v, __fadd_rn(sum, eps));
  }
  if (live)
    cb[lane] = v;
}
} // namespace dsc_dense_hc

#endif // DSC_CODEGEN_KERNELS_HC_SINKHORN_CUH
