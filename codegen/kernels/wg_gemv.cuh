//===- wg_gemv.cuh - Warpgroup GEMV tiles: wgmma over block-diagonal activations -===//
//
// What: the decode GEMV core for block-scaled FP8 and FP4 weights (W [N, K]
// E4M3 with UE8M0 scales [ceil(N/32), K/32]; W [N, K/2] E2M1 with scales
// [N, K/32]) times act_quant activations (E4M3 codes + fp32 scales per 32 K,
// gemv.cuh quantizeBlocks) on Hopper's warpgroup tensor-core instruction
// wgmma.mma_async m64n8k16 f16, with the weights as its register A operand.
// Why this shape (session 14, docs/perf.md): the weights must be read the
// way the lane tiles read them, 16 bytes per thread with a warp on 8 rows x
// 64 contiguous bytes (stream_probe.cu: 95% of the copy bandwidth; 4-byte
// loads over 16 rows reached 51-69%), and converted with as few
// instructions as possible (the lane tiles' mma.sync widens both operands
// at every step: ~144 instructions per 16 FP4 bytes, issue-bound).
// Layout: a warpgroup (4 warps, 128 threads) computes 64 weight rows n0 ..
// n0 + 63 by up to kItemRows = 2 activation rows over a K range, in steps of
// 4 blocks j .. j + 3. Thread (warp w, g = lane / 4, t = lane % 4) loads block
// j + t of its rows n0 + 16w + g and + 8 whole (FP4 16 bytes, FP8 32),
// widens it to f16 pairs (FP4: numerics e2m1x8ToE4m3Scaled, exact E4M3 of
// value * 2^-6, then cvt.rn.f16x2.e4m3x2, exact) and feeds them as the A
// fragment's k slots 2t, 2t + 1, 8 + 2t, 9 + 2t of eight wgmmas (4 pairs p
// x 2 halves h; element e of the block goes to pair e / 8 of FP4 word or
// FP8 8-byte group e / 8, half (FP4) e % 2 or (FP8) (e / 4) % 2, slot
// offset as stage() writes). So one wgmma's 16 k slots hold four different
// blocks, one per t, and the B operand (shared memory) is block-diagonal:
// column n = 4r + c holds activation row r's block j + c in the slots of t
// = c and zeros elsewhere. The eight wgmmas chain in one accumulator, after
// which D[row][4r + c] is exactly block j + c's partial for activation row r
// (exact f16 products summed in fp32), each thread holding columns 2t, 2t + 1.
// (The E4M3 wgmma was tried first and dropped: Hopper sums its k32 tile in a
// truncating accumulator of ~14 bits, which moved FP8 outputs by up to 5
// bf16 steps and failed every golden gate.)
// Numerics: per block, acc += (partial * a_s) * w_s in fp32 as the CPU
// reference (FP4: a_s * 64 carries the 2^-6 back, exact); each thread sums
// its two blocks' residues in K order, the warpgroups of a block take
// contiguous K ranges and are added in their order, then the four residues
// (two per thread, threads t and t ^ 1) in a fixed order, K splits through
// splitKReduce: deterministic, and an activation row never meets another
// (each D column depends on its own B column), so a row's bytes do not depend
// on the call's other rows.
// Invariants: K % 128 == 0 (whole steps per warpgroup), an item stages at
// most dsc::abi::kWgMaxStageBlocks blocks, weight rows 16-byte aligned,
// scale rows 4-byte aligned; launched with dsc::abi::kWgThreads threads and
// dsc::abi::wgSharedBytes(blocks, mats) bytes of dynamic shared memory.
// Bound: the weight bytes at memory bandwidth.
// Include after common.cuh and gemv.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_WG_GEMV_CUH
#define DSC_CODEGEN_KERNELS_WG_GEMV_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_wg {

constexpr int kRows = dsc::abi::kWgTileRows;     ///< weight rows per warpgroup
constexpr int kCols = dsc::abi::kWgTileCols;     ///< wgmma N: 4 blocks x kItemRows
constexpr int kItemRows = dsc::abi::kWgItemRows; ///< activation rows per item
constexpr int kGroups = dsc::abi::kWgGroups;     ///< warpgroups per block
constexpr int kStep = dsc::abi::kWgStepBlocks;   ///< K blocks per step (4)
/// Staged f16 B operand per step: 8 wgmmas x 16 k x 8 columns.
constexpr int kStepCodeBytes = 8 * 16 * kCols * 2;
constexpr float kFp4Unscale = kE2m1ToE4m3ScaledUnscale;

/// Staged activations of one item: `blocks` K blocks from absolute block j0.
struct Staged {
  const unsigned char *codes; ///< f16 [blocks / 4][8 wgmmas][2 core][8 cols][8]
  const float *scales;        ///< [blocks / 4][8 cols]: a_s of (row n / 4, block 4 g + n % 4)
};

/// Stages activation rows m0 .. m0 + rows - 1 (rows <= kItemRows), K blocks
/// [j0, j0 + blocks) (a multiple of kStep), as the block-diagonal B operand
/// of every step (header), zeros everywhere else: act_quant of x [., K] here
/// when x != null, else from the global codes [., K] / scales [., K/32].
/// Ends with the async proxy fence and a barrier, so wgmma may read it. All
/// threads must call it.
template <bool kFp4>
__device__ Staged stage(const unsigned short *x, const unsigned char *gCodes,
                        const float *gScales, long long K, long long m0, int rows, long long j0,
                        long long blocks, unsigned char *smem) {
  unsigned char *codes = smem;
  const long long steps = blocks / kStep;
  float *scales = reinterpret_cast<float *>(smem + steps * kStepCodeBytes);
  const long long kb = K / 32;
  // With x: the codes of the item's rows first go to the scratch at the end
  // of the staging (the B operand is written from there, below).
  unsigned char *raw = reinterpret_cast<unsigned char *>(scales + steps * kCols);
  const unsigned char *src = gCodes;
  long long srcStride = K, srcRow0 = m0, srcBlock0 = j0;
  if (x) {
    const int warps = blockDim.x >> 5, warp = threadIdx.x >> 5;
    for (int r = 0; r < rows; ++r)
      dsc_gemv::quantizeBlocksTo(
          x + (m0 + r) * K + j0 * 32, blocks, warp, warps,
          [&](long long jj, int e) { return raw + (r * blocks + jj) * 32 + e; },
          [&](long long jj) {
            return scales + (jj / kStep) * kCols + 4 * r + (jj % kStep);
          });
    __syncthreads();
    src = raw;
    srcStride = blocks * 32;
    srcRow0 = 0;
    srcBlock0 = 0;
  } else {
    for (long long u = threadIdx.x; u < steps * kCols; u += blockDim.x) {
      const int n = int(u % kCols), r = n >> 2;
      const long long jj = (u / kCols) * kStep + (n & 3);
      scales[u] = r < rows ? gScales[(m0 + r) * kb + j0 + jj] : 0.0f;
    }
  }
  // One task = (step, column n = 4r + c): activation row r's block
  // step * kStep + c, read whole (two 16-byte loads), written as the 16
  // units (wgmma 2p + h, core cc) of column n: 16-byte rows of core matrices
  // whose slots 8cc + 2c, + 1 hold the block's pair and the rest zero.
  // Rows r >= rows write zeros.
  const long long tasks = steps * kCols;
  for (long long u = threadIdx.x; u < tasks; u += blockDim.x) {
    const int n = int(u % kCols), c = n & 3, r = n >> 2;
    const long long step = u / kCols;
    unsigned wv[8] = {0u, 0u, 0u, 0u, 0u, 0u, 0u, 0u};
    if (r < rows) {
      const uint4 *block = reinterpret_cast<const uint4 *>(
          src + (srcRow0 + r) * srcStride + (srcBlock0 + step * kStep + c) * 32);
      const uint4 lo = block[0], hi = block[1];
      wv[0] = lo.x, wv[1] = lo.y, wv[2] = lo.z, wv[3] = lo.w;
      wv[4] = hi.x, wv[5] = hi.y, wv[6] = hi.z, wv[7] = hi.w;
    }
    unsigned char *out = codes + step * kStepCodeBytes + n * 16;
#pragma unroll
    for (int ph = 0; ph < 8; ++ph)
#pragma unroll
      for (int cc = 0; cc < 2; ++cc) {
        const int pp = ph >> 1, h = ph & 1;
        // The pair's elements: FP4 e = 8p + 4cc + h (+ 2); FP8 e = 8p + 4h + 2cc (+ 1).
        const int e = kFp4 ? 8 * pp + 4 * cc + h : 8 * pp + 4 * h + 2 * cc;
        const int e2 = e + (kFp4 ? 2 : 1);
        const unsigned lo = (wv[e >> 2] >> (8 * (e & 3))) & 0xffu;
        const unsigned hi = (wv[e2 >> 2] >> (8 * (e2 & 3))) & 0xffu;
        const unsigned word = r < rows ? dsc_gemv::e4m3x2ToHalf2(lo | (hi << 8)) : 0u;
        uint4 v = dsc_gemv::zero16();
        v.x = c == 0 ? word : 0u;
        v.y = c == 1 ? word : 0u;
        v.z = c == 2 ? word : 0u;
        v.w = c == 3 ? word : 0u;
        *reinterpret_cast<uint4 *>(out + ph * 256 + cc * 128) = v;
      }
  }
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
  __syncthreads();
  return Staged{codes, scales};
}

/// The shared-memory matrix descriptor of one wgmma's 16 x 8 B tile (no
/// swizzle; both byte offsets 128: between the two core matrices along K,
/// and along N, which a single 8-column group never steps).
__device__ __forceinline__ unsigned long long descriptor(const unsigned char *tile) {
  const unsigned addr = (unsigned)__cvta_generic_to_shared(tile);
  return (unsigned long long)((addr & 0x3FFFFu) >> 4) | (8ull << 16) | (8ull << 32);
}

/// d = A x B (kAdd false: scale-d = 0, d's values are not read) or d += A x
/// B for one 64 x 8 x 16 f16 tile, fp32 accumulation.
template <bool kAdd>
__device__ __forceinline__ void wgmmaF16(float (&d)[4], const unsigned (&a)[4],
                                         unsigned long long desc) {
  asm volatile("{\n"
               ".reg .pred p;\n"
               "setp.ne.b32 p, %9, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n8k16.f32.f16.f16 "
               "{%0, %1, %2, %3}, {%4, %5, %6, %7}, %8, p, 1, 1, 0;\n"
               "}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "r"(kAdd ? 1 : 0));
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

/// One warpgroup's 64-row tile over a K range for kPasses weight matrices
/// that share the activations (the MoE's gate, then up projection), run as
/// one stream of steps: pass p's steps j = g0, g0 + kStep, .. < g0 + steps *
/// kStep, then pass p + 1's. w[p][h] is the weight row this thread feeds (h
/// = 0: n0 + 16w + g, h = 1: + 8; K/2 bytes FP4, K bytes FP8), s[p][h] its
/// scale row (FP4: [N, K/32]; FP8: the 32-row group's, the same for both h).
/// The loads run kDepth steps ahead of the tensor cores (a ring of register
/// steps), across the passes' seam too: each thread keeps kDepth x 32 (FP4)
/// or 64 (FP8) bytes in flight, 48-64 KiB per SM at two blocks per SM.
/// Measured (session 15, H200, dsc-kernel-bench --gemv wg, one step ahead
/// before): wo_b 25.6 -> 22.4 us, MoE up 59.9 -> 56.9, down 35.4 -> 32.5;
/// FP4 depth 4 spills in the MoE entries and lost (MoE up 68.8 us). ncu of
/// the MoE up: 25% occupancy (registers, shared memory), 0.54 issued
/// instructions per scheduler cycle, the stalls on the wgmma issue and
/// wait, not on the loads. Set w, s, g0 and steps, prime(), then run().
template <bool kFp4, int kPasses> struct Tile {
  static constexpr int kLoads = kFp4 ? 1 : 2; // 16-byte loads per row and step
  static constexpr int kDepth = kFp4 ? 3 : 2; // steps in flight per thread
  const unsigned char *w[kPasses][2];
  const unsigned char *s[kPasses][2];
  long long g0 = 0; // each pass's first block
  int steps = 0;    // each pass's steps
  struct Step {
    uint4 wv[2][kLoads]; // block j + t of rows h = 0, 1
    unsigned sv[2];      // the scale bytes of blocks j .. j + 3
  };
  Step ring[kDepth];

  /// The pass of stream step v (v / steps, without a division).
  __device__ __forceinline__ int passOf(int v) const {
    int pass = 0;
#pragma unroll
    for (int p = 1; p < kPasses; ++p)
      pass = v >= p * steps ? p : pass;
    return pass;
  }
  /// Step v of the stream (pass v / steps) into st.
  __device__ __forceinline__ void load(int v, Step &st) const {
    const int t = threadIdx.x & 3;
    const int pass = passOf(v);
    const long long j = g0 + (long long)(v - pass * steps) * kStep;
    const unsigned char *wr[2] = {w[0][0], w[0][1]}, *sr[2] = {s[0][0], s[0][1]};
#pragma unroll
    for (int p = 1; p < kPasses; ++p)
      if (pass == p)
        wr[0] = w[p][0], wr[1] = w[p][1], sr[0] = s[p][0], sr[1] = s[p][1];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
#pragma unroll
      for (int u = 0; u < kLoads; ++u)
        st.wv[h][u] = dsc_gemv::loadStream16(wr[h] + (j + t) * (kFp4 ? 16 : 32) + 16 * u);
      st.sv[h] = (kFp4 || h == 0) ? __ldg(reinterpret_cast<const unsigned *>(sr[h] + j))
                                  : st.sv[0];
    }
  }
  /// Requests the first kDepth steps (before the staging: the weight
  /// stream starts first).
  __device__ __forceinline__ void prime() {
#pragma unroll
    for (int q = 0; q < kDepth; ++q)
      if (q < kPasses * steps)
        load(q, ring[q]);
  }

  /// The f16 pairs of pair p of row h's block in st: a[0] = slots 2t, 2t + 1
  /// and a[1] = 8 + 2t, 9 + 2t of wgmma 2p, a[2], a[3] those of wgmma 2p + 1.
  __device__ __forceinline__ static void pairs(const Step &st, int h, int p, unsigned (&a)[4]) {
    const uint4 &v0 = st.wv[h][0];
    if (kFp4) {
      const unsigned word = p == 0 ? v0.x : p == 1 ? v0.y : p == 2 ? v0.z : v0.w;
      const E4m3Pair e = e2m1x8ToE4m3Scaled(word);
      dsc_gemv::e4m3x4ToHalf2x2(e.even, a[0], a[1]);
      dsc_gemv::e4m3x4ToHalf2x2(e.odd, a[2], a[3]);
    } else {
      const uint4 &v = st.wv[h][kLoads - 1 < (p >> 1) ? 0 : (p >> 1)];
      const unsigned lo = (p & 1) ? v.z : v.x, hi = (p & 1) ? v.w : v.y;
      dsc_gemv::e4m3x4ToHalf2x2(lo, a[0], a[1]);
      dsc_gemv::e4m3x4ToHalf2x2(hi, a[2], a[3]);
    }
  }

  /// One step from st (step v of the stream, staged at tile offset `at`):
  /// converts its weights, refills st with step v + kDepth, runs the eight
  /// wgmmas and promotes the four blocks' partials into acc[pass].
  __device__ __forceinline__ void step(Step &st, int v, const Staged &sg, long long at,
                                       float (&acc)[kPasses][4]) {
    const int t = threadIdx.x & 3;
    const int pass = passOf(v);
    const unsigned char *tiles = sg.codes + at * kStepCodeBytes;
    unsigned a[4][2][4]; // [pair][wgmma half][fragment]
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      unsigned r0[4], r1[4];
      pairs(st, 0, q, r0);
      pairs(st, 1, q, r1);
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        a[q][hh][0] = r0[2 * hh];
        a[q][hh][1] = r1[2 * hh];
        a[q][hh][2] = r0[2 * hh + 1];
        a[q][hh][3] = r1[2 * hh + 1];
      }
    }
    const unsigned sv0 = st.sv[0], sv1 = st.sv[1];
    if (v + kDepth < kPasses * steps)
      load(v + kDepth, st);
    float d[4] = {}; // scale-d = 0 first: defined, never read
    wgmmaFence();
#pragma unroll
    for (int q = 0; q < 4; ++q)
#pragma unroll
      for (int hh = 0; hh < 2; ++hh) {
        const unsigned long long desc = descriptor(tiles + (2 * q + hh) * 256);
        if (q == 0 && hh == 0)
          wgmmaF16<false>(d, a[q][hh], desc);
        else
          wgmmaF16<true>(d, a[q][hh], desc);
      }
    wgmmaCommitAndWait();
#pragma unroll
    for (int i = 0; i < 4; ++i)
      fenceOperand(d[i]);
    const float *as = sg.scales + at * kCols + 2 * t;
    const float u = kFp4 ? kFp4Unscale : 1.0f;
    const float as0 = as[0] * u, as1 = as[1] * u;
    const int c0 = (2 * t) & 3; // the blocks j + c0, j + c0 + 1 of columns 2t, 2t + 1
    const float w00 = ue8m0ToFloat((unsigned char)(sv0 >> (8 * c0)));
    const float w01 = ue8m0ToFloat((unsigned char)(sv0 >> (8 * c0 + 8)));
    const float w10 = ue8m0ToFloat((unsigned char)(sv1 >> (8 * c0)));
    const float w11 = ue8m0ToFloat((unsigned char)(sv1 >> (8 * c0 + 8)));
    const float p0 = __fmul_rn(__fmul_rn(d[0], as0), w00);
    const float p1 = __fmul_rn(__fmul_rn(d[1], as1), w01);
    const float p2 = __fmul_rn(__fmul_rn(d[2], as0), w10);
    const float p3 = __fmul_rn(__fmul_rn(d[3], as1), w11);
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
      if (p == pass) {
        acc[p][0] = __fadd_rn(acc[p][0], p0);
        acc[p][1] = __fadd_rn(acc[p][1], p1);
        acc[p][2] = __fadd_rn(acc[p][2], p2);
        acc[p][3] = __fadd_rn(acc[p][3], p3);
      }
  }

  /// acc[p][i] += this thread's block-residue sums of pass p over its steps
  /// (prime() first): i = 0, 1 -> row n0 + 16w + g, columns 2t, 2t + 1
  /// (activation row t / 2, blocks j + 2t % 4, + 1); i = 2, 3 -> row + 8.
  /// `sg` is the staging of absolute block jBase.
  __device__ __forceinline__ void run(const Staged &sg, long long jBase,
                                      float (&acc)[kPasses][4]) {
    const int total = kPasses * steps;
    const long long first = (g0 - jBase) / kStep;
    for (int v0 = 0; v0 < total; v0 += kDepth)
#pragma unroll
      for (int q = 0; q < kDepth; ++q) {
        const int v = v0 + q;
        if (v < total)
          step(ring[q], v, sg, first + (v - passOf(v) * steps), acc);
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
/// `comb` (dsc::abi::wgCombineBytes(kMats): kMats accumulators), then the four block residues of
/// each activation row (columns 2t, 2t + 1 of threads t and t ^ 1) in a
/// fixed order: afterwards warpgroup 0's threads with t even hold, in
/// acc[x][0] (row n0 + 16w + g) and acc[x][2] (+ 8), the item's sums for
/// activation row t / 2. All threads must call it.
template <int kMats>
__device__ __forceinline__ void combineGroups(float (&acc)[kMats][4], float *comb) {
  const int group = threadIdx.x >> 7, tid = threadIdx.x & 127;
  if (kGroups > 1) {
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
            acc[x][i] =
                __fadd_rn(acc[x][i], comb[((gg - 1) * kMats * 4 + x * 4 + i) * 128 + tid]);
  }
  const bool even = (threadIdx.x & 1) == 0;
#pragma unroll
  for (int x = 0; x < kMats; ++x)
#pragma unroll
    for (int i = 0; i < 4; i += 2) {
      const float mine = __fadd_rn(acc[x][i], acc[x][i + 1]); // blocks c0, c0 + 1
      const float other = __shfl_xor_sync(0xffffffffu, mine, 1);
      acc[x][i] = even ? __fadd_rn(mine, other) : __fadd_rn(other, mine);
    }
}

/// One item of a tile whose weight rows are set (tile.w, tile.s; kPasses
/// matrices sharing the activations): the warpgroup's first kDepth steps are
/// requested, the activation rows m0 .. m0 + rows - 1 of K blocks [k0, k1)
/// staged (after a barrier: the previous item's readers are done), each
/// warpgroup runs its share of the range, pass after pass in one stream
/// (acc[p]: pass p), and the groups are combined (combineGroups: the sums in
/// warpgroup 0's threads with t even). Uses dsc::abi::wgSharedBytes(k1 - k0,
/// kPasses) bytes of smem. All threads must call it.
template <bool kFp4, int kPasses>
__device__ __forceinline__ void tileItem(Tile<kFp4, kPasses> &tile, const unsigned short *x,
                                         const unsigned char *gCodes, const float *gScales,
                                         long long K, long long m0, int rows, long long k0,
                                         long long k1, unsigned char *smem,
                                         float (&acc)[kPasses][4]) {
  long long g0, g1;
  groupRange(k0, k1, threadIdx.x >> 7, g0, g1);
  tile.g0 = g0;
  tile.steps = int((g1 - g0) / kStep);
  tile.prime(); // the weight stream starts before the staging
  __syncthreads();
  const Staged st = stage<kFp4>(x, gCodes, gScales, K, m0, rows, k0, k1 - k0, smem);
#pragma unroll
  for (int p = 0; p < kPasses; ++p)
#pragma unroll
    for (int i = 0; i < 4; ++i)
      acc[p][i] = 0.0f;
  tile.run(st, k0, acc);
  combineGroups<kPasses>(acc,
                         reinterpret_cast<float *>(smem + dsc::abi::wgSharedBytes(k1 - k0, 0)));
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
/// (FP8) or [N, K/2] (kFp4); one block per item (64 weight rows x kItemRows
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
  const long long nTiles = (N + kRows - 1) / kRows, mTiles = (M + kItemRows - 1) / kItemRows;
  const long long unit = kStep * kGroups;
  const long long perSplit = ((kb + splits - 1) / splits + unit - 1) / unit * unit;
  for (long long item = blockIdx.x; item < nTiles * mTiles * splits; item += gridDim.x) {
    const long long tile = item / splits, split = item - tile * splits;
    const long long k0 = split * perSplit < kb ? split * perSplit : kb;
    const long long k1 = k0 + perSplit < kb ? k0 + perSplit : kb;
    const long long n0 = (tile / mTiles) * kRows, m0 = (tile % mTiles) * kItemRows;
    const int rows = (int)(M - m0 < kItemRows ? M - m0 : kItemRows);
    long long r0, r1;
    threadRows(n0, N, r0, r1);
    Tile<kFp4, 1> tl;
    tl.w[0][0] = w + r0 * rowBytes;
    tl.w[0][1] = w + r1 * rowBytes;
    tl.s[0][0] = wScale + (kFp4 ? r0 : r0 / 32) * kb;
    tl.s[0][1] = wScale + (kFp4 ? r1 : r1 / 32) * kb;
    float acc[1][4];
    tileItem<kFp4, 1>(tl, x, gCodes, gScales, K, m0, rows, k0, k1, wgSmem, acc);
    if ((threadIdx.x >> 7) == 0 && (t & 1) == 0) {
      const long long m = m0 + (t >> 1);
#pragma unroll
      for (int i = 0; i < 4; i += 2) {
        const long long n = n0 + 16 * warp + g + (i ? 8 : 0);
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
