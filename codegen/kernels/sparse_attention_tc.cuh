//===- sparse_attention_tc.cuh - Tensor-core MQA split-KV sparse attention ===//
//
// What: CudaOptions::tensorCoreAttention (`--cuda-attention tc`), the decode
// and prefill attention of sparse_attention.cu's split-KV path with both
// matrix products on the tensor cores, every head of a row at once (MQA: the
// heads share their KV entries, so a 64-entry block is read and decoded once
// for all of them, where the MQA kernels decode it once per group of 8 heads
// and twice per block, once for the logits and once for the PV).
//   dsc_sparse_attention_split_tc: one block per (query row, 64-entry block
//     b), kTcThreads threads. A block with no visible entry writes m_b =
//     -inf (the merge skips it) and stops. Stages the row's queries [H, D]
//     and the block's entries [64, D] (stageBlock: exact bf16) in shared
//     memory, rows padded by kPad elements (conflict-free ldmatrix); warp w
//     owns heads 16w .. 16w + 15:
//       S = Q V^T (mma m16n8k16 bf16, fp32 accumulation; the products are
//       exact, the sum is the tensor core's), logit = fp32(S) * scale, -1
//       entries -inf; m_b = max(-1e30, the block's logits) per head;
//       p = exp(logit - m_b); psum_b = the fp32 sum of p (a fixed order);
//       pv_b = bf16(p) V on the tensor cores (P straight from S's
//       accumulator registers, V through ldmatrix.trans) -> the split
//       scratch's blockMax, psum, pv (sparse_attention.cu SplitScratch).
//   dsc_sparse_attention_merge_tc: one block per (row, head), over the blocks
//     with an m_b > -inf: m = the fold of the m_b, w_b = exp(m_b - m), denom = sum_b psum_b w_b + exp(sink - m),
//     o = bf16(sum_b pv_b w_b / denom) in block order, then emit() (the RoPE
//     epilogue of the fused `attention` kernel).
// Numerics: the flash-decoding split (each block's probabilities against its
// own maximum, rescaled in the merge) instead of the walk's running maximum,
// the logits' sum in the tensor core's order: not byte-identical to the other
// paths, inside the GPU gates (docs/cuda-kernels-attention.md), and
// deterministic (fixed orders everywhere; a row's bytes never depend on the
// other rows of the call or on the launch's row chunking).
// Invariants (the adapter checks and else takes the MQA path; the kernel
// traps): D % 16 == 0, H <= kTcMaxHeads; dynamic shared memory
// tcStageBytes(H, D) (dsc/abi/LaunchShapes.h).
// Bound: the block's KV bytes and the queries at L2 latency; the math is
// 4 * H * 64 * D flops per block, under a microsecond of tensor-core time.
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

DSC_KERNEL void __launch_bounds__(dsc::abi::kTcThreads) dsc_sparse_attention_split_tc(
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
  const int hPad = int((H + 15) / 16) * 16, ld = int(D) + kPad, d = int(D);
  extern __shared__ __align__(16) unsigned short tcSmem[];
  unsigned short *qs = tcSmem;                          // [hPad, ld]
  unsigned short *vs = tcSmem + (long long)hPad * ld;   // [kEntries, ld]
  __shared__ long long jl[kEntries];
  const long long localRow = blockIdx.x, s = rowBase + localRow, b = blockIdx.y;
  const long long b0 = b * kEntries;
  const int n = int(K - b0 < kEntries ? K - b0 : kEntries);
  for (int e = threadIdx.x; e < kEntries; e += blockDim.x) {
    long long j = -1;
    if (e < n) {
      j = sparseEntry(s, b0 + e, call.startPos, call.chunk, call.ringRows, window, windowWidth,
                      topk, k);
      j = j >= call.nKv ? -1 : j;
    }
    jl[e] = j;
  }
  const long long local0 = localRow * H; // the row's first (row, head)
  // A block of invisible entries only marks itself for the merge.
  if (!__syncthreads_or(threadIdx.x < kEntries && jl[threadIdx.x] >= 0)) {
    for (long long h = threadIdx.x; h < H; h += blockDim.x) {
      sc.blockMax[(local0 + h) * nb + b] = negInf();
      sc.psum[(local0 + h) * nb + b] = 0.0f;
    }
    return;
  }
  stageQueries(qs, q, s, int(H), hPad, d, ld);
  dsc_sparse::stageBlock(vs, jl, kEntries, d, ld, rows, R, l, kvPool); // synchronises first
  __syncthreads();
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, g = lane >> 2, t = lane & 3;
  if (warp * 16 >= H)
    return;
  const int h0 = warp * 16;
  // S = Q V^T: 8 n-tiles of 8 entries; lane row/column of its ldmatrix address.
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
  // Logits, the block maximum per head (rows g and g + 8 of the tile), p.
  const float scale = call.scale;
  float mx[2] = {-1e30f, -1e30f};
#pragma unroll
  for (int j = 0; j < 8; ++j)
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const int e = 8 * j + 2 * t + (i & 1);
      const float v = jl[e] < 0 ? negInf() : __fmul_rn(acc[j][i], scale);
      acc[j][i] = v;
      mx[i >> 1] = mx[i >> 1] < v ? v : mx[i >> 1];
    }
#pragma unroll
  for (int u = 0; u < 2; ++u)
#pragma unroll
    for (int off = 1; off <= 2; off <<= 1) {
      const float o = __shfl_xor_sync(0xffffffffu, mx[u], off);
      mx[u] = mx[u] < o ? o : mx[u];
    }
  float ps[2] = {0.0f, 0.0f};
  unsigned pa[4][4]; // bf16(p) as the A operand of P V: k-tile kt = entries 16 kt ..
#pragma unroll
  for (int j = 0; j < 8; ++j) {
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float pe = expf(__fsub_rn(acc[j][i], mx[i >> 1])); // -inf logits: 0
      acc[j][i] = pe;
      ps[i >> 1] = __fadd_rn(ps[i >> 1], pe);
    }
    pa[j >> 1][(j & 1) * 2] = bf16x2FromFloats(acc[j][0], acc[j][1]);     // row g
    pa[j >> 1][(j & 1) * 2 + 1] = bf16x2FromFloats(acc[j][2], acc[j][3]); // row g + 8
  }
#pragma unroll
  for (int u = 0; u < 2; ++u) {
    ps[u] = __fadd_rn(ps[u], __shfl_xor_sync(0xffffffffu, ps[u], 1));
    ps[u] = __fadd_rn(ps[u], __shfl_xor_sync(0xffffffffu, ps[u], 2));
  }
  if (t == 0)
#pragma unroll
    for (int u = 0; u < 2; ++u) {
      const long long h = h0 + g + 8 * u;
      if (h < H) {
        sc.blockMax[(local0 + h) * nb + b] = mx[u];
        sc.psum[(local0 + h) * nb + b] = ps[u];
      }
    }
  // pv_b = bf16(P) V, 128 channels (16 n-tiles) at a time.
  constexpr int kChunk = 128;
  for (int d0 = 0; d0 < d; d0 += kChunk) {
    float o[16][4];
#pragma unroll
    for (int j = 0; j < 16; ++j)
      o[j][0] = o[j][1] = o[j][2] = o[j][3] = 0.0f;
#pragma unroll
    for (int kt = 0; kt < 4; ++kt) {
      const unsigned short *vRow = vs + (16 * kt + r8 + (mi & 1) * 8) * ld + d0 + (mi >> 1) * 8;
      // The A fragment: rows g / g + 8, entries 16 kt + 2t (+1) and + 8.
      const unsigned a[4] = {pa[kt][0], pa[kt][1], pa[kt][2], pa[kt][3]};
#pragma unroll
      for (int jj = 0; jj < 8; ++jj) {
        if (d0 + 16 * jj >= d)
          break;
        unsigned bv[4];
        ldmatrix4Trans(bv, vRow + 16 * jj);
        mmaBf16(o[2 * jj], a, bv[0], bv[1]);
        mmaBf16(o[2 * jj + 1], a, bv[2], bv[3]);
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
        if (d0 + 8 * j < d)
          *reinterpret_cast<float2 *>(pv + 8 * j) = make_float2(o[j][2 * u], o[j][2 * u + 1]);
    }
  }
}

DSC_KERNEL void dsc_sparse_attention_merge_tc(
    const __grid_constant__ dsc::abi::SparseAttentionParams p,
    const __grid_constant__ dsc::abi::RopeParams ropeStep, long long H, long long D, long long K,
    long long rowsH, float *scratch, const float *sink, const long long *callState,
    const float *ropeInvFreq, unsigned short *o, long long rowBase) {
  DSC_KERNEL_PROLOGUE();
  (void)p;
  const long long nb = (K + dsc::abi::kSparseBlock - 1) / dsc::abi::kSparseBlock;
  const dsc_sparse::SplitScratch sc = dsc_sparse::splitScratch(scratch, rowsH, K, nb, D);
  extern __shared__ float mergeSmem[]; // acc [D], then the block weights [nb]
  float *acc = mergeSmem, *w = mergeSmem + D;
  const long long local = blockIdx.x, sh = rowBase * H + local, s = sh / H, h = sh % H;
  const float *blockMax = sc.blockMax + local * nb, *psum = sc.psum + local * nb;
  // Every thread folds the maximum (the same operations: the same value).
  // Blocks of invisible entries (m_b = -inf) wrote no pv: weight 0, not read.
  float m = -1e30f;
  for (long long b = 0; b < nb; ++b)
    m = dsc_sparse::foldMax(m, blockMax[b]);
  for (long long b = threadIdx.x; b < nb; b += blockDim.x)
    w[b] = blockMax[b] == negInf() ? 0.0f : expf(__fsub_rn(blockMax[b], m));
  __syncthreads();
  float denom = 0.0f;
  for (long long b = 0; b < nb; ++b) // block order
    if (w[b] != 0.0f)
      denom = __fadd_rn(denom, __fmul_rn(psum[b], w[b]));
  denom = __fadd_rn(denom, expf(__fsub_rn(sink[h], m)));
  const float *pv = sc.pv + local * nb * D;
  // kPer channels per thread at a time (d0 + u * blockDim), kAhead blocks'
  // values loaded before they are summed (in block order).
  constexpr int kPer = 4, kAhead = 8;
  for (long long d0 = threadIdx.x; d0 < D; d0 += kPer * blockDim.x) {
    float a[kPer] = {};
    for (long long bb = 0; bb < nb; bb += kAhead) {
      float x[kAhead][kPer];
#pragma unroll
      for (int u = 0; u < kAhead; ++u)
#pragma unroll
        for (int v = 0; v < kPer; ++v) {
          const long long dd = d0 + v * blockDim.x;
          x[u][v] = bb + u < nb && w[bb + u] != 0.0f && dd < D ? pv[(bb + u) * D + dd] : 0.0f;
        }
#pragma unroll
      for (int u = 0; u < kAhead; ++u)
        if (bb + u < nb && w[bb + u] != 0.0f)
#pragma unroll
          for (int v = 0; v < kPer; ++v)
            a[v] = __fadd_rn(a[v], __fmul_rn(x[u][v], w[bb + u]));
    }
#pragma unroll
    for (int v = 0; v < kPer; ++v)
      if (d0 + v * blockDim.x < D)
        acc[d0 + v * blockDim.x] = a[v];
  }
  __syncthreads();
  dsc_sparse::emit(acc, denom, D, sh, s, DSC_CALL_START(callState), ropeStep, ropeInvFreq, o);
}

#endif // DSC_CODEGEN_KERNELS_SPARSE_ATTENTION_TC_CUH
