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
// The entries above are the CPU-order kernels (CudaOptions::cpuOrderFamilies).
// The default, fast entries (gemv.cuh: one warp per output row, 16-byte
// weight loads, a fixed but different summation order):
//   dsc_linear_fp8_fast / dsc_linear_fp4_fast: x != null: the block
//     act_quants x [M, K] into dynamic shared memory (quantBytes(M, K))
//     first; x == null: codes/scales come from dsc_linear_act_quant_fast
//     (global scratch, for M*K too large for shared memory);
//   dsc_linear_act_quant_fast: one warp per 32-K block, grid-strided;
//   dsc_linear_bf16_fast: fp32 accumulation, one bf16 rounding.
// Bound: the weight bytes (N*K, N*K/2 + scales, 2*N*K) at memory bandwidth.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemm.cuh"
#include "codegen/kernels/gemv.cuh"
#include "codegen/kernels/lane_gemv.cuh"
#include "codegen/kernels/row_gemv.cuh"
#include "codegen/kernels/slot_gemv.cuh"
#include "codegen/kernels/wg_gemv.cuh"
#include "codegen/kernels/reduce.cuh"

DSC_KERNEL void dsc_linear_act_quant(const unsigned short *x, long long M,
                                     long long K, unsigned char *codes,
                                     float *scales) {
  DSC_KERNEL_PROLOGUE();
  dsc_dense_gemm::actQuant(x, M, K, codes, scales);
}

DSC_KERNEL void dsc_linear_fp8(const unsigned char *codes, const float *scales,
                               long long M, long long K, const unsigned char *w,
                               const unsigned char *wScale, long long N,
                               unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_dense_gemm::storeBf16Outputs(M, N, y, [&](long long m, long long c) {
    return dsc_dense_gemm::fp8Out(codes, scales, m, K, w, wScale, c);
  });
}

DSC_KERNEL void dsc_linear_fp4(const unsigned char *codes, const float *scales,
                               long long M, long long K, const unsigned char *w,
                               const unsigned char *wScale, long long N,
                               unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_dense_gemm::storeBf16Outputs(M, N, y, [&](long long m, long long c) {
    return dsc_dense_gemm::fp4Out(codes, scales, m, K, w, wScale, c);
  });
}

DSC_KERNEL void dsc_linear_bf16(const unsigned short *x, long long M,
                                long long K, const unsigned short *w,
                                long long N, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
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

//===----------------------------------------------------------------------===//
// Fast entries (gemv.cuh)
//===----------------------------------------------------------------------===//

DSC_GEMV_ACT_QUANT_ENTRY(dsc_linear_act_quant_fast)

DSC_GEMV_QUANTIZED_ENTRY(dsc_linear_fp8_fast, fp8Gemv)
DSC_LANE_GEMV_ENTRY(dsc_linear_fp8_lanes, false)
DSC_SLOT_GEMV_ENTRY(dsc_linear_fp8_slots, false)
DSC_WG_GEMV_ENTRY(dsc_linear_fp8_wg, false)
DSC_ROW_GEMV_ENTRY(dsc_linear_fp8_rows, false)

DSC_GEMV_QUANTIZED_ENTRY(dsc_linear_fp4_fast, fp4Gemv)
DSC_LANE_GEMV_ENTRY(dsc_linear_fp4_lanes, true)
DSC_SLOT_GEMV_ENTRY(dsc_linear_fp4_slots, true)
DSC_WG_GEMV_ENTRY(dsc_linear_fp4_wg, true)
DSC_ROW_GEMV_ENTRY(dsc_linear_fp4_rows, true)

DSC_KERNEL void dsc_linear_bf16_fast(const unsigned short *x, long long M,
                                     long long K, const unsigned short *w,
                                     long long N, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  dsc_gemv::bf16Gemv<dsc_gemv::kFewRowLoads>(x, K, M, K, w, N, y);
}

DSC_GEMV_SPLITK_REDUCE_ENTRY(dsc_linear_splitk_reduce_fast)
