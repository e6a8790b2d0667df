//===- gemm.cuh - Block-scaled FP8/FP4 GEMM rows for kernel templates -----===//
//
// act_quant (bf16 activations -> E4M3 codes + UE8M0 scales per 32-K block)
// and the per-output block-scaled dot products of the FP8 and FP4 weight
// formats, shared by linear.cu, grouped_output.cu and moe_experts.cu so that
// all three round exactly as the CPU reference does. Mirrors
// runtime/cpu/kernels/dense/Linear.cpp (quantizeActivations,
// blockScaledLinear behind linearFp8 / linearFp4) and numerics'
// quantizeFp8Block (dsc/numerics/Quantize.h).
// Include after common.cuh:
//
//   #include "codegen/kernels/common.cuh"
//   #include "codegen/kernels/gemm.cuh"
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_GEMM_CUH
#define DSC_CODEGEN_KERNELS_GEMM_CUH

#include "codegen/kernels/common.cuh"

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

/// y[m, n] = bf16(out(m, n)) for the M x N outputs: one grid-strided thread
/// per output (the first-cut GEMMs' layout; one bf16 rounding each).
template <typename Out>
__device__ void storeBf16Outputs(long long M, long long N, unsigned short *y, Out out) {
  const long long total = M * N;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < total;
       i += (long long)gridDim.x * blockDim.x) {
    const long long m = i / N, c = i - m * N;
    y[i] = bf16FromFloat(out(m, c));
  }
}

} // namespace dsc_dense_gemm

#endif // DSC_CODEGEN_KERNELS_GEMM_CUH
