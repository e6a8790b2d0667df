//===- compressor.cu - KV compressor (kernel `compressor`) -----------------===//
//
// CPU: runtime/cpu/kernels/attention/Compressor.cpp (compressorForward).
// Every step but dsc_compressor_linear takes p (dsc::abi::CompressorParams)
// as its first argument: r = ratio = p.ratio, eps = (float)p.eps.
// Steps (launched in this order by the adapter):
//   dsc_compressor_linear: one thread per (token s, output n): dense linear
//     x bf16 [S, dim] . w bf16 [N, dim]^T with the CPU's dotF64 order (four
//     double partial sums), then fp32 (linearF32, outF32) or bf16 of that
//     fp32 (linearBf16, outBf16; ratio 1).
//   dsc_compressor_state: one thread per (row i, channel c): copies kv/score
//     rows [rowFrom + i] into state slots slot0 + i, slot0 = start % r from
//     the call state (state f32 [2, r, d]: kv then score).
//   dsc_compressor_pool: one thread per (group j, channel c): per-channel
//     softmax over the r rows of score (max, expf(s - m), sequential sum,
//     e / sum) and sum_i kv_i * w_i in fp32 (index order), then bf16.
//   dsc_compressor_norm: one block per row: dense rmsNorm (torch's fp32 sum
//     order for mean(x^2), summed by the block: rmsNormRowFast, bit for bit
//     the CPU's), bf16.
//   dsc_compressor_pool_groups / dsc_compressor_state_at: the same pooling
//     for an explicit group count and state writes at an explicit slot, for
//     a continuation chunk of a chunked prefill (the adapter splits its rows
//     into the group an earlier call opened, whole groups and an open tail).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"
#include "codegen/kernels/gemv.cuh"

DSC_KERNEL void dsc_compressor_linear(const unsigned short *x, const unsigned short *w,
                                      long long S, long long dim, long long N, float *outF32,
                                      unsigned short *outBf16) {
  DSC_KERNEL_PROLOGUE();
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * N)
    return;
  const long long s = i / N, n = i % N;
  const float v = __double2float_rn(dotF64Bf16(x + s * dim, w + n * dim, dim));
  if (outF32)
    outF32[i] = v;
  else
    outBf16[i] = bf16FromFloat(v);
}

DSC_KERNEL void dsc_compressor_linear_fast(const unsigned short *x, const unsigned short *w,
                                           long long S, long long dim, long long N, float *outF32,
                                           unsigned short *outBf16) {
  DSC_KERNEL_PROLOGUE();
  dsc_gemv::bf16RowGemv<dsc_gemv::kFewRowLoads>(
      N, S, dim, dim, [&](long long n) { return w + n * dim; }, [&](long long) { return x; },
      [&](long long s, long long n, float v) {
        if (outF32)
          outF32[s * N + n] = v;
        else
          outBf16[s * N + n] = bf16FromFloat(v);
      });
}

/// Thread i of a state write: row rowFrom + i / d, channel i % d, into state
/// slot slot0 + i / d (kv half, then score half).
__device__ __forceinline__ void compressorStateWrite(const float *kv, const float *score,
                                                     long long rowFrom, long long count,
                                                     long long slot0, long long ratio,
                                                     long long d, float *state) {
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count * d)
    return;
  const long long r = i / d, c = i % d;
  state[(slot0 + r) * d + c] = kv[(rowFrom + r) * d + c];
  state[ratio * d + (slot0 + r) * d + c] = score[(rowFrom + r) * d + c];
}

DSC_KERNEL void dsc_compressor_state(const __grid_constant__ dsc::abi::CompressorParams p,
                                     const float *kv, const float *score, long long rowFrom,
                                     long long count, const long long *callState, long long d,
                                     float *state) {
  DSC_KERNEL_PROLOGUE();
  // slot0 = start % r from the call state: 0 in prefill, the token's slot in decode.
  const long long ratio = p.ratio;
  compressorStateWrite(kv, score, rowFrom, count, DSC_CALL_START(callState) % ratio, ratio, d,
                       state);
}

/// Pools channel c of group j: rows j*r .. j*r+r-1 of kv / score [., d].
__device__ __forceinline__ unsigned short compressorPoolAt(const float *kv, const float *score,
                                                           long long j, long long c,
                                                           long long ratio, long long d) {
  const float *kvg = kv + j * ratio * d;
  const float *sg = score + j * ratio * d;
  float m = sg[c];
  for (long long r = 1; r < ratio; ++r) {
    const float v = sg[r * d + c];
    m = m < v ? v : m; // std::max(m, v)
  }
  float e[16];
  float sum = 0.0f;
  for (long long r = 0; r < ratio; ++r) {
    e[r] = expf(__fsub_rn(sg[r * d + c], m));
    sum = __fadd_rn(sum, e[r]);
  }
  float acc = 0.0f;
  for (long long r = 0; r < ratio; ++r)
    acc = __fadd_rn(acc, __fmul_rn(kvg[r * d + c], __fdiv_rn(e[r], sum)));
  return bf16FromFloat(acc);
}

DSC_KERNEL void dsc_compressor_pool(const __grid_constant__ dsc::abi::CompressorParams p,
                                    const float *kv, const float *score,
                                    const long long *callState, long long d,
                                    unsigned short *pooled) {
  DSC_KERNEL_PROLOGUE();
  const long long ratio = p.ratio;
  const long long n = DSC_CALL_COMPRESSED_TOKENS(callState, ratio); // groups emitted
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n * d || ratio > 16)
    return;
  pooled[i] = compressorPoolAt(kv, score, i / d, i % d, ratio, d);
}

DSC_KERNEL void dsc_compressor_pool_groups(const __grid_constant__ dsc::abi::CompressorParams p,
                                           const float *kv, const float *score, long long groups,
                                           long long d, unsigned short *pooled) {
  DSC_KERNEL_PROLOGUE();
  const long long ratio = p.ratio;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= groups * d || ratio > 16)
    return;
  pooled[i] = compressorPoolAt(kv, score, i / d, i % d, ratio, d);
}

DSC_KERNEL void dsc_compressor_state_at(const __grid_constant__ dsc::abi::CompressorParams p,
                                        const float *kv, const float *score, long long rowFrom,
                                        long long count, long long slot0, long long d,
                                        float *state) {
  DSC_KERNEL_PROLOGUE();
  compressorStateWrite(kv, score, rowFrom, count, slot0, p.ratio, d, state);
}

DSC_KERNEL void dsc_compressor_norm(const __grid_constant__ dsc::abi::CompressorParams p,
                                    const unsigned short *x, const long long *callState,
                                    long long d, const unsigned short *w, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  const long long ratio = p.ratio;
  const float eps = (float)p.eps;
  const long long rows = DSC_CALL_COMPRESSED_TOKENS(callState, ratio); // latents emitted
  for (long long r = blockIdx.x; r < rows; r += gridDim.x) {
    const unsigned short *xr = x + r * d;
    dsc_dense_ts::rmsNormRowFast(d, eps, [&](long long i) { return bf16ToFloat(xr[i]); }, w,
                                 y + r * d);
  }
}
