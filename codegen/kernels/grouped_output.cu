//===- grouped_output.cu - Grouped attention output projection (§9.8) -----===//
//
// Three steps (GroupedOutput.cpp):
//   dsc_grouped_output_woa: z[s, g*R + r] = bf16(fp32(dotF64(o[s, g, :],
//     wo_a[g*R + r, :]))), one thread per (s, g, r) (linearBf16's rule);
//     G = p.groups (dsc::abi::GroupedOutputParams, its first argument);
//   dsc_grouped_output_act_quant: act_quant of z (one thread per 32 block);
//   dsc_grouped_output_fp8: y = wo_b(z), FP8 block-scaled GEMM, one thread
//     per output, one bf16 RNE (linearFp8's order).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"
#include "codegen/kernels/gemm.cuh"

DSC_KERNEL void dsc_grouped_output_woa(const __grid_constant__ dsc::abi::GroupedOutputParams p,
                                       const unsigned short *o, long long S, long long Din,
                                       const unsigned short *woA, long long R, unsigned short *z) {
  const long long G = p.groups;
  const long long n = S * G * R;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / (G * R), gr = i - s * G * R, g = gr / R;
    const unsigned short *orow = o + s * G * Din + g * Din, *wrow = woA + gr * Din;
    const double v = dsc_dense_d64::dotF64(
        Din, [&](long long k) { return bf16ToFloat(orow[k]); },
        [&](long long k) { return bf16ToFloat(wrow[k]); });
    z[i] = bf16FromFloat((float)v);
  }
}

DSC_KERNEL void dsc_grouped_output_act_quant(const unsigned short *z, long long M, long long K,
                                             unsigned char *codes, float *scales) {
  dsc_dense_gemm::actQuant(z, M, K, codes, scales);
}

DSC_KERNEL void dsc_grouped_output_fp8(const unsigned char *codes, const float *scales,
                                       long long M, long long K, const unsigned char *w,
                                       const unsigned char *wScale, long long N,
                                       unsigned short *y) {
  dsc_dense_gemm::storeBf16Outputs(M, N, y, [&](long long m, long long c) {
    return dsc_dense_gemm::fp8Out(codes, scales, m, K, w, wScale, c);
  });
}
