//===- select.cuh - Selection in numerics' top-k order (device) ------------===//
//
// The one device definition of the order numerics::topKIndices uses (NaN
// first, then the larger value, then the lower index; numerics/
// SparseSelect.h) and the block-wide selection built on it: distinct 64-bit
// rank keys (the MoE gate's select), and selectTop16Ascending, the
// selection over bf16-exact values by 16-bit keys in four sweeps, written in
// ascending order (the indexer's top-k and candidate blocks).
// Used by the indexer (top-k, candidate blocks) and the MoE gate; every
// selection is the CPU's set, ties included.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_SELECT_CUH
#define DSC_CODEGEN_KERNELS_SELECT_CUH

#include "codegen/kernels/common.cuh"

namespace dsc::kernels::select {

/// numerics' top-k order: NaN first, then larger value, then lower index.
__device__ __forceinline__ bool ranksBefore(float a, long long ia, float b, long long ib) {
  const bool na = isNaN(a), nb = isNaN(b);
  if (na != nb)
    return na;
  if (!na && a != b)
    return a > b;
  return ia < ib;
}

/// The 64-bit selection key of (value v, index j): larger ranks before under
/// ranksBefore (NaN highest, then the float's order-preserving bits with -0
/// as +0, then the lower index via its complement). Keys are distinct.
__device__ __forceinline__ unsigned long long rankKey(float v, long long j) {
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

/// The 16-bit selection key of a bf16-exact float v (a bf16 value, +-inf or
/// NaN): the high half of rankKey's value key, so two such values order
/// exactly as rankKey orders them (the low half is constant per sign). NaN is
/// 0xffff (highest); -inf is 0x007f, the lowest key any value has.
__device__ __forceinline__ unsigned rankKey16(float v) {
  return static_cast<unsigned>(rankKey(v, 0) >> 48);
}
/// Block-wide top-`used` selection under numerics' order over n positions
/// with bf16-exact values, emitted in ascending position order: the `used`
/// largest (key16, then the lower position on ties) of the 16-bit keys that
/// chunk(a, b, f) passes as f(j, key) for each j in [a, b), ascending (each
/// thread owns one contiguous chunk, so a kernel can walk sorted side data,
/// e.g. candidate ids, along it). Calls emit(j, slot) for every selected j
/// whose key passes emits(key) (the candidate blocks drop NaN and -inf
/// picks), slot = the number of emitted positions before j; returns that
/// number. The set is the `used` largest rankKeys (value, then the lower
/// position), the CPU's partial sort, ties included. Work: two histogram sweeps
/// (the high, then the low byte; a run of equal bins along a chunk is one
/// shared atomic) and one counting + emitting sweep with a block scan: 4
/// sweeps of chunk() in all. All threads of the block call it; blockDim.x a
/// multiple of 32, <= 1024; 1 <= used <= n.
template <typename Chunk, typename Emits, typename Emit>
__device__ long long selectTop16Ascending(long long n, long long used, Chunk chunk, Emits emits,
                                          Emit emit) {
  __shared__ unsigned int hist[256];
  __shared__ unsigned int digitShared;
  __shared__ long long rankShared;
  __shared__ unsigned long long warpSums[32];
  const long long per = (n + blockDim.x - 1) / blockDim.x;
  const long long a = threadIdx.x * per < n ? threadIdx.x * per : n;
  const long long b = a + per < n ? a + per : n;
  long long rank = used; // the rank still to find among keys with the prefix
  unsigned prefix = 0;
  for (int pass = 0; pass < 2; ++pass) {
    for (int i = threadIdx.x; i < 256; i += blockDim.x)
      hist[i] = 0;
    __syncthreads();
    unsigned runBin = 0, run = 0; // a run of equal bins along the chunk: one atomic
    chunk(a, b, [&](long long, unsigned key) {
      if (pass == 1 && (key >> 8) != prefix)
        return;
      const unsigned bin = pass == 0 ? key >> 8 : key & 0xffu;
      if (run && bin == runBin) {
        ++run;
        return;
      }
      if (run)
        atomicAdd(&hist[runBin], run);
      runBin = bin;
      run = 1;
    });
    if (run)
      atomicAdd(&hist[runBin], run);
    __syncthreads();
    if (threadIdx.x < 32) { // the bin holding the rank-th key, from the top
      const int lane = threadIdx.x;
      long long local = 0;
      for (int i = 0; i < 8; ++i)
        local += hist[lane * 8 + i];
      long long atOrAbove = local; // bins of lanes >= lane
      for (int off = 1; off < 32; off <<= 1) {
        const long long t = __shfl_down_sync(0xffffffffu, atOrAbove, off);
        if (lane + off < 32)
          atOrAbove += t;
      }
      const long long lanesAbove = atOrAbove - local;
      const unsigned here = __ballot_sync(0xffffffffu, lanesAbove < rank && rank <= atOrAbove);
      const int owner = here ? 31 - __clz(here) : 0;
      if (lane == owner) {
        long long r = rank - lanesAbove;
        int digit = lane * 8 + 7;
        for (; digit > lane * 8; --digit) {
          if (r <= (long long)hist[digit])
            break;
          r -= hist[digit];
        }
        digitShared = static_cast<unsigned>(digit);
        rankShared = r;
      }
    }
    __syncthreads();
    prefix = pass == 0 ? digitShared : (prefix << 8) | digitShared;
    rank = rankShared;
    __syncthreads();
  }
  // prefix: the used-th key; the keys above it and the first `rank`
  // positions holding it are the selection.
  const unsigned threshold = prefix;
  const long long equalKept = emits(threshold) ? rank : 0;
  unsigned long long mine = 0; // (emitted greater << 32) | equal, in this chunk
  chunk(a, b, [&](long long, unsigned key) {
    if (key > threshold)
      mine += emits(key) ? 1ull << 32 : 0ull;
    else if (key == threshold)
      mine += 1;
  });
  // Block exclusive scan of the packed counts (warp shuffles, then the warps' totals).
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
  unsigned long long incl = mine;
  for (int off = 1; off < 32; off <<= 1) {
    const unsigned long long t = __shfl_up_sync(0xffffffffu, incl, off);
    if (lane >= off)
      incl += t;
  }
  if (lane == 31)
    warpSums[warp] = incl;
  __syncthreads();
  if (warp == 0) {
    const int warps = blockDim.x >> 5;
    unsigned long long w = lane < warps ? warpSums[lane] : 0;
    for (int off = 1; off < 32; off <<= 1) {
      const unsigned long long t = __shfl_up_sync(0xffffffffu, w, off);
      if (lane >= off)
        w += t;
    }
    if (lane < warps)
      warpSums[lane] = w; // inclusive over warps
  }
  __syncthreads();
  const unsigned long long before = incl - mine + (warp > 0 ? warpSums[warp - 1] : 0);
  long long greater = static_cast<long long>(before >> 32),
            equal = static_cast<long long>(before & 0xffffffffull);
  chunk(a, b, [&](long long j, unsigned key) {
    if (key > threshold) {
      if (emits(key)) {
        emit(j, greater + (equal < equalKept ? equal : equalKept));
        ++greater;
      }
    } else if (key == threshold) {
      if (equal < equalKept)
        emit(j, greater + equal);
      ++equal;
    }
  });
  // The emitted total: the greater ones (the last warp's inclusive sum) + the
  // kept equal ones.
  const long long kept = static_cast<long long>(warpSums[(blockDim.x >> 5) - 1] >> 32) + equalKept;
  __syncthreads(); // warpSums and the shared words may be reused by the caller
  return kept;
}

} // namespace dsc::kernels::select

using namespace dsc::kernels::select;

#endif // DSC_CODEGEN_KERNELS_SELECT_CUH
