//===- grouped_output.cu - Grouped attention output projection (§9.8) -----===//
//
// Three steps (GroupedOutput.cpp):
//   dsc_grouped_output_woa: z[s, g*R + r] = bf16(fp32(dotF64(o[s, g, :],
//     wo_a[g*R + r, :]))), one thread per (s, g, r) (linearBf16's rule);
//     G = p.groups (dsc::abi::GroupedOutputParams, its first argument);
//   dsc_grouped_output_act_quant: act_quant of z (one thread per 32 block);
//   dsc_grouped_output_fp8: y = wo_b(z), FP8 block-scaled GEMM, one thread
//     per output, one bf16 RNE (linearFp8's order).
// These are the CPU-order kernels (CudaOptions::cpuOrderFamilies). The
// default, fast entries (gemv.cuh):
//   dsc_grouped_output_woa_fast: one warp per wo_a row g*R + r, fp32
//     accumulation of the bf16 dot with o[s, g, :];
//   dsc_grouped_output_fp8_fast: wo_b as dsc_linear_fp8_fast (z act_quant'ed
//     in shared memory when zq is given, else by
//     dsc_grouped_output_act_quant_fast into global scratch).
// Bound: wo_a (2*G*R*Din bytes) and wo_b (D*G*R + scales) at bandwidth.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemm.cuh"
#include "codegen/kernels/gemv.cuh"
#include "codegen/kernels/lane_gemv.cuh"
#include "codegen/kernels/row_gemv.cuh"
#include "codegen/kernels/slot_gemv.cuh"
#include "codegen/kernels/wg_gemv.cuh"
#include "codegen/kernels/reduce.cuh"

DSC_KERNEL void
dsc_grouped_output_woa(const __grid_constant__ dsc::abi::GroupedOutputParams p,
                       const unsigned short *o, long long S, long long Din,
                       const unsigned short *woA, long long R,
                       unsigned short *z) {
  DSC_KERNEL_PROLOGUE();
  const long long G = p.groups;
  const long long n = S * G * R;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long s = i / (G * R), gr = i - s * G * R, g = gr / R;
    const unsigned short *orow = o + s * G * Din + g * Din,
                         *wrow = woA + gr * Din;
    const double v = dsc_dense_d64::dotF64(
        Din, [&](long long k) { return bf16ToFloat(orow[k]); },
        [&](long long k) { return bf16ToFloat(wrow[k]); });
    z[i] = bf16FromFloat((float)v);
  }
}

DSC_KERNEL void dsc_grouped_output_act_quant(const unsigned short *z,
                                             long long M, long long K,
                                             unsigned char *codes,
                                             float *scales) {
  DSC_KERNEL_PROLOGUE();
  dsc_dense_gemm::actQuant(z, M, K, codes, scales);
}

DSC_KERNEL void dsc_grouped_output_fp8(const unsigned char *codes,
                                       const float *scales, long long M,
                                       long long K, const unsigned char *w,
                                       const unsigned char *wScale, long long N,
                                       unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_dense_gemm::storeBf16Outputs(M, N, y, [&](long long m, long long c) {
    return dsc_dense_gemm::fp8Out(codes, scales, m, K, w, wScale, c);
  });
}

DSC_KERNEL void dsc_grouped_output_woa_fast(
    const __grid_constant__ dsc::abi::GroupedOutputParams p,
    const unsigned short *o, long long S, long long Din,
    const unsigned short *woA, long long R, unsigned short *z) {
  DSC_KERNEL_PROLOGUE();
  const long long G = p.groups, K = G * R;
  // Output row gr of group gr / R reads that group's slice of o.
  dsc_gemv::bf16RowGemv(
      K, S, Din, G * Din, [&](long long gr) { return woA + gr * Din; },
      [&](long long gr) { return o + (gr / R) * Din; },
      [&](long long s, long long gr, float v) { z[s * K + gr] = bf16FromFloat(v); });
}

DSC_GEMV_ACT_QUANT_ENTRY(dsc_grouped_output_act_quant_fast)

DSC_GEMV_QUANTIZED_ENTRY(dsc_grouped_output_fp8_fast, fp8Gemv)
DSC_LANE_GEMV_ENTRY(dsc_grouped_output_fp8_lanes, false)
DSC_ROW_GEMV_ENTRY(dsc_grouped_output_fp8_rows, false)
DSC_SLOT_GEMV_ENTRY(dsc_grouped_output_fp8_slots, false)
DSC_WG_GEMV_ENTRY(dsc_grouped_output_fp8_wg, false)

DSC_GEMV_SPLITK_REDUCE_ENTRY(dsc_grouped_output_splitk_reduce_fast)
