//===- wg_gemv.cuh - Warpgroup GEMV tiles: wgmma, weights in registers -===//
//
// What: the decode GEMV core for block-scaled FP8 and FP4 weights (W [N, K]
// E4M3 with UE8M0 scales [ceil(N/32), K/32]; W [N, K/2] E2M1 with scales
// [N, K/32]) times act_quant activations (E4M3 codes + fp32 scales per 32 K,
// gemv.cuh quantizeBlocks) on Hopper's warpgroup tensor-core instruction
// wgmma.mma_async, with the weights as its register A operand (the lane and
// slot tiles' mma.sync widen both operands every time and were issue-bound
// at ~144 instructions per 16 weight bytes).
// Why f16 and not E4M3 wgmma: Hopper's FP8 wgmma sums a k32 tile with a
// truncating accumulator of ~14 bits (DeepGEMM's reason to promote), which
// moved outputs by up to 5 bf16 steps against the reference on FP8 weights
// and failed every golden gate (session 14, docs/perf.md); the f16 wgmma
// sums exact f16 products in fp32 like the lanes' mma.sync, and E4M3 (and
// E2M1 * 2^-6) values are exact in f16.
// Layout: a warpgroup (4 warps, 128 threads) computes 64 weight rows n0 ..
// n0 + 63 by up to 8 activation rows over a K range, two chained
// m64n8k16 f16 wgmmas per 32-K scale block. Thread (warp w, g = lane / 4,
// t = lane % 4) feeds rows n0 + 16w + g and + 8 with the 8 elements 8t ..
// 8t + 7 of each block (FP8: one 8-byte load per row; FP4: one 4-byte load
// and numerics e2m1x8ToE4m3Scaled, exact E4M3 bytes of value * 2^-6), widened
// to f16 pairs (cvt.rn.f16x2.e4m3x2, exact). Pair c (c = 0..3) of a row goes
// to k slots 8c + 2t, 8c + 2t + 1 (the A fragment's: a0/a1 hold k 2t, 2t + 1
// of rows g / g + 8, a2/a3 k 8 + 2t, ...; wgmma h = c / 2 takes slots 16h ..
// 16h + 15), so element e of a block sits in k slot slotOf(e): FP8 e = 8t +
// 2c + i -> 8c + 2t + i; FP4, whose even and odd nibbles split, e = 8t + 4q +
// 2i + h -> 8 (2h + q) + 2t + i. The activations are the B operand in shared
// memory, staged once per item as f16 in the same k order (stage(): K-major,
// no swizzle; block jj at 512 * jj, its four 8 x 16-byte core matrices 128
// bytes apart, activation row c at 16 * c), their scales after the codes
// ([blocks][8] fp32).
// Numerics: a block's first wgmma starts from a zero accumulator (scale-d =
// 0), the second adds to it, so D is one block's partial (exact products in
// fp32), and acc += (partial * a_s) * w_s in fp32 as the CPU reference (FP4:
// a_s * 64 carries the 2^-6 back, exact); each warpgroup sums its blocks in
// K order, the kGroups warpgroups of a block take contiguous K ranges and
// are added in their order, K splits go through splitKReduce:
// deterministic, and an activation row never meets another (each D column
// depends on its own B column only), so a row's bytes do not depend on the
// call's other rows.
// Invariants: K % 128 == 0 (items take whole steps of kStep blocks per
// warpgroup), an item stages at most dsc::abi::kWgMaxStageBlocks blocks,
// weight rows 16-byte aligned, scale rows 4-byte aligned; launched with
// dsc::abi::kWgThreads threads and dsc::abi::wgSharedBytes(blocks, mats)
// bytes of dynamic shared memory.
// Bound: the weight bytes at memory bandwidth.
// Include after common.cuh and gemv.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_WG_GEMV_CUH
#define DSC_CODEGEN_KERNELS_WG_GEMV_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_wg {

constexpr int kRows = dsc::abi::kWgTileRows;   ///< weight rows per warpgroup
constexpr int kCols = dsc::abi::kWgTileCols;   ///< activation rows per item
constexpr int kGroups = dsc::abi::kWgGroups;   ///< warpgroups per block
constexpr int kStep = dsc::abi::kWgStepBlocks; ///< K blocks per step
constexpr int kCodeBytes = 64 * kCols;         ///< staged f16 codes per K block
constexpr float kFp4Unscale = kE2m1ToE4m3ScaledUnscale;

/// The wgmma k slot of element e (0..31) of a 32-element block (header).
__device__ __forceinline__ int slotOf(bool fp4, int e) {
  const int t = e >> 3;
  return fp4 ? 8 * (2 * (e & 1) + ((e >> 2) & 1)) + 2 * t + ((e >> 1) & 1)
             : 8 * ((e >> 1) & 3) + 2 * t + (e & 1);
}

/// Staged activations of one item: `blocks` K blocks from absolute block j0.
struct Staged {
  const unsigned char *codes; ///< f16 [blocks][4 core matrices][8 rows][8]
  const float *scales;        ///< [blocks][8]
};

/// Where quantizeBlocksTo's E4M3 code goes when staged as f16: `*p = code`
/// stores the code's exact f16.
struct HalfOfCode {
  unsigned short *p;
  __device__ __forceinline__ HalfOfCode &operator*() { return *this; }
  __device__ __forceinline__ void operator=(unsigned char code) {
    *p = (unsigned short)(dsc_gemv::e4m3x2ToHalf2(code) & 0xffffu);
  }
};

/// Stages activation rows m0 .. m0 + rows - 1 (rows <= kCols), K blocks [j0,
/// j0 + blocks), into smem: act_quant of x [., K] here when x != null, else
/// copied from the global codes [., K] / scales [., K/32]. Rows >= `rows` are
/// left as they are (their D columns are never read). Ends with the async
/// proxy fence and a barrier, so wgmma may read it. All threads must call it.
template <bool kFp4>
__device__ Staged stage(const unsigned short *x, const unsigned char *gCodes,
                        const float *gScales, long long K, long long m0, int rows, long long j0,
                        long long blocks, unsigned char *smem) {
  unsigned char *codes = smem;
  float *scales = reinterpret_cast<float *>(smem + blocks * kCodeBytes);
  const long long kb = K / 32;
  auto codeAt = [&](long long jj, int r, int slot) { // the f16 of k slot `slot`
    return reinterpret_cast<unsigned short *>(codes + jj * kCodeBytes + (slot >> 3) * 128 +
                                              r * 16 + (slot & 7) * 2);
  };
  if (x) {
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5;
    for (int r = 0; r < rows; ++r)
      dsc_gemv::quantizeBlocksTo(
          x + (m0 + r) * K + j0 * 32, blocks, warp, warps,
          [&](long long jj, int e) { return HalfOfCode{codeAt(jj, r, slotOf(kFp4, e))}; },
          [&](long long jj) { return scales + jj * kCols + r; });
  } else {
    // One unit = 8 elements 8t .. 8t + 7 of (row r, block jj): four f16
    // pairs, pair c to k slots 8c + 2t, + 1.
    const long long units = (long long)rows * blocks * 4;
    for (long long u = threadIdx.x; u < units; u += blockDim.x) {
      const int t = int(u & 3), r = int(u / (blocks * 4));
      const long long jj = (u >> 2) % blocks;
      const uint2 v = *reinterpret_cast<const uint2 *>(gCodes + (m0 + r) * K + (j0 + jj) * 32 +
                                                       8 * t);
      unsigned h[4];
      dsc_gemv::e4m3x4ToHalf2x2(kFp4 ? __byte_perm(v.x, v.y, 0x6420) : v.x, h[0], h[1]);
      dsc_gemv::e4m3x4ToHalf2x2(kFp4 ? __byte_perm(v.x, v.y, 0x7531) : v.y, h[2], h[3]);
#pragma unroll
      for (int c = 0; c < 4; ++c)
        *reinterpret_cast<unsigned *>(codeAt(jj, r, 8 * c + 2 * t)) = h[c];
      if (t == 0)
        scales[jj * kCols + r] = gScales[(m0 + r) * kb + j0 + jj];
    }
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  return Staged{codes, scales};
}

/// The shared-memory matrix descriptor of 16 k slots of a staged K block (no
/// swizzle; both byte offsets 128: between the two core matrices along K,
/// and along N, which a single 8-column group never steps).
__device__ __forceinline__ unsigned long long descriptor(const unsigned char *block) {
  const unsigned addr = (unsigned)__cvta_generic_to_shared(block);
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (8ull << 16) | (8ull << 32);
}

/// d = A x B (first) or d += A x B for one 64 x 8 x 16 f16 tile, fp32
/// accumulation (scale-d = 0 / 1).
__device__ __forceinline__ void wgmmaF16First(float (&d)[4], const unsigned (&a)[4],
                                              unsigned long long desc) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %9, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n"
               "}\n"
               : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(0));
}
__device__ __forceinline__ void wgmmaF16Add(float (&d)[4], const unsigned (&a)[4],
                                            unsigned long long desc) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %9, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(1));
}
__device__ __forceinline__ void wgmmaFence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}
__device__ __forceinline__ void wgmmaCommitAndWait() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
  asm volatile("wgmma.wait_group.sync.aligned 0;" ::: "memory");
}
/// Keeps the compiler from moving reads of an accumulator above the wait.
__device__ __forceinline__ void fenceOperand(float &v) { asm volatile("" : "+f"(v)::"memory"); }

/// Streamed weight loads (read-only; the L2 fetches the 256-byte block around
/// a miss, the L1 keeps the sector, whose other half the next block reads).
__device__ __forceinline__ unsigned loadWeight4(const unsigned char *p) {
  unsigned v;
  asm("ld.global.nc.L2::256B.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ uint2 loadWeight8(const unsigned char *p) {
  uint2 v;
  asm("ld.global.nc.L2::256B.v2.u32 {%0, %1}, [%2];" : "=r"(v.x), "=r"(v.y) : "l"(p));
  return v;
}

/// One warpgroup's 64 x 8 tile over a K range for kMats weight matrices that
/// share the activations (the MoE's gate and up projections): w[x][h] is the
/// weight row this thread feeds (h = 0: n0 + 16w + g, h = 1: + 8; K/2 bytes
/// FP4, K bytes FP8), s[x][h] its scale row (FP4: [N, K/32]; FP8: the 32-row
/// group's, the same for both h). load(j0) first, then run(j0, j1).
template <bool kFp4, int kMats> struct Tile {
  const unsigned char *w[kMats][2];
  const unsigned char *s[kMats][2];
  struct Step {
    unsigned wv[kMats][2][kStep][kFp4 ? 1 : 2];
    unsigned sv[kMats][2]; // the scale bytes of blocks j .. j + 3
  };
  Step cur;

  __device__ __forceinline__ void load(long long j, Step &st) const {
    const int t = threadIdx.x & 3;
#pragma unroll
    for (int x = 0; x < kMats; ++x)
#pragma unroll
      for (int h = 0; h < 2; ++h) {
#pragma unroll
        for (int b = 0; b < kStep; ++b) {
          if (kFp4) {
            st.wv[x][h][b][0] = loadWeight4(w[x][h] + (j + b) * 16 + 4 * t);
          } else {
            const uint2 v = loadWeight8(w[x][h] + (j + b) * 32 + 8 * t);
            st.wv[x][h][b][0] = v.x;
            st.wv[x][h][b][kFp4 ? 0 : 1] = v.y;
          }
        }
        st.sv[x][h] = (kFp4 || h == 0) ? __ldg(reinterpret_cast<const unsigned *>(s[x][h] + j))
                                       : st.sv[x][0];
      }
  }

  /// acc[x][i] += this thread's sums over blocks [j0, j1) (multiples of
  /// kStep; `cur` holds load(j0)): i = 0, 1 -> row n0 + 16w + g, activation
  /// rows 2t, 2t + 1; i = 2, 3 -> row + 8. kOneCol: only activation row 0 is
  /// real (i = 1, 3 are left alone). `st` is the staging of absolute block jBase.
  template <bool kOneCol>
  __device__ __forceinline__ void run(const Staged &st, long long jBase, long long j0,
                                      long long j1, float (&acc)[kMats][4]) {
    const int t = threadIdx.x & 3;
    for (long long j = j0; j < j1; j += kStep) {
      Step nxt;
      if (j + kStep < j1)
        load(j + kStep, nxt);
      // The step's blocks in waves of kWave wgmmas per matrix (two matrices:
      // two waves, so that A fragments and accumulators fit the registers).
      constexpr int kWave = kMats == 1 ? kStep / 2 : kStep / 4;
#pragma unroll
      for (int w0 = 0; w0 < kStep; w0 += kWave) {
        float d[kMats][kWave][4];
        unsigned a[kMats][kWave][2][4]; // [.][.][wgmma h][fragment]
#pragma unroll
        for (int x = 0; x < kMats; ++x)
#pragma unroll
          for (int b = 0; b < kWave; ++b) {
            unsigned hp[2][4]; // f16 pairs c = 0..3 of rows g, g + 8
#pragma unroll
            for (int r = 0; r < 2; ++r) {
              const unsigned *v = cur.wv[x][r][w0 + b];
              if (kFp4) {
                const E4m3Pair p = e2m1x8ToE4m3Scaled(v[0]);
                dsc_gemv::e4m3x4ToHalf2x2(p.even, hp[r][0], hp[r][1]);
                dsc_gemv::e4m3x4ToHalf2x2(p.odd, hp[r][2], hp[r][3]);
              } else {
                dsc_gemv::e4m3x4ToHalf2x2(v[0], hp[r][0], hp[r][1]);
                dsc_gemv::e4m3x4ToHalf2x2(v[kFp4 ? 0 : 1], hp[r][2], hp[r][3]);
              }
            }
#pragma unroll
            for (int h = 0; h < 2; ++h) {
              a[x][b][h][0] = hp[0][2 * h];
              a[x][b][h][1] = hp[1][2 * h];
              a[x][b][h][2] = hp[0][2 * h + 1];
              a[x][b][h][3] = hp[1][2 * h + 1];
            }
          }
        unsigned long long desc[kWave][2];
#pragma unroll
        for (int b = 0; b < kWave; ++b)
#pragma unroll
          for (int h = 0; h < 2; ++h)
            desc[b][h] = descriptor(st.codes + (j - jBase + w0 + b) * kCodeBytes + 256 * h);
        wgmmaFence();
#pragma unroll
        for (int b = 0; b < kWave; ++b)
#pragma unroll
          for (int x = 0; x < kMats; ++x) {
            wgmmaF16First(d[x][b], a[x][b][0], desc[b][0]);
            wgmmaF16Add(d[x][b], a[x][b][1], desc[b][1]);
          }
        wgmmaCommitAndWait();
#pragma unroll
        for (int x = 0; x < kMats; ++x)
#pragma unroll
          for (int b = 0; b < kWave; ++b)
#pragma unroll
            for (int i = 0; i < 4; ++i)
              fenceOperand(d[x][b][i]);
#pragma unroll
        for (int b = 0; b < kWave; ++b) {
          const float *as = st.scales + (j - jBase + w0 + b) * kCols + 2 * t;
          const float u = kFp4 ? kFp4Unscale : 1.0f;
          const float as0 = as[0] * u, as1 = kOneCol ? 0.0f : as[1] * u;
#pragma unroll
          for (int x = 0; x < kMats; ++x) {
            const float ws0 = ue8m0ToFloat((unsigned char)(cur.sv[x][0] >> (8 * (w0 + b))));
            const float ws1 = ue8m0ToFloat((unsigned char)(cur.sv[x][1] >> (8 * (w0 + b))));
            acc[x][0] = __fadd_rn(acc[x][0], __fmul_rn(__fmul_rn(d[x][b][0], as0), ws0));
            acc[x][2] = __fadd_rn(acc[x][2], __fmul_rn(__fmul_rn(d[x][b][2], as0), ws1));
            if (!kOneCol) {
              acc[x][1] = __fadd_rn(acc[x][1], __fmul_rn(__fmul_rn(d[x][b][1], as1), ws0));
              acc[x][3] = __fadd_rn(acc[x][3], __fmul_rn(__fmul_rn(d[x][b][3], as1), ws1));
            }
          }
        }
      }
      if (j + kStep < j1)
        cur = nxt;
    }
  }
};

/// The K range [g0, g1) of warpgroup `group` within an item's [k0, k1)
/// (contiguous, whole steps).
__device__ __forceinline__ void groupRange(long long k0, long long k1, int group, long long &g0,
                                           long long &g1) {
  const long long per = ((k1 - k0 + kGroups - 1) / kGroups + kStep - 1) / kStep * kStep;
  g0 = k0 + group * per < k1 ? k0 + group * per : k1;
  g1 = g0 + per < k1 ? g0 + per : k1;
}

/// Adds the other warpgroups' acc into warpgroup 0's, in group order, through
/// `comb` (dsc::abi::wgCombineBytes(kMats)); afterwards warpgroup 0 holds the
/// item's sums. All threads must call it.
template <int kMats>
__device__ __forceinline__ void combineGroups(float (&acc)[kMats][4], float *comb) {
  if (kGroups == 1)
    return;
  const int group = threadIdx.x >> 7, tid = threadIdx.x & 127;
  if (group > 0)
#pragma unroll
    for (int x = 0; x < kMats; ++x)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        comb[((group - 1) * kMats * 4 + x * 4 + i) * 128 + tid] = acc[x][i];
  __syncthreads();
  if (group == 0)
    for (int gg = 1; gg < kGroups; ++gg)
#pragma unroll
      for (int x = 0; x < kMats; ++x)
#pragma unroll
        for (int i = 0; i < 4; ++i)
          acc[x][i] = __fadd_rn(acc[x][i], comb[((gg - 1) * kMats * 4 + x * 4 + i) * 128 + tid]);
}

/// One item of kPasses tiles whose weight rows are set (tile.w, tile.s),
/// sharing the activations: the first tile's first weights are requested,
/// the activation rows m0 .. m0 + rows - 1 of K blocks [k0, k1) staged (after
/// a barrier: the previous item's readers are done), each warpgroup runs its
/// share of the range tile after tile (acc[p * kMats + x]: tile p, matrix x)
/// and the groups are combined: the item's sums end in warpgroup 0's acc.
/// Two passes of one matrix instead of one of two where a matrix's step
/// would not fit the registers (FP8: 8 bytes per row and block). Uses
/// dsc::abi::wgSharedBytes(k1 - k0, kPasses * kMats) bytes of smem. All
/// threads must call it. kOneRow: rows == 1 always (only that tile code).
template <bool kFp4, int kMats, int kPasses, bool kOneRow = false>
__device__ __forceinline__ void tileItem(Tile<kFp4, kMats> (&tiles)[kPasses],
                                         const unsigned short *x, const unsigned char *gCodes,
                                         const float *gScales, long long K, long long m0,
                                         int rows, long long k0, long long k1,
                                         unsigned char *smem,
                                         float (&acc)[kPasses * kMats][4]) {
  long long g0, g1;
  groupRange(k0, k1, threadIdx.x >> 7, g0, g1);
  if (g0 < g1)
    tiles[0].load(g0, tiles[0].cur); // the weight stream starts before the staging
  __syncthreads();
  const Staged st = stage<kFp4>(x, gCodes, gScales, K, m0, rows, k0, k1 - k0, smem);
#pragma unroll
  for (int xi = 0; xi < kPasses * kMats; ++xi)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      acc[xi][i] = 0.0f;
  if (g0 < g1) {
#pragma unroll
    for (int p = 0; p < kPasses; ++p) {
      if (p > 0)
        tiles[p].load(g0, tiles[p].cur);
      float(&part)[kMats][4] = *reinterpret_cast<float(*)[kMats][4]>(acc[p * kMats]);
      if (kOneRow || rows == 1)
        tiles[p].template run<true>(st, k0, g0, g1, part);
      else
        tiles[p].template run<false>(st, k0, g0, g1, part);
    }
  }
  combineGroups<kPasses * kMats>(
      acc, reinterpret_cast<float *>(smem + dsc::abi::wgSharedBytes(k1 - k0, 0)));
}

/// This thread's two weight rows of the tile at n0 (n0 + 16w + g, + 8),
/// clamped to the last of N (computed, not written).
__device__ __forceinline__ void threadRows(long long n0, long long N, long long &r0,
                                           long long &r1) {
  const long long r = n0 + 16 * ((threadIdx.x >> 5) & 3) + ((threadIdx.x & 31) >> 2);
  r0 = r < N ? r : N - 1;
  r1 = r + 8 < N ? r + 8 : N - 1;
}

/// The warpgroup GEMV/GEMM: y[m, n] = bf16(sum) for x [M, K] and W [N, K]
/// (FP8) or [N, K/2] (kFp4); one block per item (64 weight rows x 8
/// activation rows x one of `splits` K ranges of whole kGroups * kStep
/// blocks), grid-strided; splits > 1: fp32 partials [splits, M, N] for
/// dsc_gemv::splitKReduce. x != null: the block act_quants its rows and K
/// range while staging, else codes/scales are global. The signature of
/// DSC_GEMV_QUANTIZED_ENTRY.
template <bool kFp4>
__device__ void wgGemv(const unsigned short *x, const unsigned char *gCodes, const float *gScales,
                       long long M, long long K, const unsigned char *w,
                       const unsigned char *wScale, long long N, unsigned short *y,
                       long long splits, float *partial) {
  extern __shared__ __align__(1024) unsigned char wgSmem[];
  const int warp = (threadIdx.x >> 5) & 3, lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long kb = K / 32, rowBytes = kFp4 ? K / 2 : K;
  const long long nTiles = (N + kRows - 1) / kRows, mTiles = (M + kCols - 1) / kCols;
  const long long unit = kStep * kGroups;
  const long long perSplit = ((kb + splits - 1) / splits + unit - 1) / unit * unit;
  for (long long item = blockIdx.x; item < nTiles * mTiles * splits; item += gridDim.x) {
    const long long tile = item / splits, split = item - tile * splits;
    const long long k0 = split * perSplit < kb ? split * perSplit : kb;
    const long long k1 = k0 + perSplit < kb ? k0 + perSplit : kb;
    const long long n0 = (tile / mTiles) * kRows, m0 = (tile % mTiles) * kCols;
    const int rows = (int)(M - m0 < kCols ? M - m0 : kCols);
    long long r0, r1;
    threadRows(n0, N, r0, r1);
    Tile<kFp4, 1> tl[1];
    tl[0].w[0][0] = w + r0 * rowBytes;
    tl[0].w[0][1] = w + r1 * rowBytes;
    tl[0].s[0][0] = wScale + (kFp4 ? r0 : r0 / 32) * kb;
    tl[0].s[0][1] = wScale + (kFp4 ? r1 : r1 / 32) * kb;
    float acc[1][4];
    tileItem<kFp4, 1, 1>(tl, x, gCodes, gScales, K, m0, rows, k0, k1, wgSmem, acc);
    if ((threadIdx.x >> 7) == 0) {
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const long long m = m0 + 2 * t + (i & 1), n = n0 + 16 * warp + g + (i >= 2 ? 8 : 0);
        if (m < m0 + rows && n < N) {
          if (splits > 1)
            partial[(split * M + m) * N + n] = acc[0][i];
          else
            y[m * N + n] = bf16FromFloat(acc[0][i]);
        }
      }
    }
  }
}

} // namespace dsc_wg

/// A warpgroup GEMV entry with the signature of DSC_GEMV_QUANTIZED_ENTRY
/// (the adapters' quantizedGemv launches `<name>` for `<prefix>_fast`'s `_wg`
/// twin with dsc::abi::kWgThreads threads); kFp4: the weight format.
#define DSC_WG_GEMV_ENTRY(name, kFp4)                                                          \
  DSC_KERNEL void __launch_bounds__(dsc::abi::kWgThreads, 2)                                   \
      name(const unsigned short *x, const unsigned char *codes, const float *scales,           \
           long long M, long long K, const unsigned char *w, const unsigned char *wScale,      \
           long long N, unsigned short *y, long long splits, float *partial) {                 \
    DSC_KERNEL_PROLOGUE();                                                                     \
    dsc_wg::wgGemv<kFp4>(x, codes, scales, M, K, w, wScale, N, y, splits, partial);            \
  }

#endif // DSC_CODEGEN_KERNELS_WG_GEMV_CUH
