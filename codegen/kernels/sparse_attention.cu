//===- sparse_attention.cu - Sparse attention with sink (`sparse_attention`) ===//
//
// CPU: runtime/cpu/kernels/attention/SparseAttention.cpp with the index list
// of CpuAdaptersAttention.cpp (window list, then the top-k list).
// dsc_sparse_attention: one block per (query row s, head h), blockDim
// threads (>= 64). The list is walked in blocks of 64 entries in order:
//   1. thread e < n computes entry e's logit: q . kv row (fp32, d order; the
//      products are exact) times scale = (float)p.scale; -1 entries are -inf;
//   2. thread 0: m' = max(m, block max) (m starts at -1e30), c = expf(m - m'),
//      p_e = expf(logit_e - m'), psum in entry order, denom = denom*c + psum;
//   3. each thread, for its channels d: pv = sum_e bf16(p_e) * v[e][d]
//      (entry order, fp32), acc[d] = acc[d]*c + pv.
// Finally denom += expf(sink[h] - m), o = bf16(acc / denom).
// Window list: a chunk's query s is row ringRows + s (ringRows: the ring rows
// of a continuation chunk ahead of its own, DSC_CALL_RING_ROWS), rows
// max(0, row-W+1) .. row in order; decode: the ring slots oldest first.
// kv rows: j < R from the window rows f32 [R, D]; R <= j < R + T decoded
// from the main-KV records (entry j - R). Entries outside [0, R + T) are
// skipped like -1 (the CPU asserts they do not occur).
// Dynamic shared memory: 2 * D floats (q, acc).
// dsc_sparse_attention_fast (the default; the entry above is the CPU-order
// kernel of CudaOptions::cpuOrderFamilies): step 1 by one warp per entry,
// lanes over d (coalesced record reads) and a fixed xor-tree sum; steps 2-3
// and the epilogue as above. Deterministic; not the CPU's d order.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"


__device__ __forceinline__ long long sparseEntry(long long s, long long e, long long startPos,
                                                 bool chunk, long long ringRows, long long window,
                                                 long long windowWidth, const int *topk,
                                                 long long k) {
  if (e < windowWidth) {
    if (chunk) { // ring rows then the chunk's own; query s is row ringRows + s
      const long long row = ringRows + s;
      const long long first = row - window + 1 > 0 ? row - window + 1 : 0;
      const long long j = first + e;
      return j > row ? -1 : j;
    }
    const long long slot = (startPos % window + 1 + e) % window;
    return slot > startPos ? -1 : slot;
  }
  return topk[s * k + (e - windowWidth)];
}

namespace dsc_sparse {
/// o = bf16(acc / denom) for row sh (acc in shared memory, D floats), or,
/// with ropeInvFreq (the fused `attention` kernel), the RoPE step (dsc_rope)
/// as the epilogue on that bf16 output, written to the rope's output. All
/// threads of the block must call it.
__device__ void emit(float *acc, float denomIn, long long D, long long sh, long long s,
                     long long startPos, const dsc::abi::RopeParams &ropeStep,
                     const float *ropeInvFreq, unsigned short *o) {
  const float denom = denomIn;
  if (!ropeInvFreq) {
    for (long long d = threadIdx.x; d < D; d += blockDim.x)
      o[sh * D + d] = bf16FromFloat(__fdiv_rn(acc[d], denom));
    return;
  }
  // The fused `attention` kernel: the RoPE step (dsc_rope) as the epilogue,
  // on the bf16 output held in shared memory, written to the rope's output.
  for (long long d = threadIdx.x; d < D; d += blockDim.x)
    acc[d] = bf16ToFloat(bf16FromFloat(__fdiv_rn(acc[d], denom)));
  __syncthreads();
  const long long tail = D - ropeStep.rope.dim;
  const long long pos = startPos * ropeStep.position_stride + s * ropeStep.position_stride;
  for (long long d = threadIdx.x; d < D; d += blockDim.x) {
    if (d < tail) {
      o[sh * D + d] = bf16FromFloat(acc[d]);
      continue;
    }
    const long long even = d - ((d - tail) & 1);
    float re, im;
    ropePair(acc[even], acc[even + 1], ropeInvFreq[(d - tail) / 2], pos, ropeStep.inverse, re,
             im);
    o[sh * D + d] = bf16FromFloat(((d - tail) & 1) ? im : re);
  }
}

/// The fast logit of entry j for the query qf (shared memory, D floats): one
/// warp, lanes over d, a fixed xor-tree sum; every lane gets it. -1 entries
/// give -inf. Used by attend<true> and the split-KV kernels alike, so both
/// produce the same bits.
__device__ __forceinline__ float warpLogit(const float *qf, long long j, const float *rows,
                                           long long R, const KvPageLayout &l,
                                           const unsigned char *kvPool, long long D, float scale) {
  const int lane = threadIdx.x & 31;
  float dot = 0.0f;
  if (j >= 0 && j < R) {
    const float *row = rows + j * D;
#pragma unroll 8
    for (long long d = lane; d < D; d += 32)
      dot = fmaf(qf[d], row[d], dot);
  } else if (j >= R) {
#pragma unroll 8
    for (long long d = lane; d < D; d += 32)
      dot = fmaf(qf[d], readValue(l, kvPool, j - R, (int)d), dot);
  }
  dot = warpSum(dot);
  return j < 0 ? negInf() : __fmul_rn(dot, scale);
}

/// sum over the block's n entries (order) of bf16(prob[e]) * v[e][d], -1 skipped.
__device__ __forceinline__ float pvAt(long long d, long long n, const long long *jl,
                                      const float *prob, const float *rows, long long R,
                                      const KvPageLayout &l, const unsigned char *kvPool,
                                      long long D) {
  // Eight entries' values are fetched before they are summed (loads in
  // flight); the sum is the same, in entry order.
  constexpr int kAhead = 8;
  float pv = 0.0f;
  for (long long e0 = 0; e0 < n; e0 += kAhead) {
    float v[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const long long e = e0 + u, j = e < n ? jl[e] : -1;
      v[u] = j < 0 ? 0.0f : j < R ? rows[j * D + d] : readValue(l, kvPool, j - R, (int)d);
    }
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const long long e = e0 + u;
      if (e < n && jl[e] >= 0)
        pv = __fadd_rn(pv, __fmul_rn(roundToBf16(prob[e]), v[u]));
    }
  }
  return pv;
}

/// The running max after folding a block's maximum in (attend's mNew).
__device__ __forceinline__ float foldMax(float m, float blockMax) {
  return m < blockMax ? blockMax : m;
}

template <bool kFast>
__device__ void attend(const dsc::abi::SparseAttentionParams &p,
                       const dsc::abi::RopeParams &ropeStep, const unsigned short *q, long long S,
                       long long H, long long D, const float *rows, long long R,
                       const unsigned char *kvPool, int values, int tile, int valueType,
                       int scaleType, int tokensPerPage, int order, long long ratio,
                       const int *topk, long long k, const float *sink,
                       const long long *callState, long long window, long long windowWidth,
                       const float *ropeInvFreq, unsigned short *o) {
  const float scale = (float)p.scale;
  // p and T = (p + S) / ratio (0 without a compressed source) from the call state.
  const long long startPos = DSC_CALL_START(callState);
  const bool chunk = DSC_CALL_CHUNK(callState);
  const long long ringRows = DSC_CALL_RING_ROWS(callState);
  const long long T = ratio > 0 ? DSC_CALL_COMPRESSED_LENGTH(callState, ratio) : 0;
  extern __shared__ float shm[];
  float *qf = shm;
  float *acc = shm + D;
  __shared__ float logit[dsc::abi::kSparseBlock], prob[dsc::abi::kSparseBlock];
  __shared__ long long jl[dsc::abi::kSparseBlock];
  __shared__ float mShared, cShared, denomShared;
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long sh = blockIdx.x;
  const long long s = sh / H, h = sh % H;
  const long long K = windowWidth + (topk ? k : 0);
  const long long nKv = R + (kvPool ? T : 0);
  for (long long d = threadIdx.x; d < D; d += blockDim.x) {
    qf[d] = bf16ToFloat(q[sh * D + d]);
    acc[d] = 0.0f;
  }
  if (threadIdx.x == 0) {
    mShared = -1e30f;
    denomShared = 0.0f;
  }
  __syncthreads();
  for (long long b0 = 0; b0 < K; b0 += dsc::abi::kSparseBlock) {
    const long long n = K - b0 < dsc::abi::kSparseBlock ? K - b0 : dsc::abi::kSparseBlock;
    if (kFast) { // one warp per entry, lanes over d (coalesced), xor-tree sum
      const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
      for (long long e = threadIdx.x >> 5; e < n; e += warps) {
        long long j =
            sparseEntry(s, b0 + e, startPos, chunk, ringRows, window, windowWidth, topk, k);
        if (j >= nKv)
          j = -1;
        const float v = warpLogit(qf, j, rows, R, l, kvPool, D, scale);
        if (lane == 0) {
          jl[e] = j;
          logit[e] = v;
        }
      }
    } else
    if (threadIdx.x < n) {
      long long j = sparseEntry(s, b0 + threadIdx.x, startPos, chunk, ringRows, window, windowWidth,
                                topk, k);
      if (j >= nKv)
        j = -1;
      jl[threadIdx.x] = j;
      if (j < 0) {
        logit[threadIdx.x] = negInf();
      } else {
        float dot = 0.0f;
        if (j < R) {
          const float *row = rows + j * D;
          for (long long d = 0; d < D; ++d)
            dot = __fadd_rn(dot, __fmul_rn(qf[d], row[d]));
        } else {
          for (long long d = 0; d < D; ++d)
            dot = __fadd_rn(dot, __fmul_rn(qf[d], readValue(l, kvPool, j - R, (int)d)));
        }
        logit[threadIdx.x] = __fmul_rn(dot, scale);
      }
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      const float m = mShared;
      float blockMax = negInf();
      for (long long e = 0; e < n; ++e)
        blockMax = blockMax < logit[e] ? logit[e] : blockMax; // std::max
      const float mNew = foldMax(m, blockMax);
      const float c = expf(__fsub_rn(m, mNew));
      float psum = 0.0f;
      for (long long e = 0; e < n; ++e) {
        prob[e] = expf(__fsub_rn(logit[e], mNew));
        psum = __fadd_rn(psum, prob[e]);
      }
      denomShared = __fadd_rn(__fmul_rn(denomShared, c), psum);
      cShared = c;
      mShared = mNew;
    }
    __syncthreads();
    const float c = cShared;
    for (long long d = threadIdx.x; d < D; d += blockDim.x)
      acc[d] = __fadd_rn(__fmul_rn(acc[d], c), pvAt(d, n, jl, prob, rows, R, l, kvPool, D));
    __syncthreads();
  }
  if (threadIdx.x == 0)
    denomShared = __fadd_rn(denomShared, expf(__fsub_rn(sink[h], mShared)));
  __syncthreads();
  emit(acc, denomShared, D, sh, s, startPos, ropeStep, ropeInvFreq, o);
}
} // namespace dsc_sparse

DSC_KERNEL void dsc_sparse_attention(const __grid_constant__ dsc::abi::SparseAttentionParams p,
                                     const __grid_constant__ dsc::abi::RopeParams ropeStep,
                                     const unsigned short *q, long long S, long long H,
                                     long long D, const float *rows, long long R,
                                     const unsigned char *kvPool, int values, int tile,
                                     int valueType, int scaleType, int tokensPerPage, int order,
                                     long long ratio, const int *topk, long long k,
                                     const float *sink, const long long *callState,
                                     long long window, long long windowWidth,
                                     const float *ropeInvFreq, unsigned short *o) {
  DSC_KERNEL_PROLOGUE();
  dsc_sparse::attend<false>(p, ropeStep, q, S, H, D, rows, R, kvPool, values, tile, valueType,
                            scaleType, tokensPerPage, order, ratio, topk, k, sink, callState,
                            window, windowWidth, ropeInvFreq, o);
}

DSC_KERNEL void dsc_sparse_attention_fast(
    const __grid_constant__ dsc::abi::SparseAttentionParams p,
    const __grid_constant__ dsc::abi::RopeParams ropeStep, const unsigned short *q, long long S,
    long long H, long long D, const float *rows, long long R, const unsigned char *kvPool,
    int values, int tile, int valueType, int scaleType, int tokensPerPage, int order,
    long long ratio, const int *topk, long long k, const float *sink, const long long *callState,
    long long window, long long windowWidth, const float *ropeInvFreq, unsigned short *o) {
  DSC_KERNEL_PROLOGUE();
  dsc_sparse::attend<true>(p, ropeStep, q, S, H, D, rows, R, kvPool, values, tile, valueType,
                           scaleType, tokensPerPage, order, ratio, topk, k, sink, callState,
                           window, windowWidth, ropeInvFreq, o);
}

//===----------------------------------------------------------------------===//
// Split-KV (CudaOptions::attention Split): the fast walk's 64-entry blocks run
// in parallel, byte-identical to dsc_sparse_attention_fast. The walk's state
// after block b depends on the blocks before it only through the running max
// m_b = fold(m_{b-1}, max of block b) (attend's mNew) and the rescaling c_b =
// exp(m_{b-1} - m_b); so
//   _logits: grid (rows x H, blocks): each block's logits (warpLogit), its
//     entry ids and its maximum (the entry-order fold) -> scratch;
//   _pv: grid (rows x H, blocks): m_b from the maxima of blocks 0..b (the
//     same fold), prob = exp(logit - m_b), psum in entry order, and each
//     channel's pv (pvAt) -> scratch;
//   _merge: grid rows x H: the walk's recursion over the blocks in order
//     (denom = denom * c_b + psum_b, acc = acc * c_b + pv_b, the same fp32
//     operations), the sink and the epilogue (emit).
// Scratch per (local row, head): logits and ids [K], then per block: max,
// psum, pv[D]. rows rowBase.. of the call (a bounded number per launch).
//===----------------------------------------------------------------------===//

namespace dsc_sparse {
struct SplitScratch {
  float *logits;     ///< [rows * H, K]
  long long *ids;    ///< [rows * H, K]
  float *blockMax;   ///< [rows * H, nb]
  float *psum;       ///< [rows * H, nb]
  float *pv;         ///< [rows * H, nb, D]
};
__device__ __forceinline__ SplitScratch splitScratch(float *base, long long rowsH, long long K,
                                                     long long nb, long long D) {
  SplitScratch sc;
  sc.logits = base;
  sc.ids = reinterpret_cast<long long *>(base + rowsH * K + (rowsH * K) % 2);
  sc.blockMax = reinterpret_cast<float *>(sc.ids + rowsH * K);
  sc.psum = sc.blockMax + rowsH * nb;
  sc.pv = sc.psum + rowsH * nb;
  return sc;
}

/// What both split logit kernels (_logits_fast, _logits_mqa) take from the
/// call state and their arguments: the scale, the window geometry, the KV
/// entries there are (R window rows + T compressed) and the list length K
/// in nb 64-entry blocks.
struct SplitLogitsCall {
  float scale;
  long long startPos, ringRows, nKv, K, nb;
  bool chunk;
  __device__ SplitLogitsCall(const dsc::abi::SparseAttentionParams &p, const long long *callState,
                             long long R, const unsigned char *kvPool, long long ratio,
                             const int *topk, long long k, long long windowWidth) {
    scale = (float)p.scale;
    startPos = DSC_CALL_START(callState);
    chunk = DSC_CALL_CHUNK(callState);
    ringRows = DSC_CALL_RING_ROWS(callState);
    const long long T = ratio > 0 ? DSC_CALL_COMPRESSED_LENGTH(callState, ratio) : 0;
    nKv = R + (kvPool ? T : 0);
    K = windowWidth + (topk ? k : 0);
    nb = (K + dsc::abi::kSparseBlock - 1) / dsc::abi::kSparseBlock;
  }
};
} // namespace dsc_sparse

DSC_KERNEL void dsc_sparse_attention_logits_fast(
    const __grid_constant__ dsc::abi::SparseAttentionParams p, const unsigned short *q,
    long long S, long long H, long long D, const float *rows, long long R,
    const unsigned char *kvPool, int values, int tile, int valueType, int scaleType,
    int tokensPerPage, int order, long long ratio, const int *topk, long long k,
    const long long *callState, long long window, long long windowWidth, long long rowsH,
    float *scratch, long long rowBase) {
  DSC_KERNEL_PROLOGUE();
  const dsc_sparse::SplitLogitsCall call(p, callState, R, kvPool, ratio, topk, k, windowWidth);
  const float scale = call.scale;
  const long long startPos = call.startPos, ringRows = call.ringRows, nKv = call.nKv;
  const bool chunk = call.chunk;
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long K = call.K, nb = call.nb;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  extern __shared__ float qf[]; // D floats
  __shared__ float logit[dsc::abi::kSparseBlock];
  const long long local = blockIdx.x, sh = rowBase * H + local, s = sh / H;
  const long long b0 = (long long)blockIdx.y * dsc::abi::kSparseBlock;
  const long long n = K - b0 < dsc::abi::kSparseBlock ? K - b0 : dsc::abi::kSparseBlock;
  for (long long d = threadIdx.x; d < D; d += blockDim.x)
    qf[d] = bf16ToFloat(q[sh * D + d]);
  __syncthreads();
  const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  for (long long e = threadIdx.x >> 5; e < n; e += warps) {
    long long j = sparseEntry(s, b0 + e, startPos, chunk, ringRows, window, windowWidth, topk, k);
    if (j >= nKv)
      j = -1;
    const float v = dsc_sparse::warpLogit(qf, j, rows, R, l, kvPool, D, scale);
    if (lane == 0) {
      logit[e] = v;
      sc.logits[local * K + b0 + e] = v;
      sc.ids[local * K + b0 + e] = j;
    }
  }
  __syncthreads();
  if (threadIdx.x == 0) {
    float blockMax = negInf();
    for (long long e = 0; e < n; ++e)
      blockMax = blockMax < logit[e] ? logit[e] : blockMax; // std::max, entry order
    sc.blockMax[local * nb + blockIdx.y] = blockMax;
  }
}

DSC_KERNEL void dsc_sparse_attention_pv_fast(long long D, const float *rows, long long R,
                                             const unsigned char *kvPool, int values, int tile,
                                             int valueType, int scaleType, int tokensPerPage,
                                             int order, long long K, long long rowsH,
                                             float *scratch) {
  DSC_KERNEL_PROLOGUE();
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long nb = (K + dsc::abi::kSparseBlock - 1) / dsc::abi::kSparseBlock;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  __shared__ float prob[dsc::abi::kSparseBlock];
  __shared__ long long jl[dsc::abi::kSparseBlock];
  const long long local = blockIdx.x, b = blockIdx.y, b0 = b * dsc::abi::kSparseBlock;
  const long long n = K - b0 < dsc::abi::kSparseBlock ? K - b0 : dsc::abi::kSparseBlock;
  __shared__ float mShared;
  if (threadIdx.x < n)
    jl[threadIdx.x] = sc.ids[local * K + b0 + threadIdx.x];
  if (threadIdx.x == 0) {
    float m = -1e30f; // the walk's running max after block b
    for (long long i = 0; i <= b; ++i)
      m = dsc_sparse::foldMax(m, sc.blockMax[local * nb + i]);
    mShared = m;
  }
  __syncthreads();
  for (long long e = threadIdx.x; e < n; e += blockDim.x) // the walk's p_e
    prob[e] = expf(__fsub_rn(sc.logits[local * K + b0 + e], mShared));
  __syncthreads();
  if (threadIdx.x == 0) { // psum in entry order
    float psum = 0.0f;
    for (long long e = 0; e < n; ++e)
      psum = __fadd_rn(psum, prob[e]);
    sc.psum[local * nb + b] = psum;
  }
  float *pv = sc.pv + (local * nb + b) * D;
  for (long long d = threadIdx.x; d < D; d += blockDim.x)
    pv[d] = dsc_sparse::pvAt(d, n, jl, prob, rows, R, l, kvPool, D);
}

DSC_KERNEL void dsc_sparse_attention_merge_fast(
    const __grid_constant__ dsc::abi::SparseAttentionParams p,
    const __grid_constant__ dsc::abi::RopeParams ropeStep, long long H, long long D, long long K,
    long long rowsH, float *scratch, const float *sink, const long long *callState,
    const float *ropeInvFreq, unsigned short *o, long long rowBase) {
  DSC_KERNEL_PROLOGUE();
  const long long nb = (K + dsc::abi::kSparseBlock - 1) / dsc::abi::kSparseBlock;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  extern __shared__ float acc[]; // D floats
  const long long local = blockIdx.x, sh = rowBase * H + local, s = sh / H, h = sh % H;
  const float *blockMax = sc.blockMax + local * nb, *psum = sc.psum + local * nb;
  // Every thread runs the walk's scalar recursion (the same operations, so
  // the same values) once for the denominator and once per channel it owns,
  // accumulating in a register (no shared-memory round trip between the
  // blocks' loads).
  float m = -1e30f, denom = 0.0f;
  for (long long b = 0; b < nb; ++b) {
    const float mNew = dsc_sparse::foldMax(m, blockMax[b]);
    denom = __fadd_rn(__fmul_rn(denom, expf(__fsub_rn(m, mNew))), psum[b]);
    m = mNew;
  }
  denom = __fadd_rn(denom, expf(__fsub_rn(sink[h], m)));
  const float *pv = sc.pv + local * nb * D;
  // kPer channels per thread at a time and kAhead blocks' values loaded
  // before they are folded (loads in flight; the fold is the walk's, in
  // block order), stored to shared memory after the channels' last block.
  constexpr int kPer = 4, kAhead = 8;
  const long long stride = blockDim.x;
  for (long long d0 = threadIdx.x; d0 < D; d0 += kPer * stride) {
    float a[kPer];
#pragma unroll
    for (int u = 0; u < kPer; ++u)
      a[u] = 0.0f;
    float md = -1e30f;
    for (long long bb = 0; bb < nb; bb += kAhead) {
      float x[kAhead][kPer], bm[kAhead];
#pragma unroll
      for (int t = 0; t < kAhead; ++t) {
        const bool live = bb + t < nb;
        bm[t] = live ? blockMax[bb + t] : 0.0f;
#pragma unroll
        for (int u = 0; u < kPer; ++u) {
          const long long d = d0 + u * stride;
          // A block of invisible entries (max -inf) sums to +0: its pv is
          // not read (the tensor-core PV writes none).
          x[t][u] = live && d < D && bm[t] != negInf() ? pv[(bb + t) * D + d] : 0.0f;
        }
      }
#pragma unroll
      for (int t = 0; t < kAhead; ++t)
        if (bb + t < nb) {
          const float mNew = dsc_sparse::foldMax(md, bm[t]);
          const float c = expf(__fsub_rn(md, mNew));
#pragma unroll
          for (int u = 0; u < kPer; ++u)
            a[u] = __fadd_rn(__fmul_rn(a[u], c), x[t][u]);
          md = mNew;
        }
    }
#pragma unroll
    for (int u = 0; u < kPer; ++u)
      if (d0 + u * stride < D)
        acc[d0 + u * stride] = a[u];
  }
  __syncthreads();
  dsc_sparse::emit(acc, denom, D, sh, s, DSC_CALL_START(callState), ropeStep, ropeInvFreq, o);
}

//===----------------------------------------------------------------------===//
// MQA split-KV (CudaOptions::attention Mqa; the default in sessions 6-10): the split path's
// logits and PV with every 64-entry block's values decoded once per group of
// `headsPer` heads instead of once per head (the heads of a row share their
// KV entries, MQA). Grid (rows, blocks, head groups); the block's entries are
// staged as bf16 bits in dynamic shared memory ([64, D]: window rows and
// decoded records are bf16 values, so the staging is exact), one warp per
// entry (the record's offsets computed once per entry, lanes over channels).
// Byte-identical to _logits_fast / _pv_fast, so to the single walk:
//   _logits_mqa: every warp holds the group's queries in registers (lane l:
//     q[h][l + 32 i]); warp w takes entries w, w + warps, ... and reads each
//     value once for all the group's heads, running warpLogit's per-lane
//     fmaf chain (d ascending) and warpSum per (entry, head); one thread
//     per head folds the block maximum in entry order; logits, ids and
//     maxima go to the split scratch;
//   _pv_mqa: per head m_b (the same fold), prob = exp(logit - m_b), psum in
//     entry order (one thread per head); thread t owns the channel pairs
//     (2c, 2c + 1), c = t, t + blockDim, ..., of every head of the group and
//     sums pvAt's operations in entry order.
// Limits (dsc/abi/LaunchShapes.h; the adapter checks and else takes the
// split path; the kernels trap if a launch breaks them): D % 16 == 0, D <= 32
// * kMqaMaxLane and D <= 2 * blockDim * kMqaPvRounds, headsPer <= kMqaMaxHeads.
//===----------------------------------------------------------------------===//

namespace dsc_sparse {
constexpr int kMqaMaxLane = dsc::abi::kMqaMaxLane;   ///< q values per lane
constexpr int kMqaPvRounds = dsc::abi::kMqaPvRounds; ///< channel pairs per PV thread
constexpr int kMqaMaxHeads = dsc::abi::kMqaMaxHeads; ///< heads per block

/// Stages the block's n entries (ids jl) as bf16 bits into vals [n, ld] (D %
/// 16 == 0, row stride ld >= D elements, a multiple of 8), channels [16 c0,
/// 16 c1) of each (c1 < 0: all; the others are left as they are): item (e,
/// c) is entry e's 16 channels [16c, 16c + 16) (vector loads of the window row or
/// of the record's codes), stored as two 16-byte words; -1 entries are zeros
/// (never read). The items are spread flat over the block's threads,
/// kStageAhead per thread at a time: their loads are all issued before any
/// is decoded (one memory latency per round, not one per entry). A record
/// value is decodeValue's, bf16(code value * scale): the code's value comes
/// from a table of the format's codes (E2M1: 16, E4M3: 256 entries, decoded
/// by the numerics functions) and the tile's scale is decoded once per 16
/// channels when a tile covers them, so the staging is exact (bf16x2FromFloats:
/// a NaN is staged as another NaN's bits). All threads of
/// the block must call it (it fills the table, then synchronises).
__device__ __forceinline__ void stageBlock(unsigned short *vals, const long long *jl, int n,
                                           int D, int ld, const float *rows, long long R,
                                           const KvPageLayout &l, const unsigned char *kvPool,
                                           int c0 = 0, int c1 = -1) {
  constexpr int kStageAhead = 4;
  __shared__ float codeValue[256];
  // Each entry's record offsets in the pool, computed once (not per item).
  __shared__ long long dataAt[dsc::abi::kSparseBlock], scaleAt[dsc::abi::kSparseBlock];
  const KvRecordFormat &f = l.format;
  const bool fp8 = f.valueType == KvValueType::E4M3;
  for (int i = threadIdx.x; i < 256; i += blockDim.x)
    codeValue[i] = fp8 ? e4m3ToFloat((unsigned char)i) : e2m1ToFloat((unsigned char)(i & 15));
  for (int e = threadIdx.x; e < n; e += blockDim.x)
    if (jl[e] >= R) {
      dataAt[e] = l.tokenDataOffset(jl[e] - R);
      scaleAt[e] = l.tokenScaleOffset(jl[e] - R);
    }
  __syncthreads();
  const int span = (c1 < 0 ? D / 16 : c1) - c0, items = n * span;
  const int tile = f.valuesPerTile;
  const bool wholeTile = tile % 16 == 0;
  // decodeValue's scale for a scale byte: E4M3 values and UE8M0 scales take
  // ue8m0ToFloat, FP4 with E4M3 scales e4m3ToFloat.
  auto scaleOf = [&](unsigned char sc) {
    return fp8 || f.scaleType == KvScaleType::UE8M0 ? ue8m0ToFloat(sc) : e4m3ToFloat(sc);
  };
  // One item's bytes: a window row's 16 floats, or the record's codes (FP8:
  // 16 bytes, FP4: 8) and its first scale byte; `kind` 0: zeros, 1: row,
  // 2: record.
  struct Raw {
    uint4 v[4];
    unsigned char scale;
    int kind;
  };
  for (int i0 = threadIdx.x; i0 < items; i0 += kStageAhead * blockDim.x) {
    Raw raw[kStageAhead];
#pragma unroll
    for (int u = 0; u < kStageAhead; ++u) { // the loads
      const int i = i0 + u * blockDim.x, e = i / span, c = c0 + i - e * span;
      raw[u].kind = 0;
      const long long j = i < items ? jl[e] : -1;
      if (j >= 0 && j < R) {
        const uint4 *r4 = reinterpret_cast<const uint4 *>(rows + j * D + 16 * c);
#pragma unroll
        for (int q = 0; q < 4; ++q)
          raw[u].v[q] = r4[q];
        raw[u].kind = 1;
      } else if (j >= R) {
        const unsigned char *data = kvPool + dataAt[e];
        const unsigned char *scales = kvPool + scaleAt[e];
        const unsigned char *pc = data + (fp8 ? 16 * c : 8 * c);
        const unsigned long long a = reinterpret_cast<unsigned long long>(pc);
        if (fp8 && (a & 15) == 0) {
          raw[u].v[0] = *reinterpret_cast<const uint4 *>(pc);
        } else if (!fp8 && (a & 7) == 0) {
          const uint2 q = *reinterpret_cast<const uint2 *>(pc);
          raw[u].v[0] = make_uint4(q.x, q.y, 0u, 0u);
        } else { // unaligned codes: bytes
          unsigned w[4] = {0u, 0u, 0u, 0u};
          for (int b = 0; b < (fp8 ? 16 : 8); ++b)
            w[b >> 2] |= (unsigned)pc[b] << (8 * (b & 3));
          raw[u].v[0] = make_uint4(w[0], w[1], w[2], w[3]);
        }
        raw[u].scale = scales[(16 * c) / tile];
        raw[u].kind = 2;
      }
    }
#pragma unroll
    for (int u = 0; u < kStageAhead; ++u) { // the decode, the stores
      const int i = i0 + u * blockDim.x, e = i / span, c = c0 + i - e * span;
      if (i >= items)
        break;
      unsigned w[8]; // bf16 pairs
      if (raw[u].kind == 0) {
#pragma unroll
        for (int q = 0; q < 8; ++q)
          w[q] = 0u;
      } else if (raw[u].kind == 1) { // window rows: decoded records (bf16 values)
#pragma unroll
        for (int q = 0; q < 4; ++q) {
          const float4 v = *reinterpret_cast<const float4 *>(&raw[u].v[q]);
          w[2 * q] = bf16x2FromFloats(v.x, v.y);
          w[2 * q + 1] = bf16x2FromFloats(v.z, v.w);
        }
      } else {
        const unsigned ws[4] = {raw[u].v[0].x, raw[u].v[0].y, raw[u].v[0].z, raw[u].v[0].w};
        unsigned char code[16];
#pragma unroll
        for (int b = 0; b < 16; ++b) // fp4CodeAt: element 2i in the low nibble of byte i
          code[b] = fp8 ? (unsigned char)(ws[b >> 2] >> (8 * (b & 3)))
                        : (unsigned char)((ws[b >> 3] >> (4 * (b & 7))) & 15u);
        float v[16];
        if (wholeTile) {
          const float s0 = scaleOf(raw[u].scale);
#pragma unroll
          for (int b = 0; b < 16; ++b)
            v[b] = codeValue[code[b]] * s0;
        } else { // tiles of fewer than 16 values: a scale per value (not unrolled)
          const unsigned char *scales = kvPool + scaleAt[e];
#pragma unroll 1
          for (int b = 0; b < 16; ++b)
            v[b] = codeValue[code[b]] * scaleOf(scales[(16 * c + b) / tile]);
        }
#pragma unroll
        for (int q = 0; q < 8; ++q)
          w[q] = bf16x2FromFloats(v[2 * q], v[2 * q + 1]);
      }
      uint4 *dst = reinterpret_cast<uint4 *>(vals + (long long)e * ld + 16 * c);
      dst[0] = make_uint4(w[0], w[1], w[2], w[3]);
      dst[1] = make_uint4(w[4], w[5], w[6], w[7]);
    }
  }
}
} // namespace dsc_sparse

DSC_KERNEL void dsc_sparse_attention_logits_mqa(
    const __grid_constant__ dsc::abi::SparseAttentionParams p, const unsigned short *q, long long S,
    long long H, long long D, const float *rows, long long R, const unsigned char *kvPool,
    int values, int tile, int valueType, int scaleType, int tokensPerPage, int order,
    long long ratio, const int *topk, long long k, const long long *callState, long long window,
    long long windowWidth, long long rowsH, float *scratch, long long rowBase, long long headsPer) {
  DSC_KERNEL_PROLOGUE();
  constexpr int kHeads = dsc_sparse::kMqaMaxHeads, kLane = dsc_sparse::kMqaMaxLane;
  const dsc_sparse::SplitLogitsCall call(p, callState, R, kvPool, ratio, topk, k, windowWidth);
  const float scale = call.scale;
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long K = call.K, nb = call.nb;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  extern __shared__ __align__(16) unsigned short vals[]; // [kSparseBlock, D] bf16 bits
  __shared__ long long jl[dsc::abi::kSparseBlock];
  __shared__ float logit[kHeads][dsc::abi::kSparseBlock];
  const long long localRow = blockIdx.x, s = rowBase + localRow, b = blockIdx.y;
  const long long h0 = (long long)blockIdx.z * headsPer;
  const int heads = int(H - h0 < headsPer ? H - h0 : headsPer);
  const long long b0 = b * dsc::abi::kSparseBlock;
  const int n = int(K - b0 < dsc::abi::kSparseBlock ? K - b0 : dsc::abi::kSparseBlock);
  const int lane = threadIdx.x & 31, warps = blockDim.x >> 5;
  if (headsPer > kHeads || D > 32LL * kLane || D % 16 != 0)
    __trap();
  for (int e = threadIdx.x; e < n; e += blockDim.x) {
    const long long j = sparseEntry(s, b0 + e, call.startPos, call.chunk, call.ringRows, window,
                                    windowWidth, topk, k);
    jl[e] = j >= call.nKv ? -1 : j;
  }
  // The group's queries through shared memory (one coalesced copy; loading
  // them straight into the registers below waits one memory latency per
  // value, the registers being too few to keep 128 loads in flight).
  __shared__ unsigned short qs[kHeads * 32 * kLane];
  const unsigned short *qg = q + (s * H + h0) * D;
  blockCopy((long long)heads * D, [&](long long i) { return qg[i]; },
            [&](long long i, unsigned short v) { qs[i] = v; });
  dsc_sparse::stageBlock(vals, jl, n, int(D), int(D), rows, R, l, kvPool); // synchronises first
  __syncthreads();
  // Every warp holds the group's queries: lane l has q[h][l + 32 i].
  float qv[kHeads][kLane];
#pragma unroll
  for (int hh = 0; hh < kHeads; ++hh)
#pragma unroll
    for (int i = 0; i < kLane; ++i) {
      const int d = lane + 32 * i;
      qv[hh][i] = hh < heads && d < D ? bf16ToFloat(qs[hh * D + d]) : 0.0f;
    }
  // Warp w: entries w, w + warps, ...; per entry and head warpLogit's
  // operations (lane chain over d ascending, warpSum), the entry's values
  // read once for the heads.
  for (int e = threadIdx.x >> 5; e < n; e += warps) {
    const unsigned short *v = vals + (long long)e * D;
    float dot[kHeads];
#pragma unroll
    for (int hh = 0; hh < kHeads; ++hh)
      dot[hh] = 0.0f;
#pragma unroll
    for (int i = 0; i < kLane; ++i) {
      const int d = lane + 32 * i;
      if (d < D) {
        const float x = bf16ToFloat(v[d]);
#pragma unroll
        for (int hh = 0; hh < kHeads; ++hh)
          dot[hh] = fmaf(qv[hh][i], x, dot[hh]);
      }
    }
    const long long j = jl[e];
#pragma unroll
    for (int hh = 0; hh < kHeads; ++hh) {
      const float sum = warpSum(dot[hh]);
      if (lane == 0)
        logit[hh][e] = j < 0 ? negInf() : __fmul_rn(sum, scale);
    }
  }
  __syncthreads();
  const long long local0 = localRow * H + h0;
  for (int i = threadIdx.x; i < heads * n; i += blockDim.x) {
    const int hh = i / n, e = i - hh * n;
    sc.logits[(local0 + hh) * K + b0 + e] = logit[hh][e];
    sc.ids[(local0 + hh) * K + b0 + e] = jl[e];
  }
  if (threadIdx.x < heads) {
    float blockMax = negInf();
    for (int e = 0; e < n; ++e) // std::max, entry order
      blockMax = blockMax < logit[threadIdx.x][e] ? logit[threadIdx.x][e] : blockMax;
    sc.blockMax[(local0 + threadIdx.x) * nb + b] = blockMax;
  }
}

DSC_KERNEL void dsc_sparse_attention_pv_mqa(long long D, const float *rows, long long R,
                                            const unsigned char *kvPool, int values, int tile,
                                            int valueType, int scaleType, int tokensPerPage,
                                            int order, long long K, long long rowsH, long long H,
                                            long long headsPer, float *scratch) {
  DSC_KERNEL_PROLOGUE();
  constexpr int kHeads = dsc_sparse::kMqaMaxHeads, kRounds = dsc_sparse::kMqaPvRounds;
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long nb = (K + dsc::abi::kSparseBlock - 1) / dsc::abi::kSparseBlock;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  extern __shared__ __align__(16) unsigned short vals[]; // [kSparseBlock, D] bf16 bits
  __shared__ long long jl[dsc::abi::kSparseBlock];
  __shared__ float prob[kHeads][dsc::abi::kSparseBlock];              // the walk's p_e
  __shared__ __align__(16) float pbf[dsc::abi::kSparseBlock][kHeads]; // bf16(p_e), entry-major
  __shared__ float mShared[kHeads];
  const long long localRow = blockIdx.x, b = blockIdx.y, h0 = (long long)blockIdx.z * headsPer;
  const int heads = int(H - h0 < headsPer ? H - h0 : headsPer);
  const long long b0 = b * dsc::abi::kSparseBlock;
  const int n = int(K - b0 < dsc::abi::kSparseBlock ? K - b0 : dsc::abi::kSparseBlock);
  const long long local0 = localRow * H + h0; // the group's first (row, head)
  if (headsPer > kHeads || D % 16 != 0 || D > 2LL * blockDim.x * kRounds)
    __trap();
  for (int e = threadIdx.x; e < n; e += blockDim.x)
    jl[e] = sc.ids[local0 * K + b0 + e]; // the row's entries: the same for every head
  if (threadIdx.x < heads) {
    float m = -1e30f; // the walk's running max after block b
    for (long long i = 0; i <= b; ++i)
      m = dsc_sparse::foldMax(m, sc.blockMax[(local0 + threadIdx.x) * nb + i]);
    mShared[threadIdx.x] = m;
  }
  __syncthreads();
  dsc_sparse::stageBlock(vals, jl, n, int(D), int(D), rows, R, l, kvPool);
  for (int i = threadIdx.x; i < kHeads * dsc::abi::kSparseBlock; i += blockDim.x) {
    const int hh = i / dsc::abi::kSparseBlock, e = i % dsc::abi::kSparseBlock;
    const float pe = hh < heads && e < n
                         ? expf(__fsub_rn(sc.logits[(local0 + hh) * K + b0 + e], mShared[hh]))
                         : 0.0f;
    prob[hh][e] = pe;
    pbf[e][hh] = roundToBf16(pe);
  }
  __syncthreads();
  if (threadIdx.x < heads) { // psum in entry order
    float psum = 0.0f;
    for (int e = 0; e < n; ++e)
      psum = __fadd_rn(psum, prob[threadIdx.x][e]);
    sc.psum[(local0 + threadIdx.x) * nb + b] = psum;
  }
  float acc[kRounds][kHeads][2];
#pragma unroll
  for (int u = 0; u < kRounds; ++u)
#pragma unroll
    for (int hh = 0; hh < kHeads; ++hh)
      acc[u][hh][0] = acc[u][hh][1] = 0.0f;
  const int pairs = int(D / 2);
  const unsigned *vals2 = reinterpret_cast<const unsigned *>(vals);
  for (int e = 0; e < n; ++e) {
    if (jl[e] < 0) // pvAt skips -1 entries
      continue;
    float pr[kHeads];
#pragma unroll
    for (int hh = 0; hh < kHeads; ++hh)
      pr[hh] = pbf[e][hh];
#pragma unroll
    for (int u = 0; u < kRounds; ++u) {
      const int c = threadIdx.x + u * blockDim.x;
      if (c < pairs) {
        const unsigned v2 = vals2[e * pairs + c];
        const float v0 = bf16ToFloat((unsigned short)(v2 & 0xffffu));
        const float v1 = bf16ToFloat((unsigned short)(v2 >> 16));
#pragma unroll
        for (int hh = 0; hh < kHeads; ++hh) { // pvAt: sum_e bf16(p_e) * v[e][d], entry order
          acc[u][hh][0] = __fadd_rn(acc[u][hh][0], __fmul_rn(pr[hh], v0));
          acc[u][hh][1] = __fadd_rn(acc[u][hh][1], __fmul_rn(pr[hh], v1));
        }
      }
    }
  }
#pragma unroll
  for (int u = 0; u < kRounds; ++u) {
    const int c = threadIdx.x + u * blockDim.x;
    if (c < pairs)
#pragma unroll
      for (int hh = 0; hh < kHeads; ++hh)
        if (hh < heads) {
          float *pv = sc.pv + ((local0 + hh) * nb + b) * D;
          pv[2 * c] = acc[u][hh][0];
          pv[2 * c + 1] = acc[u][hh][1];
        }
  }
}

#include "codegen/kernels/sparse_attention_tc.cuh"
