//===- indexer_topk.cu - Indexer top-k (kernel `indexer_topk`) -------------===//
//
// CPU: indexMaskCandidates + numerics::indexerTopK per row.
//   dsc_indexer_topk_select: one thread per (row s, position j): the score
//     (-inf outside the row's candidate blocks, ids [S, blocks] ascending and
//     -1 padded, when given) is ranked against
//     the whole row under numerics' order (NaN first, larger score, lower
//     index on ties: a strict total order, so exactly `used` positions have
//     rank < used -- the same set as the CPU's partial_sort); selected u8.
//   dsc_indexer_topk_emit: one thread per (row s, column c): a selected
//     position c goes to column #{selected j < c} (ascending order) as
//     c + offset if c < compress_len(s), else -1; columns in [used, k) get -1.
// Scratch: selected u8 [S, width]. O(width^2) per row: simple, not fast.
//   dsc_indexer_topk_radix: one block per row, the same set in O(width):
//     each position gets a distinct 64-bit key that orders exactly like
//     ranksBefore (NaN highest; the float's order-preserving bits with -0 as
//     +0; then the complement of the index, so the lower index wins a tie);
//     an 8-pass radix select (8 bits a pass, block histograms) finds the
//     used-th largest key, positions whose key is at least that one are the
//     selection, and a block scan writes them in ascending position order.
//     The adapter uses it; the select/emit pair stays as the simple
//     reference (DSC_CUDA_TOPK_QUADRATIC=1 runs it, for comparisons).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

/// Whether position j lies in one of the row's candidate blocks: ids
/// ascending then -1 (binary searches: the valid prefix, then the block).
__device__ __forceinline__ bool inCandidateBlock(const int *ids, long long blocks,
                                                 long long blockSize, long long j) {
  long long lo = 0, hi = blocks; // ids[0, n) >= 0
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (ids[mid] >= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  const long long want = j / blockSize;
  long long a = 0, b = lo;
  while (a < b) {
    const long long mid = (a + b) / 2;
    if (ids[mid] < want)
      a = mid + 1;
    else
      b = mid;
  }
  return a < lo && ids[a] == want;
}

__device__ __forceinline__ float topkScore(const unsigned short *row, const int *cand,
                                           long long blocks, long long blockSize, long long j) {
  return cand && !inCandidateBlock(cand, blocks, blockSize, j) ? negInf() : bf16ToFloat(row[j]);
}

DSC_KERNEL void dsc_indexer_topk_select(const unsigned short *scores, const int *candidates,
                                        long long blocks, long long blockSize, long long S,
                                        const long long *callState, long long ratio,
                                        long long k, unsigned char *selected) {
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio);
  const long long used = k < width ? k : width;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * width)
    return;
  const long long s = i / width, j = i % width;
  const unsigned short *row = scores + s * width;
  const int *cand = candidates ? candidates + s * blocks : nullptr;
  const float v = topkScore(row, cand, blocks, blockSize, j);
  long long rank = 0;
  for (long long t = 0; t < width && rank < used; ++t)
    if (t != j && ranksBefore(topkScore(row, cand, blocks, blockSize, t), t, v, j))
      ++rank;
  selected[i] = rank < used ? 1 : 0;
}

DSC_KERNEL void dsc_indexer_topk_emit(const unsigned char *selected, long long S,
                                      const long long *callState, long long k, long long ratio,
                                      long long offset, int *topk) {
  const long long startPos = DSC_CALL_START(callState);
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio);
  const long long used = k < width ? k : width;
  const long long cols = width > k ? width : k;
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * cols)
    return;
  const long long s = i / cols, c = i % cols;
  if (c < k && c >= used)
    topk[s * k + c] = -1;
  if (c >= width || !selected[s * width + c])
    return;
  const unsigned char *sel = selected + s * width;
  long long pos = 0;
  for (long long t = 0; t < c; ++t)
    pos += sel[t];
  if (pos < k)
    topk[s * k + pos] = c < compressLen(startPos, s, ratio) ? static_cast<int>(c + offset) : -1;
}

/// The 64-bit rank key of position j (larger = ranks before).
__device__ __forceinline__ unsigned long long topkKey(const unsigned short *row, const int *cand,
                                                      long long blocks, long long blockSize,
                                                      long long j) {
  const float v = topkScore(row, cand, blocks, blockSize, j);
  unsigned int key;
  if (isNaN(v)) {
    key = 0xffffffffu;
  } else {
    const unsigned int u = __float_as_uint(v == 0.0f ? 0.0f : v);
    key = (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
  return (static_cast<unsigned long long>(key) << 32) |
         static_cast<unsigned long long>(0xffffffffu - static_cast<unsigned int>(j));
}

#define DSC_TOPK_THREADS 256

DSC_KERNEL void dsc_indexer_topk_radix(const unsigned short *scores, const int *candidates,
                                       long long blocks, long long blockSize, long long S,
                                       const long long *callState, long long ratio, long long k,
                                       long long offset, int *topk) {
  const long long startPos = DSC_CALL_START(callState);
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio);
  const long long used = k < width ? k : width;
  const long long s = blockIdx.x;
  if (s >= S)
    return;
  const unsigned short *row = scores + s * width;
  const int *cand = candidates ? candidates + s * blocks : nullptr;
  int *out = topk + s * k;
  __shared__ unsigned int hist[256];
  __shared__ unsigned long long prefixShared;
  __shared__ long long remainingShared;
  __shared__ long long scan[DSC_TOPK_THREADS];
  for (long long c = threadIdx.x; c < k; c += blockDim.x)
    out[c] = -1;
  if (used <= 0)
    return;
  // Radix select of the used-th largest key, most significant digit first.
  unsigned long long prefix = 0, mask = 0;
  long long remaining = used; // rank of the wanted key among those matching prefix
  for (int shift = 56; shift >= 0; shift -= 8) {
    for (int b = threadIdx.x; b < 256; b += blockDim.x)
      hist[b] = 0;
    __syncthreads();
    for (long long j = threadIdx.x; j < width; j += blockDim.x) {
      const unsigned long long key = topkKey(row, cand, blocks, blockSize, j);
      if ((key & mask) == prefix)
        atomicAdd(&hist[(key >> shift) & 0xff], 1u);
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      long long r = remaining;
      int digit = 255;
      for (; digit > 0; --digit) {
        if (r <= (long long)hist[digit])
          break;
        r -= hist[digit];
      }
      prefixShared = prefix | (static_cast<unsigned long long>(digit) << shift);
      remainingShared = r;
    }
    __syncthreads();
    prefix = prefixShared;
    remaining = remainingShared;
    mask |= 0xffull << shift;
    __syncthreads();
  }
  const unsigned long long threshold = prefix; // the used-th largest key
  // Ascending compaction of the selected positions.
  long long base = 0;
  for (long long j0 = 0; j0 < width; j0 += blockDim.x) {
    const long long j = j0 + threadIdx.x;
    const long long flag =
        j < width && topkKey(row, cand, blocks, blockSize, j) >= threshold ? 1 : 0;
    scan[threadIdx.x] = flag;
    __syncthreads();
    for (unsigned int step = 1; step < blockDim.x; step <<= 1) { // inclusive scan
      const long long add = threadIdx.x >= step ? scan[threadIdx.x - step] : 0;
      __syncthreads();
      scan[threadIdx.x] += add;
      __syncthreads();
    }
    if (flag) {
      const long long pos = base + scan[threadIdx.x] - 1;
      if (pos < k)
        out[pos] = j < compressLen(startPos, s, ratio) ? static_cast<int>(j + offset) : -1;
    }
    base += scan[blockDim.x - 1];
    __syncthreads();
  }
}
