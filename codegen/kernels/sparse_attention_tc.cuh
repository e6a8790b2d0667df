//===- sparse_attention_tc.cuh - Tensor-core MQA split-KV sparse attention ===//
//
// What: CudaOptions::attention TensorCore (`--cuda-attention tc`, the default), the split-KV
// path of sparse_attention.cu with both matrix products on the tensor cores
// and every head of a row at once (MQA: the heads share their KV entries, so
// a 64-entry block is decoded once per kernel for all of them, where the MQA
// kernels decode it once per group of 8 heads). The reference's online
// softmax is kept: probabilities are rounded to bf16 against the running
// maximum of the blocks so far (reference-spec 9.7), so
//   dsc_sparse_attention_logits_tc: one block per (query row, 64-entry block
//     b), kTcThreads threads; stages the row's queries [H, D] and the
//     block's entries [64, D] (stageBlock: exact bf16) in shared memory,
//     rows padded by kPad elements (conflict-free ldmatrix); warp w < ceil(H
//     / 16) owns heads 16w .. 16w + 15: S = Q V^T (mma m16n8k16 bf16, fp32
//     accumulation: exact products, the tensor core's sum), logit = fp32(S)
//     * scale, -1 entries -inf -> the split scratch's logits, the block's
//     maximum per head (the order does not matter for a max) and the row's
//     ids (head 0's slots). A block of invisible entries writes -inf logits
//     and maximum and stops;
//   dsc_sparse_attention_pv_tc: the same grid x gridDim.z channel ranges
//     (the adapter splits D where (row, block) pairs alone leave SMs idle, as
//     in decode: each block stages and multiplies only its channels, so the
//     bytes are the same for any split): m_b = the fold of the maxima
//     of blocks 0..b (the walk's), prob = exp(logit - m_b), psum in entry
//     order (one thread per head), pv_b = bf16(prob) V on the tensor cores
//     (P through ldmatrix from shared memory, V through ldmatrix.trans);
//     a block of invisible entries writes psum 0 and no pv;
//   then dsc_sparse_attention_merge_fast, the walk's recursion over the
//     blocks (it skips the pv of invisible blocks: the same fp32 values).
// Numerics: the walk's operations except the logits' sum order (tensor
// core instead of warpLogit's lane chains): not byte-identical to the other
// paths, deterministic, a row's bytes independent of the other rows and of
// the launch's row chunking.
// Invariants (the adapter checks and else takes the MQA path; the kernels
// trap): D % 16 == 0, H <= kTcMaxHeads; dynamic shared memory
// tcLogitsBytes / tcPvBytes (dsc/abi/LaunchShapes.h).
// Bound: the block's KV bytes and the queries at L2 latency; the math is
// 4 * H * 64 * D flops per block, well under a microsecond of tensor cores.
// Include at the end of sparse_attention.cu (uses its dsc_sparse helpers).
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_SPARSE_ATTENTION_TC_CUH
#define DSC_CODEGEN_KERNELS_SPARSE_ATTENTION_TC_CUH

namespace dsc_sparse_tc {
constexpr int kEntries = dsc::abi::kSparseBlock; ///< entries per block (64)
constexpr int kPad = dsc::abi::kTcRowPad;        ///< bf16 elements of row padding

__device__ __forceinline__ unsigned sharedAddress(const void *p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
/// Four 8x8 b16 matrices; lane l gives the address of row l % 8 of matrix
/// l / 8; register i holds matrix i's (row lane / 4, columns 2 (lane % 4),
/// + 1).
__device__ __forceinline__ void ldmatrix4(unsigned *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(p)));
}
/// The same, transposed: register i holds matrix i's (rows 2 (lane % 4), + 1;
/// column lane / 4).
__device__ __forceinline__ void ldmatrix4Trans(unsigned *r, const void *p) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(sharedAddress(p)));
}
/// d += A x B for one 16 x 8 x 16 bf16 tile, fp32 accumulation.
__device__ __forceinline__ void mmaBf16(float *d, const unsigned *a, unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%0,%1,%2,%3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

/// The queries of row s, heads 0 .. H - 1, into qs [hPad, ld] (bf16 bits;
/// heads H .. hPad - 1 zero), 16-byte copies (D % 8 == 0). All threads.
__device__ __forceinline__ void stageQueries(unsigned short *qs, const unsigned short *q,
                                             long long s, int H, int hPad, int D, int ld) {
  constexpr int kAhead = 8; // loads in flight per thread
  const int chunks = D / 8, items = hPad * chunks;
  for (int i0 = threadIdx.x; i0 < items; i0 += kAhead * blockDim.x) {
    uint4 v[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const int i = i0 + u * blockDim.x, h = i / chunks, c = i - h * chunks;
      v[u] = make_uint4(0u, 0u, 0u, 0u);
      if (i < items && h < H)
        v[u] = *reinterpret_cast<const uint4 *>(q + (s * H + h) * (long long)D + 8 * c);
    }
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const int i = i0 + u * blockDim.x, h = i / chunks, c = i - h * chunks;
      if (i < items)
        *reinterpret_cast<uint4 *>(qs + h * ld + 8 * c) = v[u];
    }
  }
}
} // namespace dsc_sparse_tc

namespace dsc_sparse_tc {
/// The block's entry ids (e >= n or past the visible KV: -1) into jl, from
/// the list (logits) or from the row's ids in the scratch (pv); returns
/// whether any is visible. All threads (a barrier).
__device__ __forceinline__ bool blockEntries(long long *jl, int n, const long long *ids) {
  for (int e = threadIdx.x; e < kEntries; e += blockDim.x)
    jl[e] = e < n ? ids[e] : -1;
  return __syncthreads_or(threadIdx.x < kEntries && jl[threadIdx.x] >= 0);
}
} // namespace dsc_sparse_tc

DSC_KERNEL void __launch_bounds__(dsc::abi::kTcThreads) dsc_sparse_attention_logits_tc(
    const __grid_constant__ dsc::abi::SparseAttentionParams p, const unsigned short *q, long long S,
    long long H, long long D, const float *rows, long long R, const unsigned char *kvPool,
    int values, int tile, int valueType, int scaleType, int tokensPerPage, int order,
    long long ratio, const int *topk, long long k, const long long *callState, long long window,
    long long windowWidth, long long rowsH, float *scratch, long long rowBase) {
  DSC_KERNEL_PROLOGUE();
  using namespace dsc_sparse_tc;
  if (D % 16 != 0 || H > dsc::abi::kTcMaxHeads || H < 1)
    __trap();
  const dsc_sparse::SplitLogitsCall call(p, callState, R, kvPool, ratio, topk, k, windowWidth);
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long K = call.K, nb = call.nb;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  const int hPad = int((H + 15) / 16 * 16), ld = int(D) + kPad, d = int(D);
  extern __shared__ __align__(16) unsigned short tcSmem[];
  unsigned short *qs = tcSmem;                        // [hPad, ld]
  unsigned short *vs = tcSmem + (long long)hPad * ld; // [kEntries, ld]
  __shared__ long long jl[kEntries];
  const long long localRow = blockIdx.x, s = rowBase + localRow, b = blockIdx.y;
  const long long b0 = b * kEntries, local0 = localRow * H; // the row's first (row, head)
  const int n = int(K - b0 < kEntries ? K - b0 : kEntries);
  for (int e = threadIdx.x; e < kEntries; e += blockDim.x) {
    long long j = -1;
    if (e < n) {
      j = sparseEntry(s, b0 + e, call.startPos, call.chunk, call.ringRows, window, windowWidth,
                      topk, k);
      j = j >= call.nKv ? -1 : j;
      sc.ids[local0 * K + b0 + e] = j; // head 0's slots: the row's ids
    }
    jl[e] = j;
  }
  if (!__syncthreads_or(threadIdx.x < kEntries && jl[threadIdx.x] >= 0)) {
    for (long long i = threadIdx.x; i < H * n; i += blockDim.x)
      sc.logits[(local0 + i / n) * K + b0 + i % n] = negInf();
    for (long long h = threadIdx.x; h < H; h += blockDim.x)
      sc.blockMax[(local0 + h) * nb + b] = negInf();
    return;
  }
  stageQueries(qs, q, s, int(H), hPad, d, ld);
  dsc_sparse::stageBlock(vs, jl, kEntries, d, ld, rows, R, l, kvPool); // synchronises first
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  if (warp * 16 >= H)
    return;
  const int h0 = warp * 16;
  // S = Q V^T: 8 n-tiles of 8 entries; the lane's ldmatrix row and column.
  float acc[8][4];
#pragma unroll
  for (int j = 0; j < 8; ++j)
    acc[j][0] = acc[j][1] = acc[j][2] = acc[j][3] = 0.0f;
  const int mi = lane >> 3, r8 = lane & 7;
  const unsigned short *qRow = qs + (h0 + r8 + (mi & 1) * 8) * ld + (mi >> 1) * 8;
  for (int k0 = 0; k0 < d; k0 += 16) {
    unsigned a[4];
    ldmatrix4(a, qRow + k0);
#pragma unroll
    for (int jj = 0; jj < 4; ++jj) { // entries 16 jj .. 16 jj + 15: two n-tiles
      unsigned bv[4];
      ldmatrix4(bv, vs + (16 * jj + r8 + (mi >> 1) * 8) * ld + k0 + (mi & 1) * 8);
      mmaBf16(acc[2 * jj], a, bv[0], bv[1]);
      mmaBf16(acc[2 * jj + 1], a, bv[2], bv[3]);
    }
  }
  // Logits (rows g and g + 8 of the tile) and the block maximum per head.
  const float scale = call.scale;
  float mx[2] = {negInf(), negInf()};
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = 8 * j + 2 * t + (i & 1);
      const float v = jl[e] < 0 ? negInf() : __fmul_rn(acc[j][i], scale);
      const long long h = h0 + g + 8 * (i >> 1);
      if (e < n && h < H)
        sc.logits[(local0 + h) * K + b0 + e] = v;
      mx[i >> 1] = mx[i >> 1] < v ? v : mx[i >> 1];
    }
#pragma unroll
  for (int u = 0; u < 2; ++u)
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
      const float o = __shfl_xor_sync(0xffffffffu, mx[u], off);
      mx[u] = mx[u] < o ? o : mx[u];
    }
  if (t == 0)
#pragma unroll
    for (int u = 0; u < 2; ++u)
      if (h0 + g + 8 * u < H)
        sc.blockMax[(local0 + h0 + g + 8 * u) * nb + b] = mx[u];
}

DSC_KERNEL void __launch_bounds__(dsc::abi::kTcThreads) dsc_sparse_attention_pv_tc(
    long long D, const float *rows, long long R, const unsigned char *kvPool, int values, int tile,
    int valueType, int scaleType, int tokensPerPage, int order, long long K, long long rowsH,
    long long H, float *scratch) {
  DSC_KERNEL_PROLOGUE();
  using namespace dsc_sparse_tc;
  if (D % 16 != 0 || H > dsc::abi::kTcMaxHeads || H < 1)
    __trap();
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long nb = (K + kEntries - 1) / kEntries;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  const int hPad = int((H + 15) / 16 * 16), ld = int(D) + kPad, d = int(D);
  constexpr int kPld = kEntries + kPad; // P rows: 64 entries + padding
  extern __shared__ __align__(16) unsigned short tcSmem[];
  unsigned short *vs = tcSmem;                              // [kEntries, ld]
  unsigned short *ps = tcSmem + (long long)kEntries * ld;   // bf16(prob) [hPad, kPld]
  float *prob = reinterpret_cast<float *>(ps + (long long)hPad * kPld); // [hPad, kEntries]
  __shared__ long long jl[kEntries];
  __shared__ float mRun[dsc::abi::kTcMaxHeads];
  const long long localRow = blockIdx.x, b = blockIdx.y, b0 = b * kEntries;
  const long long local0 = localRow * H;
  const int n = int(K - b0 < kEntries ? K - b0 : kEntries);
  // This block's channels [dBegin, dEnd): whole 16-channel tiles.
  const int tiles16 = int(D / 16), per = (tiles16 + int(gridDim.z) - 1) / int(gridDim.z);
  const int cBegin = int(blockIdx.z) * per < tiles16 ? int(blockIdx.z) * per : tiles16;
  const int cEnd = cBegin + per < tiles16 ? cBegin + per : tiles16;
  const int dBegin = 16 * cBegin, dEnd = 16 * cEnd;
  const bool first = blockIdx.z == 0; // writes the block's psum
  if (!blockEntries(jl, n, sc.ids + local0 * K + b0)) {
    for (long long h = threadIdx.x; first && h < H; h += blockDim.x)
      sc.psum[(local0 + h) * nb + b] = 0.0f;
    return;
  }
  if (cBegin == cEnd)
    return; // more ranges than tiles (block-uniform)
  for (long long h = threadIdx.x; h < H; h += blockDim.x) {
    float m = -1e30f; // the walk's running max after block b
    for (long long i = 0; i <= b; ++i)
      m = dsc_sparse::foldMax(m, sc.blockMax[(local0 + h) * nb + i]);
    mRun[h] = m;
  }
  __syncthreads();
  for (int i = threadIdx.x; i < hPad * kEntries; i += blockDim.x) {
    const int h = i / kEntries, e = i - h * kEntries;
    const float pe = h < H && e < n && jl[e] >= 0
                         ? expf(__fsub_rn(sc.logits[(local0 + h) * K + b0 + e], mRun[h]))
                         : 0.0f;
    prob[i] = pe;
    ps[h * kPld + e] = bf16FromFloat(pe);
  }
  dsc_sparse::stageBlock(vs, jl, kEntries, d, ld, rows, R, l, kvPool, cBegin,
                         cEnd); // synchronises first
  __syncthreads();
  for (long long h = threadIdx.x; first && h < H; h += blockDim.x) { // psum in entry order
    float psum = 0.0f;
    for (int e = 0; e < n; ++e)
      psum = __fadd_rn(psum, prob[h * kEntries + e]);
    sc.psum[(local0 + h) * nb + b] = psum;
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  if (warp * 16 >= H)
    return;
  const int h0 = warp * 16, mi = lane >> 3, r8 = lane & 7;
  // The A fragments of bf16(P): rows h0.. of ps, entries 16 kt ...
  unsigned pa[4][4];
#pragma unroll
  for (int kt = 0; kt < 4; ++kt)
    ldmatrix4(pa[kt], ps + (h0 + r8 + (mi & 1) * 8) * kPld + 16 * kt + (mi >> 1) * 8);
  // pv_b = bf16(P) V, 128 channels (16 n-tiles) at a time.
  constexpr int kChunk = dsc::abi::kTcPvChannels;
  static_assert(kChunk == 128, "o[16][4]: 16 n-tiles of 8 channels");
  for (int d0 = dBegin; d0 < dEnd; d0 += kChunk) {
    float o[16][4];
#pragma unroll
    for (int j = 0; j < 16; ++j)
      o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) {
      const unsigned short *vRow = vs + (16 * kt + r8 + (mi & 1) * 8) * ld + d0 + (mi >> 1) * 8;
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        if (d0 + 16 * jj >= dEnd)
          break;
        unsigned bv[4];
        ldmatrix4Trans(bv, vRow + 16 * jj);
        mmaBf16(o[2 * jj], pa[kt], bv[0], bv[1]);
        mmaBf16(o[2 * jj + 1], pa[kt], bv[2], bv[3]);
      }
    }
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const long long h = h0 + g + 8 * u;
      if (h >= H)
        continue;
      float *pv = sc.pv + ((local0 + h) * nb + b) * D + d0 + 2 * t;
#pragma unroll
      for (int j = 0; j < 16; ++j)
        if (d0 + 8 * j < dEnd)
          *reinterpret_cast<float2 *>(pv + 8 * j) = make_float2(o[j][2 * u], o[j][2 * u + 1]);
    }
  }
}

#endif // DSC_CODEGEN_KERNELS_SPARSE_ATTENTION_TC_CUH
