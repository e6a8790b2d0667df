//===- compress_kv.cu - Compressed KV records (kernel `compress_kv`) ------===//
//
// CPU: compressKvWrite (runtime/cpu/kernels/attention/Compressor.cpp).
// dsc_compress_kv: one thread per (latent i, tile b) of latents bf16 [n, Dh]
// (n = emitted entries, j0 = start / ratio from the call state; ratio =
// p.ratio, ropeDim = p.rope.dim of p, dsc::abi::CompressKvParams, the first
// argument; invFreq: numerics::ropeInvFreq of p.rope, from the adapter):
// RoPE (bf16 results) on the channels of the tile inside the rope tail at
// position (j0 + i) * ratio, then the tile is quantised into record j0 + i
// of the main-KV pool (mainKvFormat: E2M1 + E4M3 scale per 16).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

DSC_KERNEL void dsc_compress_kv(const __grid_constant__ dsc::abi::CompressKvParams p,
                                const unsigned short *latents, const long long *callState,
                                long long headDim, const float *invFreq, unsigned char *pool,
                                int values, int tile, int valueType, int scaleType,
                                int tokensPerPage, int order) {
  DSC_KERNEL_PROLOGUE();
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  ropeQuantizeTile(latents, headDim, p.ratio, p.rope.dim, invFreq, l, pool, callState,
                   (long long)blockIdx.x * blockDim.x + threadIdx.x);
}
