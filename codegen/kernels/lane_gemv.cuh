//===- lane_gemv.cuh - Lane-block GEMV tiles: one 32-K scale block per lane -===//
//
// What: the decode GEMV core for block-scaled FP4 and FP8 weights (W [N, K/2]
// E2M1 with UE8M0 scales [N, K/32]; W [N, K] E4M3 with scales [ceil(N/32),
// K/32]) times act_quant activations (E4M3 codes [., K] + fp32 scales
// [., K/32], gemv.cuh quantizeBlocks), built so that a weight byte costs as
// few instructions as possible (gemv.cuh's tiles spend ~10 per FP4 byte and
// read 4 bytes per load; the MoE kernels ran at 30% of bandwidth on them).
// Layout: one warp computes a tile of 8 weight rows n0 .. n0 + 7 by up to 8
// activation rows over K blocks [j0, j1), four blocks per step. Lane
// (g = lane / 4, t = lane % 4) loads block j + t of weight row n0 + g whole
// with 16-byte loads (FP4: one, FP8: two). The weights are the mma's B operand
// (column g, the k slots of lane t); the activations are its A operand
// block-diagonally: A row 4r + b holds activation row r's block j + b in the
// k slots of lane b (lanes whose g % 4 == t feed them) and zeros elsewhere, so
// D[4r + b][n] is exactly block j + b's partial of weight row n. Every lane
// thus reads whole scale blocks, no byte moves between lanes, and a block's
// partial comes out of the tensor core as the reference's rounding point.
//   FP4: the m16n8k32 E4M3 mma. A nibble becomes an E4M3 byte of value *
//   2^-6 in two logic ops per four values (magnitude bits to bits 2-4, sign to
//   bit 7: E2M1 x 2^-6 is E4M3's exponent-0..3 range, exact); the activation
//   scale carries the 2^6 back (exact: powers of two). Each mma adds only the
//   8 products of one lane's k slots per output, with a zero accumulator; the
//   four steps of a block are summed in fp32, so the FP8 tensor cores'
//   narrower accumulation touches sums of 8 exact products only.
//   FP8: the m16n8k16 f16 mma after widening (cvt.rn.f16x2.e4m3x2, exact),
//   the eight steps of a block chained in the fp32 accumulator as gemv.cuh.
// Numerics: per block, acc += (partial * a_s) * w_s in fp32 as the CPU
// reference; the order of the sum over blocks differs (each lane sums the
// blocks of its residue j % 4 in K order, then a fixed xor tree over the four
// residues): deterministic, and a row's result never depends on the other
// rows of the call (A rows of other activation rows are zero in its k slots).
// Invariants: K % 32 == 0; weight rows, codes and scale rows as the callers
// pass them (16-byte aligned weight rows and codes rows).
// Bound: the weight bytes at memory bandwidth; per 16 weight bytes a lane
// issues about 60 (FP4) / 30 (FP8) instructions.
// Include after common.cuh and gemv.cuh.
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_LANE_GEMV_CUH
#define DSC_CODEGEN_KERNELS_LANE_GEMV_CUH

#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_lanes {

/// Weight rows of one warp tile.
constexpr int kTileRows = dsc::abi::kLaneTileRows;
/// The FP4 decode's 2^-6 (numerics e2m1x8ToE4m3Scaled), carried back by
/// the activation scale.
constexpr float kFp4Unscale = kE2m1ToE4m3ScaledUnscale;

/// d = A x B for one 16 x 8 x 32 E4M3 tile, zero accumulator.
__device__ __forceinline__ void mmaE4m3(float *d, unsigned a0, unsigned a1, unsigned a2,
                                        unsigned a3, unsigned b0, unsigned b1) {
  asm("mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, "
      "{%8,%9}, {%10,%11,%12,%13};"
      : "=f"(d[0]), "=f"(d[1]), "=f"(d[2]), "=f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1), "f"(0.0f), "f"(0.0f), "f"(0.0f),
        "f"(0.0f));
}

__device__ __forceinline__ unsigned word(const uint4 &v, int i) {
  return i == 0 ? v.x : i == 1 ? v.y : i == 2 ? v.z : v.w;
}

/// Words of one 32-byte block of a lane (codes or FP8 weights).
struct Block32 {
  uint4 lo, hi;
  __device__ __forceinline__ unsigned at(int i) const { return i < 4 ? word(lo, i) : word(hi, i - 4); }
};

/// The shape of one tile's operands (kMaxRows <= 8 activation rows).
template <bool kFp4, int kMats, int kMaxRows> struct Shape {
  static constexpr int kPasses = (kMaxRows + 3) / 4;  ///< mmas per step (4 rows each)
  static constexpr int kHalves = kMaxRows > 2 ? 2 : 1; ///< activation rows 4p + r + 2 in use
  static constexpr int kWLoads = kFp4 ? 1 : 2;        ///< 16-byte loads per block
  static constexpr long long kBlockBytes = kFp4 ? 16 : 32;
  static constexpr int kAcc = 4 * kPasses;
};

/// One step's operands of a lane: its weight block jq + t of each matrix,
/// (feeding) its activation blocks, and for its D role (block jq + b) the
/// weight scale bytes of rows n0 + 2t / + 1 and the activation scales.
template <bool kFp4, int kMats, int kMaxRows> struct StepOperands {
  using S = Shape<kFp4, kMats, kMaxRows>;
  uint4 w[kMats][S::kWLoads];
  Block32 a[S::kPasses][S::kHalves];
  unsigned char ws0[kMats], ws1[kMats];
  float as[S::kPasses][S::kHalves];
};

/// The lane's activation rows: pass p, half h -> row 4p + r + 2h of m0 ..
struct ActRows {
  const unsigned char *codes;
  const float *scales;
  long long K, kb, m0;
  int rows, r;
  __device__ __forceinline__ bool valid(int p, int h) const { return 4 * p + r + 2 * h < rows; }
  __device__ __forceinline__ long long row(int p, int h) const {
    return m0 + (valid(p, h) ? 4 * p + r + 2 * h : 0);
  }
};

/// The activation operands of one step from codes/scales (shared or
/// global): feeding lanes read their block jl, D-role lanes the scales of jd.
template <bool kFp4, int kMats, int kMaxRows>
__device__ __forceinline__ void loadActivations(const ActRows &ar, bool feeds, long long jl,
                                                long long jd, long long j1,
                                                StepOperands<kFp4, kMats, kMaxRows> &st) {
  using S = Shape<kFp4, kMats, kMaxRows>;
#pragma unroll
  for (int p = 0; p < S::kPasses; ++p)
#pragma unroll
    for (int h = 0; h < S::kHalves; ++h) {
      const bool on = feeds && jl < j1 && ar.valid(p, h);
      const uint4 *src =
          reinterpret_cast<const uint4 *>(ar.codes + ar.row(p, h) * ar.K + (on ? jl : 0) * 32);
      st.a[p][h].lo = on ? src[0] : dsc_gemv::zero16();
      st.a[p][h].hi = on ? src[1] : dsc_gemv::zero16();
      st.as[p][h] = jd < j1 && ar.valid(p, h) ? ar.scales[ar.row(p, h) * ar.kb + jd] : 0.0f;
    }
}

/// The step's mmas and scaling: acc[x][4p + i] += (partial * a_s) * w_s of
/// block jq + b (when jdValid).
template <bool kFp4, int kMats, int kMaxRows>
__device__ __forceinline__ void accumulateStep(const StepOperands<kFp4, kMats, kMaxRows> &cur,
                                               bool jdValid,
                                               float (*acc)[Shape<kFp4, kMats, kMaxRows>::kAcc]) {
  using S = Shape<kFp4, kMats, kMaxRows>;
  constexpr int kPasses = S::kPasses, kHalves = S::kHalves;
  float part[kMats][kPasses][4];
#pragma unroll
  for (int x = 0; x < kMats; ++x)
#pragma unroll
    for (int p = 0; p < kPasses; ++p)
#pragma unroll
      for (int i = 0; i < 4; ++i)
        part[x][p][i] = 0.0f;
  if (kFp4) {
#pragma unroll
    for (int s = 0; s < 4; ++s) { // word s: elements 8s .. 8s + 7 of the block
      unsigned ae[kPasses][2], ao[kPasses][2];
#pragma unroll
      for (int p = 0; p < kPasses; ++p)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const int hh = h < kHalves ? h : 0;
          const unsigned c0 = h < kHalves ? cur.a[p][hh].at(2 * s) : 0u;
          const unsigned c1 = h < kHalves ? cur.a[p][hh].at(2 * s + 1) : 0u;
          ae[p][h] = __byte_perm(c0, c1, 0x6420);
          ao[p][h] = __byte_perm(c0, c1, 0x7531);
        }
#pragma unroll
      for (int x = 0; x < kMats; ++x) {
        const E4m3Pair wp = e2m1x8ToE4m3Scaled(word(cur.w[x][0], s));
        const unsigned we = wp.even, wo = wp.odd;
#pragma unroll
        for (int p = 0; p < kPasses; ++p) {
          float d[4];
          mmaE4m3(d, ae[p][0], ae[p][1], ao[p][0], ao[p][1], we, wo);
          part[x][p][0] = __fadd_rn(part[x][p][0], d[0]);
          part[x][p][1] = __fadd_rn(part[x][p][1], d[1]);
          if (kHalves == 2) {
            part[x][p][2] = __fadd_rn(part[x][p][2], d[2]);
            part[x][p][3] = __fadd_rn(part[x][p][3], d[3]);
          }
        }
      }
    }
  } else {
#pragma unroll
    for (int s = 0; s < 8; ++s) { // word s: elements 4s .. 4s + 3 of the block
      unsigned a[kPasses][4];
#pragma unroll
      for (int p = 0; p < kPasses; ++p) {
        const unsigned c0 = cur.a[p][0].at(s);
        const unsigned c1 = kHalves == 2 ? cur.a[p][kHalves - 1].at(s) : 0u;
        a[p][0] = dsc_gemv::e4m3x2ToHalf2(c0 & 0xffffu);
        a[p][2] = dsc_gemv::e4m3x2ToHalf2(c0 >> 16);
        a[p][1] = kHalves == 2 ? dsc_gemv::e4m3x2ToHalf2(c1 & 0xffffu) : 0u;
        a[p][3] = kHalves == 2 ? dsc_gemv::e4m3x2ToHalf2(c1 >> 16) : 0u;
      }
#pragma unroll
      for (int x = 0; x < kMats; ++x) {
        const unsigned wsw = word(cur.w[x][s / 4], s % 4);
        const unsigned b0 = dsc_gemv::e4m3x2ToHalf2(wsw & 0xffffu);
        const unsigned b1 = dsc_gemv::e4m3x2ToHalf2(wsw >> 16);
#pragma unroll
        for (int p = 0; p < kPasses; ++p)
          dsc_gemv::mmaF16(part[x][p], a[p][0], a[p][1], a[p][2], a[p][3], b0, b1, part[x][p]);
      }
    }
  }
  if (!jdValid)
    return;
#pragma unroll
  for (int p = 0; p < kPasses; ++p) {
    float as[2];
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      as[h] = h < kHalves ? cur.as[p][h < kHalves ? h : 0] : 0.0f;
      if (kFp4)
        as[h] *= kFp4Unscale;
    }
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
      const float ws0 = ue8m0ToFloat(cur.ws0[x]), ws1 = ue8m0ToFloat(cur.ws1[x]);
      float *o = acc[x] + 4 * p;
      o[0] = __fadd_rn(o[0], __fmul_rn(__fmul_rn(part[x][p][0], as[0]), ws0));
      o[1] = __fadd_rn(o[1], __fmul_rn(__fmul_rn(part[x][p][1], as[0]), ws1));
      if (kHalves == 2) {
        o[2] = __fadd_rn(o[2], __fmul_rn(__fmul_rn(part[x][p][2], as[1]), ws0));
        o[3] = __fadd_rn(o[3], __fmul_rn(__fmul_rn(part[x][p][3], as[1]), ws1));
      }
    }
  }
}

/// One warp's tile: for each of kMats matrices x sharing the activations,
/// weight row wRow[x] (this lane's row n0 + g; K/2 bytes FP4, K bytes FP8),
/// the scale rows of weight rows n0 + 2t (sRow0[x]) and n0 + 2t + 1 (sRow1[x])
/// (FP4: [N, K/32] rows; FP8: the 32-row group's row), activation rows m0 ..
/// m0 + rows - 1 (rows <= kMaxRows <= 8) of codes/scales, K blocks [j0, j1).
/// Adds to acc[x][4p + i] the block-residue sums of pass p: i = 0, 1 ->
/// (activation row 4p + r, weight rows n0 + 2t, n0 + 2t + 1), i = 2, 3 ->
/// (4p + r + 2, the same weight rows), r = lane / 16; reduceResidues then
/// leaves the totals in the lanes with (lane / 4) % 4 == 0. The register
/// path: the next step's operands load while this one computes (up to 4
/// activation rows; 8 would spill at two blocks per SM: prefill's shapes).
template <bool kFp4, int kMats, int kMaxRows>
__device__ __forceinline__ void laneDots(const unsigned char *const *wRow,
                                         const unsigned char *const *sRow0,
                                         const unsigned char *const *sRow1,
                                         const unsigned char *codes, const float *scales,
                                         long long K, long long m0, int rows, long long j0,
                                         long long j1,
                                         float (*acc)[Shape<kFp4, kMats, kMaxRows>::kAcc]) {
  using S = Shape<kFp4, kMats, kMaxRows>;
  using Ops = StepOperands<kFp4, kMats, kMaxRows>;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, b = g & 3;
  const ActRows ar{codes, scales, K, K / 32, m0, rows, g >> 2};
  const bool feeds = b == t;
  auto load = [&](long long jq, Ops &st) {
    const long long jl = jq + t, jd = jq + b;
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
#pragma unroll
      for (int u = 0; u < S::kWLoads; ++u)
        st.w[x][u] = jl < j1 ? dsc_gemv::load16(wRow[x] + jl * S::kBlockBytes + 16 * u)
                             : dsc_gemv::zero16();
      st.ws0[x] = jd < j1 ? __ldg(sRow0[x] + jd) : (unsigned char)0;
      st.ws1[x] = jd < j1 ? __ldg(sRow1[x] + jd) : (unsigned char)0;
    }
    loadActivations(ar, feeds, jl, jd, j1, st);
  };
  constexpr bool kAhead = kMaxRows <= 4;
  Ops cur, nxt;
  if (kAhead)
    load(j0, cur);
  for (long long jq = j0; jq < j1; jq += 4) {
    if (kAhead)
      load(jq + 4, nxt);
    else
      load(jq, cur);
    accumulateStep(cur, jq + b < j1, acc);
    if (kAhead)
      cur = nxt;
  }
}

//===----------------------------------------------------------------------===//
// The staged path: the weights and their scale bytes stream through a
// per-warp ring of kStages steps in shared memory (cp.async: bytes in
// flight without registers; a lane reads back only the bytes it copied, so
// no barrier is needed), the activations come from shared memory.
//===----------------------------------------------------------------------===//

/// Steps in flight per warp.
constexpr int kStages = dsc::abi::kLaneStages;

__device__ __forceinline__ void cpAsync16(void *dst, const void *src, bool valid) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(d), "l"(src),
               "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cpAsync4(void *dst, const void *src) {
  const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.ca.shared.global [%0], [%1], 4;" ::"r"(d), "l"(src));
}
__device__ __forceinline__ void cpAsyncCommit() { asm volatile("cp.async.commit_group;"); }
template <int kN> __device__ __forceinline__ void cpAsyncWait() {
  asm volatile("cp.async.wait_group %0;" ::"n"(kN));
}

/// Bytes of one warp's ring (one definition: dsc::abi::kLaneRingBytes).
template <bool kFp4, int kMats> __host__ __device__ constexpr int ringBytes() {
  return dsc::abi::kLaneRingBytes<kFp4, kMats>;
}

/// The activation operand of a lane-block kernel in dynamic shared memory:
/// act_quant of x by the block (x != null), else a copy of the global
/// codes/scales when stage == 1 (the host sized the memory for it), else the
/// global ones. `ring` is where the warps' rings start (16-byte aligned);
/// staged: stage != 0 with the activations in shared memory (else the
/// register path). All threads must call it.
struct Activations {
  const unsigned char *codes;
  const float *scales;
  bool staged;
  unsigned char *ring;
};
__device__ __forceinline__ Activations stageActivations(const unsigned short *x,
                                                        const unsigned char *gCodes,
                                                        const float *gScales, long long M,
                                                        long long K, long long stage,
                                                        unsigned char *smem) {
  const long long kb = K / 32, bytes = (dsc_gemv::quantBytes(M, K) + 15) / 16 * 16;
  if (x) {
    dsc_gemv::quantizeToShared(x, M, K, smem);
  } else if (stage == 1) {
    const uint4 *src = reinterpret_cast<const uint4 *>(gCodes);
    uint4 *dst = reinterpret_cast<uint4 *>(smem);
    for (long long i = threadIdx.x; i < M * K / 16; i += blockDim.x)
      dst[i] = src[i];
    float *sd = reinterpret_cast<float *>(smem + M * K);
    for (long long i = threadIdx.x; i < M * kb; i += blockDim.x)
      sd[i] = gScales[i];
    __syncthreads();
  } else {
    return Activations{gCodes, gScales, false, smem};
  }
  return Activations{smem, reinterpret_cast<const float *>(smem + M * K), stage != 0,
                     smem + bytes};
}

/// Whether laneDotsStaged applies: whole groups of four K blocks from j0,
/// 4-byte aligned scale words.
__device__ __forceinline__ bool stageable(long long kb, long long j0, const void *wScale) {
  return kb % 4 == 0 && j0 % 4 == 0 && (reinterpret_cast<unsigned long long>(wScale) & 3) == 0;
}

/// laneDots with the weights through this warp's ring (ringBytes<kFp4,
/// kMats>() of shared memory at `ring`) and codes/scales in shared memory:
/// the same operands, so the same bytes as the register path. Needs
/// stageable(kb, j0, scale base).
template <bool kFp4, int kMats, int kMaxRows>
__device__ __forceinline__ void laneDotsStaged(const unsigned char *const *wRow,
                                               const unsigned char *const *sRow0,
                                               const unsigned char *const *sRow1,
                                               const unsigned char *codes, const float *scales,
                                               long long K, long long m0, int rows,
                                               long long j0, long long j1, unsigned char *ring,
                                               float (*acc)[Shape<kFp4, kMats, kMaxRows>::kAcc]) {
  using S = Shape<kFp4, kMats, kMaxRows>;
  using Ops = StepOperands<kFp4, kMats, kMaxRows>;
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3, b = g & 3;
  const ActRows ar{codes, scales, K, K / 32, m0, rows, g >> 2};
  const bool feeds = b == t;
  constexpr int kStageBytes = ringBytes<kFp4, kMats>() / kStages;
  const int steps = (int)((j1 - j0 + 3) / 4);
  // Stage layout: [kMats][kWLoads][32 lanes] x 16 bytes, then the scale
  // words [kMats][2][32 lanes] x 4 bytes (rows n0 + 2t, + 1: blocks jq ..
  // jq + 3).
  auto wSlot = [&](int slot, int x, int u) {
    return ring + slot * kStageBytes + ((x * S::kWLoads + u) * 32 + lane) * 16;
  };
  auto sSlot = [&](int slot, int x, int i) {
    return ring + slot * kStageBytes + kMats * S::kWLoads * 512 + ((x * 2 + i) * 32 + lane) * 4;
  };
  auto issue = [&](int i) {
    if (i < steps) {
      const int slot = i % kStages;
      const long long jq = j0 + 4LL * i, jl = jq + t;
#pragma unroll
      for (int x = 0; x < kMats; ++x)
#pragma unroll
        for (int u = 0; u < S::kWLoads; ++u)
          cpAsync16(wSlot(slot, x, u),
                    wRow[x] + (jl < j1 ? jl : j0) * S::kBlockBytes + 16 * u, jl < j1);
#pragma unroll
      for (int x = 0; x < kMats; ++x) {
        cpAsync4(sSlot(slot, x, 0), sRow0[x] + jq);
        cpAsync4(sSlot(slot, x, 1), sRow1[x] + jq);
      }
    }
    cpAsyncCommit(); // empty groups keep the count uniform
  };
#pragma unroll
  for (int i = 0; i < kStages - 1; ++i)
    issue(i);
  for (int i = 0; i < steps; ++i) {
    issue(i + kStages - 1);
    cpAsyncWait<kStages - 1>();
    const int slot = i % kStages;
    const long long jq = j0 + 4LL * i, jl = jq + t, jd = jq + b;
    Ops cur;
#pragma unroll
    for (int x = 0; x < kMats; ++x)
#pragma unroll
      for (int u = 0; u < S::kWLoads; ++u)
        cur.w[x][u] = *reinterpret_cast<const uint4 *>(wSlot(slot, x, u));
#pragma unroll
    for (int x = 0; x < kMats; ++x) {
      cur.ws0[x] = (unsigned char)(*reinterpret_cast<const unsigned *>(sSlot(slot, x, 0)) >> (8 * b));
      cur.ws1[x] = (unsigned char)(*reinterpret_cast<const unsigned *>(sSlot(slot, x, 1)) >> (8 * b));
    }
    loadActivations(ar, feeds, jl, jd, j1, cur);
    accumulateStep(cur, jd < j1, acc);
  }
}

/// laneDotsStaged where it applies (codes in shared memory, stageable),
/// else laneDots: the same bytes either way.
template <bool kFp4, int kMats, int kMaxRows>
__device__ __forceinline__ void laneDotsAuto(const Activations &act,
                                             const unsigned char *const *wRow,
                                             const unsigned char *const *sRow0,
                                             const unsigned char *const *sRow1,
                                             const void *scaleBase, long long K, long long m0,
                                             int rows, long long j0, long long j1, int ringStride,
                                             float (*acc)[Shape<kFp4, kMats, kMaxRows>::kAcc]) {
  if (act.staged && stageable(K / 32, j0, scaleBase))
    laneDotsStaged<kFp4, kMats, kMaxRows>(wRow, sRow0, sRow1, act.codes, act.scales, K, m0, rows,
                                          j0, j1, act.ring + (threadIdx.x >> 5) * ringStride,
                                          acc);
  else
    laneDots<kFp4, kMats, kMaxRows>(wRow, sRow0, sRow1, act.codes, act.scales, K, m0, rows, j0,
                                    j1, acc);
}


/// Sums the four block residues of laneDots (lanes differing in lane bits 2
/// and 3) by a fixed xor tree: afterwards every lane of a residue group holds
/// the same totals (fp32 addition commutes), read from the lanes with
/// (lane / 4) % 4 == 0.
template <int kN> __device__ __forceinline__ void reduceResidues(float *v) {
#pragma unroll
  for (int i = 0; i < kN; ++i) {
    v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], 4));
    v[i] = __fadd_rn(v[i], __shfl_xor_sync(0xffffffffu, v[i], 8));
  }
}

/// laneDotsAuto of one tile with its activation rows' count picked at run
/// time (the instantiations compute a row identically: rows never meet).
template <bool kFp4>
__device__ __forceinline__ void laneDotsRows(const Activations &act, const unsigned char *wRow,
                                             const unsigned char *sRow0,
                                             const unsigned char *sRow1, const void *scaleBase,
                                             long long K, long long m0, int rows, long long j0,
                                             long long j1, float (*acc)[8]) {
  constexpr int kRing = ringBytes<kFp4, 1>();
  if (rows <= 2)
    laneDotsAuto<kFp4, 1, 2>(act, &wRow, &sRow0, &sRow1, scaleBase, K, m0, rows, j0, j1, kRing,
                             reinterpret_cast<float(*)[4]>(acc));
  else if (rows <= 4)
    laneDotsAuto<kFp4, 1, 4>(act, &wRow, &sRow0, &sRow1, scaleBase, K, m0, rows, j0, j1, kRing,
                             reinterpret_cast<float(*)[4]>(acc));
  else
    laneDotsAuto<kFp4, 1, 8>(act, &wRow, &sRow0, &sRow1, scaleBase, K, m0, rows, j0, j1, kRing,
                             acc);
}

/// The lane-block GEMV/GEMM: y[m, n] = bf16(sum) for x [M, K] and W [N, K]
/// (FP8, scales [ceil(N/32), K/32]) or [N, K/2] (kFp4, scales [N, K/32]);
/// one warp per item (8 weight rows x 8 activation rows x one of `splits`
/// K ranges, each a multiple of four blocks), grid-strided; splits > 1: fp32
/// partials [splits, M, N] for dsc_gemv::splitKReduce. The activations as
/// stageActivations (x != null: act_quant in the block; else codes/scales,
/// copied to shared memory when `stage`); the dynamic shared memory holds
/// them (when staged) and the warps' rings. All threads must call it.
template <bool kFp4>
__device__ void laneGemv(const unsigned short *x, const unsigned char *gCodes,
                         const float *gScales, long long M, long long K, const unsigned char *w,
                         const unsigned char *wScale, long long N, unsigned short *y,
                         long long splits, float *partial, long long stage) {
  extern __shared__ __align__(16) unsigned char laneSmem[];
  const Activations act = stageActivations(x, gCodes, gScales, M, K, stage, laneSmem);
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  const long long kb = K / 32, rowBytes = kFp4 ? K / 2 : K;
  const long long nTiles = (N + kTileRows - 1) / kTileRows, mTiles = (M + 7) / 8;
  const long long perSplit = ((kb + splits - 1) / splits + 3) / 4 * 4;
  for (long long item = dsc_gemv::firstRow(); item < nTiles * mTiles * splits;
       item += dsc_gemv::rowStride()) {
    const long long tile = item / splits, split = item - tile * splits;
    const long long k0 = split * perSplit < kb ? split * perSplit : kb;
    const long long k1 = k0 + perSplit < kb ? k0 + perSplit : kb;
    const long long n0 = (tile / mTiles) * kTileRows, m0 = (tile % mTiles) * 8;
    const int rows = (int)(M - m0 < 8 ? M - m0 : 8);
    auto clamp = [&](long long row) { return row < N ? row : N - 1; };
    const long long rg = clamp(n0 + g), ra = clamp(n0 + 2 * t), rb = clamp(n0 + 2 * t + 1);
    float acc[1][8] = {{0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    laneDotsRows<kFp4>(act, w + rg * rowBytes, wScale + (kFp4 ? ra : ra / 32) * kb,
                       wScale + (kFp4 ? rb : rb / 32) * kb, wScale, K, m0, rows, k0, k1, acc);
    reduceResidues<8>(acc[0]);
    if (((lane >> 2) & 3) == 0) {
      const int r = lane >> 4;
#pragma unroll
      for (int i = 0; i < 8; ++i) {
        const long long m = m0 + 4 * (i / 4) + r + ((i & 2) ? 2 : 0), n = n0 + 2 * t + (i & 1);
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

} // namespace dsc_lanes

/// A lane-block GEMV entry: DSC_GEMV_QUANTIZED_ENTRY's arguments and
/// `stage` (laneGemv; the adapters' quantizedGemv launches `<name>` as the
/// `_lanes` twin of `<prefix>_fast`); kFp4: the weight format.
#define DSC_LANE_GEMV_ENTRY(name, kFp4)                                                       \
  DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kGemvWarps, 2)                             \
      name(const unsigned short *x, const unsigned char *codes, const float *scales,          \
           long long M, long long K, const unsigned char *w, const unsigned char *wScale,     \
           long long N, unsigned short *y, long long splits, float *partial, long long stage) { \
    dsc_lanes::laneGemv<kFp4>(x, codes, scales, M, K, w, wScale, N, y, splits, partial, stage); \
  }

#endif // DSC_CODEGEN_KERNELS_LANE_GEMV_CUH
