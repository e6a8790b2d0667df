//===- linear.cu - Block-scaled FP8/FP4 and bf16 linear (§3.4) ------------===//
//
// quant = fp8 / fp4 (two steps):
//   dsc_linear_act_quant: one thread per (row, 32 K): E4M3 codes + fp32
//     scale into scratch (numerics::quantizeFp8Block);
//   dsc_linear_fp8 / dsc_linear_fp4: one thread per output (m, n), n the
//     fastest index; the CPU's block order and rounding points, one bf16 RNE.
// quant = bf16:
//   dsc_linear_bf16: one thread per output; exact products summed in double
//     in the CPU's dotF64 order, rounded double -> fp32 -> bf16.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

// DenseUtil.h dotF64: exact products summed in double, four interleaved
// partial sums combined as (s0+s1)+(s2+s3) (the CPU's order, bit for bit).
// a(k), b(k) give the fp32 operands.
namespace dsc_dense_d64 {
template <typename A, typename B>
__device__ double dotF64(long long n, A a, B b) {
  double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  long long k = 0;
  for (; k + 4 <= n; k += 4) {
    s0 = __dadd_rn(s0, __dmul_rn((double)a(k), (double)b(k)));
    s1 = __dadd_rn(s1, __dmul_rn((double)a(k + 1), (double)b(k + 1)));
    s2 = __dadd_rn(s2, __dmul_rn((double)a(k + 2), (double)b(k + 2)));
    s3 = __dadd_rn(s3, __dmul_rn((double)a(k + 3), (double)b(k + 3)));
  }
  for (; k < n; ++k)
    s0 = __dadd_rn(s0, __dmul_rn((double)a(k), (double)b(k)));
  return __dadd_rn(__dadd_rn(s0, s1), __dadd_rn(s2, s3));
}
} // namespace dsc_dense_d64

// The block-scaled GEMM of reference-spec §3.4 as the CPU runs it
// (runtime/cpu/kernels/dense/Linear.cpp + numerics::blockScaledDot):
//   act_quant: per (row, 32 K) numerics::quantizeFp8Block -> E4M3 codes and
//     the fp32 value of the UE8M0 scale;
//   per output: for each 32-K block, partial = sum a_code*w_code in index
//     order (fp32, products exact), acc += (partial * a_s) * w_s, blocks in
//     K order; every op __fmul_rn/__fadd_rn (no FMA contraction).
namespace dsc_dense_gemm {

/// One thread per (row, 32-block).
__device__ void actQuant(const unsigned short *x, long long M, long long K, unsigned char *codes,
                         float *scales) {
  const long long kb = K / 32, n = M * kb;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    float blk[32];
    const unsigned short *src = x + i * 32; // row m, block j = i*32 in [M, K]
    for (int e = 0; e < 32; ++e)
      blk[e] = bf16ToFloat(src[e]);
    scales[i] = ue8m0ToFloat(quantizeFp8Block(blk, 32, codes + i * 32));
  }
}

/// The fp32 accumulator of output (m, n). wcode(k) gives the weight code's
/// fp32 value of column k, wscale(j) the fp32 weight scale of K block j.
template <typename WCode, typename WScale>
__device__ float blockDot(const unsigned char *codes, const float *scales, long long m,
                          long long K, WCode wcode, WScale wscale) {
  const unsigned char *a = codes + m * K;
  const float *as = scales + m * (K / 32);
  float acc = 0.0f;
  for (long long j = 0; j < K / 32; ++j) {
    float partial = 0.0f;
    for (long long k = j * 32; k < j * 32 + 32; ++k)
      partial = __fadd_rn(partial, __fmul_rn(e4m3ToFloat(a[k]), wcode(k)));
    acc = __fadd_rn(acc, __fmul_rn(__fmul_rn(partial, as[j]), wscale(j)));
  }
  return acc;
}

/// FP8 weight [N, K] E4M3, scales UE8M0 [ceil(N/32), K/32].
__device__ float fp8Out(const unsigned char *codes, const float *scales, long long m, long long K,
                        const unsigned char *w, const unsigned char *wScale, long long n) {
  const unsigned char *row = w + n * K;
  const unsigned char *srow = wScale + (n / 32) * (K / 32);
  return blockDot(
      codes, scales, m, K, [&](long long k) { return e4m3ToFloat(row[k]); },
      [&](long long j) { return ue8m0ToFloat(srow[j]); });
}

/// FP4 weight packed [N, K/2] (even k low nibble), scales UE8M0 [N, K/32].
__device__ float fp4Out(const unsigned char *codes, const float *scales, long long m, long long K,
                        const unsigned char *w, const unsigned char *wScale, long long n) {
  const unsigned char *row = w + n * (K / 2);
  const unsigned char *srow = wScale + n * (K / 32);
  return blockDot(
      codes, scales, m, K, [&](long long k) { return e2m1ToFloat(fp4CodeAt(row, k)); },
      [&](long long j) { return ue8m0ToFloat(srow[j]); });
}

} // namespace dsc_dense_gemm

DSC_KERNEL void dsc_linear_act_quant(const unsigned short *x, long long M, long long K,
                                     unsigned char *codes, float *scales) {
  dsc_dense_gemm::actQuant(x, M, K, codes, scales);
}

DSC_KERNEL void dsc_linear_fp8(const unsigned char *codes, const float *scales, long long M,
                               long long K, const unsigned char *w, const unsigned char *wScale,
                               long long N, unsigned short *y) {
  const long long n = M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long m = i / N, c = i - m * N;
    y[i] = bf16FromFloat(dsc_dense_gemm::fp8Out(codes, scales, m, K, w, wScale, c));
  }
}

DSC_KERNEL void dsc_linear_fp4(const unsigned char *codes, const float *scales, long long M,
                               long long K, const unsigned char *w, const unsigned char *wScale,
                               long long N, unsigned short *y) {
  const long long n = M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long m = i / N, c = i - m * N;
    y[i] = bf16FromFloat(dsc_dense_gemm::fp4Out(codes, scales, m, K, w, wScale, c));
  }
}

DSC_KERNEL void dsc_linear_bf16(const unsigned short *x, long long M, long long K,
                                const unsigned short *w, long long N, unsigned short *y) {
  const long long n = M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long m = i / N, c = i - m * N;
    const unsigned short *xr = x + m * K, *wr = w + c * K;
    const double v = dsc_dense_d64::dotF64(
        K, [&](long long k) { return bf16ToFloat(xr[k]); },
        [&](long long k) { return bf16ToFloat(wr[k]); });
    y[i] = bf16FromFloat((float)v);
  }
}
