//===- indexer_topk.cu - Indexer top-k (kernel `indexer_topk`) -------------===//
//
// CPU: indexMaskCandidates + numerics::indexerTopK per row. Every entry takes
// p (dsc::abi::IndexerTopKParams) first: k = p.topk, ratio = p.ratio (of the
// scores), blockSize = p.block_size (read only with candidate ids).
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
//   dsc_indexer_topk_radix: one block per row (dsc::abi::
//     kSelectThreads threads), the same set in O(width): scores are bf16, so a 16-bit key
//     (select.cuh rankKey16: NaN highest, -0 as +0, non-candidates -inf)
//     orders them as ranksBefore does and the lower position breaks ties;
//     selectTop16Ascending finds the used-th key in two byte sweeps and
//     writes the selection in ascending position order in a third. Each
//     thread owns a contiguous chunk of positions and walks the row's
//     ascending candidate ids along it (one binary search per chunk, not per
//     position). Bound: ~4 reads of the row from L2 (width x 2 bytes) and
//     two block barriers per sweep; the reference above is O(width^2).
//     The adapter uses it; the select/emit pair stays as the simple
//     reference (--cuda-topk quadratic runs it, for comparisons).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

/// The number of valid (>= 0) ids of a row's candidate list (ascending, then -1).
__device__ __forceinline__ long long validCandidates(const int *ids, long long blocks) {
  long long lo = 0, hi = blocks;
  while (lo < hi) {
    const long long mid = (lo + hi) / 2;
    if (ids[mid] >= 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/// The first index in ids[0, n) (ascending) whose id is >= value (n if none).
__device__ __forceinline__ long long lowerBound(const int *ids, long long n, long long value) {
  long long a = 0, b = n;
  while (a < b) {
    const long long mid = (a + b) / 2;
    if (ids[mid] < value)
      a = mid + 1;
    else
      b = mid;
  }
  return a;
}

/// Whether position j lies in one of the row's candidate blocks: ids
/// ascending then -1 (binary searches: the valid prefix, then the block).
__device__ __forceinline__ bool inCandidateBlock(const int *ids, long long blocks,
                                                 long long blockSize, long long j) {
  const long long lo = validCandidates(ids, blocks); // ids[0, lo) >= 0
  const long long want = j / blockSize, a = lowerBound(ids, lo, want);
  return a < lo && ids[a] == want;
}

__device__ __forceinline__ float topkScore(const unsigned short *row, const int *cand,
                                           long long blocks, long long blockSize, long long j) {
  return cand && !inCandidateBlock(cand, blocks, blockSize, j) ? negInf() : bf16ToFloat(row[j]);
}

DSC_KERNEL void dsc_indexer_topk_select(const __grid_constant__ dsc::abi::IndexerTopKParams p,
                                        const unsigned short *scores, const int *candidates,
                                        long long blocks, long long S,
                                        const long long *callState, unsigned char *selected) {
  DSC_KERNEL_PROLOGUE();
  const long long blockSize = p.block_size, ratio = p.ratio, k = p.topk;
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

DSC_KERNEL void dsc_indexer_topk_emit(const __grid_constant__ dsc::abi::IndexerTopKParams p,
                                      const unsigned char *selected, long long S,
                                      const long long *callState, long long offset, int *topk) {
  DSC_KERNEL_PROLOGUE();
  const long long k = p.topk, ratio = p.ratio;
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


DSC_KERNEL void __launch_bounds__(dsc::abi::kSelectThreads) dsc_indexer_topk_radix(const __grid_constant__ dsc::abi::IndexerTopKParams p,
                                       const unsigned short *scores, const int *candidates,
                                       long long blocks, long long S,
                                       const long long *callState, long long offset, int *topk) {
  DSC_KERNEL_PROLOGUE();
  const long long blockSize = p.block_size > 0 ? p.block_size : 1, ratio = p.ratio, k = p.topk;
  const long long startPos = DSC_CALL_START(callState);
  const long long width = DSC_CALL_COMPRESSED_LENGTH(callState, ratio);
  const long long used = k < width ? k : width;
  const long long s = blockIdx.x;
  if (s >= S)
    return;
  const unsigned short *row = scores + s * width;
  const int *cand = candidates ? candidates + s * blocks : nullptr;
  int *out = topk + s * k;
  for (long long c = (used > 0 ? used : 0) + threadIdx.x; c < k; c += blockDim.x)
    out[c] = -1; // the selection writes slots [0, used)
  if (used <= 0)
    return;
  const long long valid = cand ? validCandidates(cand, blocks) : 0;
  const unsigned maskedKey = rankKey16(negInf());
  // A thread's chunk [a, b) in order; with candidates, the ids are walked
  // along it from the first one at or after block a / blockSize.
  auto chunk = [&](long long a, long long b, auto &&f) {
    if (!cand) {
      for (long long j = a; j < b; ++j)
        f(j, rankKey16(bf16ToFloat(row[j])));
      return;
    }
    long long lo = lowerBound(cand, valid, a / blockSize);
    long long id = lo < valid ? cand[lo] : -1;
    for (long long j = a; j < b; ++j) {
      const long long blk = j / blockSize;
      while (id >= 0 && id < blk) {
        ++lo;
        id = lo < valid ? cand[lo] : -1;
      }
      f(j, id == blk ? rankKey16(bf16ToFloat(row[j])) : maskedKey);
    }
  };
  const long long cl = compressLen(startPos, s, ratio);
  selectTop16Ascending(
      width, used, chunk, [](unsigned) { return true; }, [&](long long j, long long slot) {
    if (slot < k)
      out[slot] = j < cl ? static_cast<int>(j + offset) : -1;
  });
}
