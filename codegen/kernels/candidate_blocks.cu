//===- candidate_blocks.cu - Level-one candidate blocks (`candidate_blocks`) ===//
//
// CPU: numerics::selectCandidateBlocks per row (numerics/lib/SparseSelect.cpp).
// Both entries take p (dsc::abi::CandidateBlocksParams) first: topkBlocks =
// p.blocks, blockSize = p.block_size, ratio = p.ratio (of the scores).
// dsc_candidate_blocks: one thread per query row s (serial, simple):
//   block score = max of its positions (NaN propagates: amax), padded
//   positions count as -inf; block (compress_len-1)//blockSize pinned to
//   +inf; the top min(topkBlocks, nblocks) blocks by repeated selection
//   under numerics' order (NaN first, larger score, lower index on ties);
//   picks whose value > -inf are the row's candidate blocks, written as their
//   ids in ascending order, -1 padded: ids i32 [S, topkBlocks]
//   (numerics::selectCandidateBlockIds).
// Scratch: blockVals f32 [S, nblocks], picked u8 [S, nblocks]. Serial per
// row (O(nblocks x blocks)): the reference; the adapter runs
// dsc_candidate_blocks_radix (below), O(T) per row and no scratch, unless
// --cuda-topk quadratic (CudaOptions::quadraticTopk).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

DSC_KERNEL void dsc_candidate_blocks(const __grid_constant__ dsc::abi::CandidateBlocksParams p,
                                     const unsigned short *scores, long long S,
                                     const long long *callState, float *blockVals,
                                     unsigned char *picked, int *ids) {
  DSC_KERNEL_PROLOGUE();
  const long long ratio = p.ratio, topkBlocks = p.blocks, blockSize = p.block_size;
  const long long startPos = DSC_CALL_START(callState);
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio);
  const long long s = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= S)
    return;
  int *out = ids + s * topkBlocks;
  for (long long b = 0; b < topkBlocks; ++b)
    out[b] = -1;
  if (width <= 0 || blockSize <= 0)
    return;
  const long long nblocks = (width + blockSize - 1) / blockSize;
  float *block = blockVals + s * nblocks;
  unsigned char *used = picked + s * nblocks;
  for (long long b = 0; b < nblocks; ++b) {
    block[b] = negInf();
    used[b] = 0;
  }
  const unsigned short *row = scores + s * width;
  for (long long j = 0; j < width; ++j) {
    const float v = bf16ToFloat(row[j]);
    float &b = block[j / blockSize];
    if (isNaN(v) || v > b)
      b = isNaN(b) ? b : v;
  }
  const long long cl = compressLen(startPos, s, ratio);
  if (cl > 0) {
    const long long last = (cl - 1) / blockSize;
    if (last < nblocks)
      block[last] = __int_as_float(0x7f800000);
  }
  long long k = topkBlocks < nblocks ? topkBlocks : nblocks;
  if (k < 0)
    k = 0;
  for (long long pick = 0; pick < k; ++pick) {
    long long best = -1;
    for (long long b = 0; b < nblocks; ++b)
      if (!used[b] && (best < 0 || ranksBefore(block[b], b, block[best], best)))
        best = b;
    used[best] = block[best] > negInf() ? 1 : 2; // 2: picked but all -inf (dropped)
  }
  long long n = 0;
  for (long long b = 0; b < nblocks; ++b)
    if (used[b] == 1)
      out[n++] = static_cast<int>(b);
}

/// Block max of block b of a row (positions past width count as -inf; NaN
/// propagates), the newest visible block pinned to +inf: selectCandidateBlockIds.
__device__ __forceinline__ float candidateBlockValue(const unsigned short *row, long long width,
                                                     long long blockSize, long long pinned,
                                                     long long b) {
  if (b == pinned)
    return __int_as_float(0x7f800000);
  float m = negInf();
  const long long end = (b + 1) * blockSize < width ? (b + 1) * blockSize : width;
  for (long long j = b * blockSize; j < end; ++j) {
    const float v = bf16ToFloat(row[j]);
    if (isNaN(v) || v > m)
      m = isNaN(m) ? m : v;
  }
  return m;
}

/// dsc_candidate_blocks_radix: one block per row (dsc::abi::kSelectThreads
/// threads), the same ids in O(T): block values are bf16 values or +-inf or
/// NaN, so select.cuh selectTop16Ascending picks the min(topkBlocks,
/// nblocks) best by 16-bit keys (each thread a contiguous chunk of blocks)
/// and writes those whose value > -inf (neither NaN nor -inf) in
/// ascending order (the ids), -1 after them. Bound: ~4 reads of the row's
/// scores from L2.
DSC_KERNEL void __launch_bounds__(dsc::abi::kSelectThreads) dsc_candidate_blocks_radix(
    const __grid_constant__ dsc::abi::CandidateBlocksParams p, const unsigned short *scores,
    long long S, const long long *callState, int *ids) {
  DSC_KERNEL_PROLOGUE();
  const long long ratio = p.ratio, topkBlocks = p.blocks, blockSize = p.block_size;
  const long long startPos = DSC_CALL_START(callState);
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio);
  const long long s = blockIdx.x;
  if (s >= S)
    return;
  int *out = ids + s * topkBlocks;
  for (long long b = threadIdx.x; b < topkBlocks; b += blockDim.x)
    out[b] = -1;
  if (width <= 0 || blockSize <= 0)
    return;
  const long long nblocks = (width + blockSize - 1) / blockSize;
  const long long k = topkBlocks < nblocks ? topkBlocks : nblocks;
  if (k <= 0)
    return;
  const unsigned short *row = scores + s * width;
  const long long cl = compressLen(startPos, s, ratio);
  const long long pinned = cl > 0 && (cl - 1) / blockSize < nblocks ? (cl - 1) / blockSize : -1;
  auto chunk = [&](long long a, long long b, auto &&f) {
    for (long long blk = a; blk < b; ++blk)
      f(blk, rankKey16(candidateBlockValue(row, width, blockSize, pinned, blk)));
  };
  __syncthreads(); // the -1 fill before the selection's writes
  // Picks whose value is NaN or -inf are dropped (value > -inf fails).
  const unsigned minusInf = rankKey16(negInf()), nan = 0xffffu;
  selectTop16Ascending(
      nblocks, k, chunk, [&](unsigned key) { return key != minusInf && key != nan; },
      [&](long long b, long long slot) { out[slot] = static_cast<int>(b); });
}
