//===- moe_experts.cu - Routed FP4 experts + shared FP8 expert (§10.4-5) --===//
//
// Steps (the adapter runs them in this order; Moe.cpp's math):
//   dsc_moe_experts_zero: acc f32 [T, D] = 0;
//   dsc_moe_experts_order: per token, its k slots sorted by expert id
//     ascending (ids outside [0, E) last, marked -1);
//   dsc_moe_experts_act_quant: act_quant of x [T, D] (and later of h [T, I]);
//   for rank r = 0..k-1 (each token's r-th smallest expert id, so acc sums in
//   ascending expert id per token, as the CPU's expert loop):
//     dsc_moe_experts_up_fp4: one thread per (t, i): g = bf16(w1 x), u =
//       bf16(w3 x) (FP4 GEMMs, linearFp4's order), clamps at lim =
//       (float)p.swiglu_limit, silu(g) * u, times the route weight, bf16 ->
//       h [T, I];
//     act_quant(h);
//     dsc_moe_experts_down_fp4: one thread per (t, d): acc += bf16(w2 h);
//   shared expert: dsc_moe_experts_up_fp8 (no route weight), act_quant,
//   dsc_moe_experts_down_fp8: y = bf16(acc + bf16(w2 h)).
// The up steps take p (dsc::abi::MoeExpertsParams) as their first argument;
// the other steps use no parameter.
// Routed weights are stacked: w1/w3 [E, I, D/2] + [E, I, D/32], w2
// [E, D, I/2] + [E, D, I/32]; shared: w1/w3 [I, D] + [ceil(I/32), D/32], w2
// [D, I] + [ceil(D/32), I/32].
// The steps above are the CPU-order kernels (CudaOptions::cpuOrderFamilies).
// The default, fast path is three launches for all ranks and the shared
// expert (gemv.cuh tensor-core tiles, warps splitting K combined in warp
// order: a fixed summation order, no float atomics):
//   dsc_moe_experts_up_fast: one block per (t, slot, 16 rows i), slot in [0, k]
//     (slot k: the shared expert): g = bf16(w1 x), u = bf16(w3 x) of the
//     slot's expert (FP4 routed / FP8 shared), h[t, slot, i] = swiglu (x's
//     act_quant in shared memory when xq is given, else from global codes);
//   dsc_moe_experts_down_fast: one block per (t, slot, 16 rows d): out[t,
//     slot, d] = bf16(w2 h[t, slot]) as fp32 (h's act_quant in shared
//     memory when hq is given);
//   dsc_moe_experts_combine_fast: grid (D chunks, t), the token's slot order
//     found once per block (k <= kMoeCombineMaxTopk): acc = sum over the
//     token's valid slots in ascending expert id of out, y = bf16(acc +
//     out[t, k]) (the CPU's order of the sum over experts);
//   dsc_moe_experts_act_quant_fast: global act_quant when a row set is too
//     large for shared memory.
// With CudaOptions::laneGemv (the default) the up and down steps are
// dsc_moe_experts_up_lanes / _down_lanes: the same operands and outputs, one
// warp per item on lane_gemv.cuh's lane-block tiles: a routed slot's 16 FP4
// rows (two tiles) or the shared expert's 8 FP8 rows, the same bytes either
// way, on blocks sized so that a decode token's items are one wave
// (LaunchShapes.h kMoeLane*: with 8-row items everywhere the shared expert's
// warps streamed twice the others' bytes and the MoE up ran its last ~45% at
// the speed of those 288 warps); with
// CudaOptions::gemv == Slots dsc_moe_experts_up_slots / _down_slots, one warp
// per (t, slot, 16 rows) on slot_gemv.cuh's block-slot tiles, each item split
// over kSlotMoeItemWarps warps of a block (K ranges combined in warp order).
// Bound: the bytes of the chosen experts' weights (3 * I * D / 2 per routed
// slot + scales, 3 * I * D for the shared expert) at memory bandwidth.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemm.cuh"
#include "codegen/kernels/gemv.cuh"
#include "codegen/kernels/lane_gemv.cuh"
#include "codegen/kernels/row_gemv.cuh"
#include "codegen/kernels/slot_gemv.cuh"
#include "codegen/kernels/wg_gemv.cuh"

namespace dsc_dense_moe {
/// moeSwiglu of one element: bf16( w * (silu(min(g,lim)) * clamp(u,+-lim)) ).
__device__ unsigned short swiglu(float g, float u, float lim, bool routed, float rw) {
  if (lim > 0.0f) {
    u = u < -lim ? -lim : (u > lim ? lim : u);
    g = g > lim ? lim : g;
  }
  const float silu = __fdiv_rn(g, __fadd_rn(1.0f, expf(-g)));
  float y = __fmul_rn(silu, u);
  if (routed)
    y = __fmul_rn(rw, y);
  return bf16FromFloat(y);
}
} // namespace dsc_dense_moe

DSC_KERNEL void dsc_moe_experts_zero(float *acc, long long n) {
  DSC_KERNEL_PROLOGUE();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    acc[i] = 0.0f;
}

DSC_KERNEL void dsc_moe_experts_order(const int *ids, long long T, long long k, long long E,
                                      int *order) {
  DSC_KERNEL_PROLOGUE();
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < T;
       t += (long long)gridDim.x * blockDim.x) {
    const int *id = ids + t * k;
    int *o = order + t * k;
    long long n = 0;
    for (long long j = 0; j < k; ++j) {
      if (id[j] < 0 || id[j] >= E)
        continue;
      long long p = n++; // insertion sort by expert id (stable)
      while (p > 0 && id[o[p - 1]] > id[j]) {
        o[p] = o[p - 1];
        --p;
      }
      o[p] = (int)j;
    }
    for (; n < k; ++n)
      o[n] = -1;
  }
}

DSC_KERNEL void dsc_moe_experts_act_quant(const unsigned short *x, long long M, long long K,
                                          unsigned char *codes, float *scales) {
  DSC_KERNEL_PROLOGUE();
  dsc_dense_gemm::actQuant(x, M, K, codes, scales);
}

DSC_KERNEL void dsc_moe_experts_up_fp4(const __grid_constant__ dsc::abi::MoeExpertsParams p,
                                       const unsigned char *codes, const float *scales,
                                       long long T, long long D, long long I,
                                       const unsigned char *w1, const unsigned char *w1s,
                                       const unsigned char *w3, const unsigned char *w3s,
                                       const int *ids, const float *weights, const int *order,
                                       long long k, long long rank, unsigned short *h) {
  DSC_KERNEL_PROLOGUE();
  const float lim = (float)p.swiglu_limit;
  const long long n = T * I;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / I, i = e - t * I;
    const int slot = order[t * k + rank];
    if (slot < 0) {
      h[e] = 0;
      continue;
    }
    const long long x = ids[t * k + slot];
    const float g = roundToBf16(dsc_dense_gemm::fp4Out(codes, scales, t, D, w1 + x * I * (D / 2),
                                                       w1s + x * I * (D / 32), i));
    const float u = roundToBf16(dsc_dense_gemm::fp4Out(codes, scales, t, D, w3 + x * I * (D / 2),
                                                       w3s + x * I * (D / 32), i));
    h[e] = dsc_dense_moe::swiglu(g, u, lim, true, weights[t * k + slot]);
  }
}

DSC_KERNEL void dsc_moe_experts_down_fp4(const unsigned char *codes, const float *scales,
                                         long long T, long long I, long long D,
                                         const unsigned char *w2, const unsigned char *w2s,
                                         const int *ids, const int *order, long long k,
                                         long long rank, float *acc) {
  DSC_KERNEL_PROLOGUE();
  const long long n = T * D;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / D, d = e - t * D;
    const int slot = order[t * k + rank];
    if (slot < 0)
      continue;
    const long long x = ids[t * k + slot];
    const float out = roundToBf16(dsc_dense_gemm::fp4Out(codes, scales, t, I, w2 + x * D * (I / 2),
                                                         w2s + x * D * (I / 32), d));
    acc[e] = __fadd_rn(acc[e], out);
  }
}

DSC_KERNEL void dsc_moe_experts_up_fp8(const __grid_constant__ dsc::abi::MoeExpertsParams p,
                                       const unsigned char *codes, const float *scales,
                                       long long T, long long D, long long I,
                                       const unsigned char *w1, const unsigned char *w1s,
                                       const unsigned char *w3, const unsigned char *w3s,
                                       unsigned short *h) {
  DSC_KERNEL_PROLOGUE();
  const float lim = (float)p.swiglu_limit;
  const long long n = T * I;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / I, i = e - t * I;
    const float g = roundToBf16(dsc_dense_gemm::fp8Out(codes, scales, t, D, w1, w1s, i));
    const float u = roundToBf16(dsc_dense_gemm::fp8Out(codes, scales, t, D, w3, w3s, i));
    h[e] = dsc_dense_moe::swiglu(g, u, lim, false, 0.0f);
  }
}

DSC_KERNEL void dsc_moe_experts_down_fp8(const unsigned char *codes, const float *scales,
                                         long long T, long long I, long long D,
                                         const unsigned char *w2, const unsigned char *w2s,
                                         const float *acc, unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  const long long n = T * D;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long t = e / D, d = e - t * D;
    const float out = roundToBf16(dsc_dense_gemm::fp8Out(codes, scales, t, I, w2, w2s, d));
    y[e] = bf16FromFloat(__fadd_rn(acc[e], out));
  }
}

//===----------------------------------------------------------------------===//
// Fast path (gemv.cuh)
//===----------------------------------------------------------------------===//

DSC_GEMV_ACT_QUANT_ENTRY(dsc_moe_experts_act_quant_fast)

namespace dsc_moe_fast {
/// Dynamic shared memory layout of the fast steps: act_quant codes + scales
/// (when quantised in the block), then the warp-combine buffer.
struct Smem {
  const unsigned char *codes;
  const float *scales;
  float *comb;
};
__device__ Smem setup(const unsigned short *xq, const unsigned char *gCodes, const float *gScales,
                      long long rows, long long K, unsigned char *smem) {
  Smem m{gCodes, gScales, reinterpret_cast<float *>(smem)};
  if (xq) {
    dsc_gemv::quantizeToShared(xq, rows, K, smem);
    m.codes = smem;
    m.scales = reinterpret_cast<const float *>(smem + rows * K);
    m.comb = reinterpret_cast<float *>(smem + dsc_gemv::quantBytes(rows, K));
  }
  return m;
}
/// One work item of the up/down steps: token t, slot (k = the shared
/// expert), the first of 16 output rows r0, the rows lane group g reads
/// (clamped to the last row: the extra rows are computed and not written),
/// and the slot's expert x (routed slots: ids[t, slot], else 0).
struct TileItem {
  long long t, slot, r0, rG, rG8, x;
  bool routed;
};
__device__ __forceinline__ TileItem tileItem(long long item, long long k, long long rowsOut,
                                             const int *ids) {
  const long long tiles = (rowsOut + 15) / 16, perToken = (k + 1) * tiles;
  const int g = (threadIdx.x & 31) >> 2;
  TileItem it;
  it.t = item / perToken;
  const long long rem = item - it.t * perToken;
  it.slot = rem / tiles;
  it.r0 = (rem - it.slot * tiles) * 16;
  it.rG = it.r0 + g < rowsOut ? it.r0 + g : rowsOut - 1;
  it.rG8 = it.r0 + g + 8 < rowsOut ? it.r0 + g + 8 : rowsOut - 1;
  it.routed = it.slot < k;
  it.x = it.routed ? ids[it.t * k + it.slot] : 0;
  return it;
}
} // namespace dsc_moe_fast

namespace dsc_moe_fast {
template <bool kE4m3>
__device__ void upFast(const dsc::abi::MoeExpertsParams p, const unsigned short *xq,
                       const unsigned char *gCodes, const float *gScales, long long T, long long D,
                       long long I, const unsigned char *w1, const unsigned char *w1s,
                       const unsigned char *w3, const unsigned char *w3s, const unsigned char *s1,
                       const unsigned char *s1s, const unsigned char *s3, const unsigned char *s3s,
                       const int *ids, const float *weights, long long k, long long E,
                       unsigned short *h) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Smem m = setup(xq, gCodes, gScales, T, D, smem);
  const float lim = (float)p.swiglu_limit;
  const int lane = threadIdx.x & 31, g = lane >> 2;
  const bool writer = threadIdx.x < 32 && (lane & 3) == 0; // warp 0, column 0 (token t)
  const long long kb = D / 32, iTiles = (I + 15) / 16, perToken = (k + 1) * iTiles;
  long long j0, j1;
  dsc_gemv::warpBlocks(kb, j0, j1);
  for (long long item = blockIdx.x; item < T * perToken; item += gridDim.x) {
    const TileItem it = tileItem(item, k, I, ids);
    const long long t = it.t, slot = it.slot, i0 = it.r0, rG = it.rG, rG8 = it.rG8, x = it.x;
    const bool routed = it.routed;
    unsigned short *hs = h + (t * (k + 1) + slot) * I;
    if (routed && (x < 0 || x >= E)) { // an invalid slot contributes nothing
      if (writer) {
        if (i0 + g < I)
          hs[i0 + g] = 0;
        if (i0 + g + 8 < I)
          hs[i0 + g + 8] = 0;
      }
      continue; // block-uniform
    }
    float acc2[2][4] = {{0.0f, 0.0f, 0.0f, 0.0f}, {0.0f, 0.0f, 0.0f, 0.0f}};
    float *gAcc = acc2[0],
          *uAcc = acc2[1]; // w1 (gate) and w3 (up) in one K loop
    if (routed) {
      const long long a = x * I + rG, b = x * I + rG8;
      const unsigned char *wg[2] = {w1 + a * (D / 2), w3 + a * (D / 2)},
                          *wg8[2] = {w1 + b * (D / 2), w3 + b * (D / 2)},
                          *sg[2] = {w1s + a * kb, w3s + a * kb},
                          *sg8[2] = {w1s + b * kb, w3s + b * kb};
      dsc_gemv::tileDotsN<true, 2, kE4m3>(wg, wg8, sg, sg8, m.codes, m.scales, D, t, 1, j0, j1,
                                          acc2);
    } else {
      const unsigned char *wg[2] = {s1 + rG * D, s3 + rG * D},
                          *wg8[2] = {s1 + rG8 * D, s3 + rG8 * D},
                          *sg[2] = {s1s + (rG / 32) * kb, s3s + (rG / 32) * kb},
                          *sg8[2] = {s1s + (rG8 / 32) * kb, s3s + (rG8 / 32) * kb};
      dsc_gemv::tileDotsN<false, 2, kE4m3>(wg, wg8, sg, sg8, m.codes, m.scales, D, t, 1, j0, j1,
                                           acc2);
    }
    dsc_gemv::combineWarps(gAcc, m.comb);
    dsc_gemv::combineWarps(uAcc, m.comb);
    if (writer) {
      const float rw = routed ? weights[t * k + slot] : 0.0f;
      if (i0 + g < I)
        hs[i0 + g] =
            dsc_dense_moe::swiglu(roundToBf16(gAcc[0]), roundToBf16(uAcc[0]), lim, routed, rw);
      if (i0 + g + 8 < I)
        hs[i0 + g + 8] =
            dsc_dense_moe::swiglu(roundToBf16(gAcc[2]), roundToBf16(uAcc[2]), lim, routed, rw);
    }
  }
}
} // namespace dsc_moe_fast

// The up and down steps' parameters: one list for the fast, e4m3 and lanes
// entries (the adapter passes them in this order).
#define DSC_MOE_UP_PARAMS                                                                    \
  const __grid_constant__ dsc::abi::MoeExpertsParams p, const unsigned short *xq,            \
      const unsigned char *gCodes, const float *gScales, long long T, long long D,           \
      long long I, const unsigned char *w1, const unsigned char *w1s,                        \
      const unsigned char *w3, const unsigned char *w3s, const unsigned char *s1,            \
      const unsigned char *s1s, const unsigned char *s3, const unsigned char *s3s,           \
      const int *ids, const float *weights, long long k, long long E, unsigned short *h
#define DSC_MOE_UP_ARGS                                                                      \
  p, xq, gCodes, gScales, T, D, I, w1, w1s, w3, w3s, s1, s1s, s3, s3s, ids, weights, k, E, h
#define DSC_MOE_DOWN_PARAMS                                                                  \
  const unsigned short *hq, const unsigned char *gCodes, const float *gScales, long long T,  \
      long long I, long long D, const unsigned char *w2, const unsigned char *w2s,           \
      const unsigned char *s2, const unsigned char *s2s, const int *ids, long long k,        \
      long long E, float *outs
#define DSC_MOE_DOWN_ARGS hq, gCodes, gScales, T, I, D, w2, w2s, s2, s2s, ids, k, E, outs

/// One fast MoE step entry: `step` (upFast / downFast) with its parameter
/// list, 4 blocks of kGemvWarps warps per SM.
#define DSC_MOE_FAST_ENTRY(name, step, kE4m3, PARAMS, ARGS)                                    \
  DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kGemvWarps, 4) name(PARAMS) {               \
    DSC_KERNEL_PROLOGUE();                                                                     \
    dsc_moe_fast::step<kE4m3>(ARGS);                                                           \
  }
DSC_MOE_FAST_ENTRY(dsc_moe_experts_up_fast, upFast, false, DSC_MOE_UP_PARAMS, DSC_MOE_UP_ARGS)
DSC_MOE_FAST_ENTRY(dsc_moe_experts_up_fast_e4m3, upFast, true, DSC_MOE_UP_PARAMS, DSC_MOE_UP_ARGS)

namespace dsc_moe_fast {
template <bool kE4m3>
__device__ void downFast(const unsigned short *hq, const unsigned char *gCodes,
                         const float *gScales, long long T, long long I, long long D,
                         const unsigned char *w2, const unsigned char *w2s, const unsigned char *s2,
                         const unsigned char *s2s, const int *ids, long long k, long long E,
                         float *outs) {
  extern __shared__ __align__(16) unsigned char smem[];
  const Smem m = setup(hq, gCodes, gScales, T * (k + 1), I, smem);
  const int lane = threadIdx.x & 31, g = lane >> 2;
  const bool writer = threadIdx.x < 32 && (lane & 3) == 0;
  const long long kb = I / 32, dTiles = (D + 15) / 16, perToken = (k + 1) * dTiles;
  long long j0, j1;
  dsc_gemv::warpBlocks(kb, j0, j1);
  for (long long item = blockIdx.x; item < T * perToken; item += gridDim.x) {
    const TileItem it = tileItem(item, k, D, ids);
    const long long t = it.t, slot = it.slot, d0 = it.r0, rG = it.rG, rG8 = it.rG8, x = it.x;
    const bool routed = it.routed;
    if (routed && (x < 0 || x >= E))
      continue; // block-uniform; the combine step skips the slot
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    const long long hrow = t * (k + 1) + slot;
    if (routed) {
      const long long a = x * D + rG, b = x * D + rG8;
      dsc_gemv::tileDots<true, kE4m3>(w2 + a * (I / 2), w2 + b * (I / 2), w2s + a * kb,
                                      w2s + b * kb, m.codes, m.scales, I, hrow, 1, j0, j1, acc);
    } else {
      dsc_gemv::tileDots<false, kE4m3>(s2 + rG * I, s2 + rG8 * I, s2s + (rG / 32) * kb,
                                       s2s + (rG8 / 32) * kb, m.codes, m.scales, I, hrow, 1, j0, j1,
                                       acc);
    }
    dsc_gemv::combineWarps(acc, m.comb);
    if (writer) {
      float *o = outs + hrow * D;
      if (d0 + g < D)
        o[d0 + g] = roundToBf16(acc[0]);
      if (d0 + g + 8 < D)
        o[d0 + g + 8] = roundToBf16(acc[2]);
    }
  }
}
} // namespace dsc_moe_fast

DSC_MOE_FAST_ENTRY(dsc_moe_experts_down_fast, downFast, false, DSC_MOE_DOWN_PARAMS,
                   DSC_MOE_DOWN_ARGS)
DSC_MOE_FAST_ENTRY(dsc_moe_experts_down_fast_e4m3, downFast, true, DSC_MOE_DOWN_PARAMS,
                   DSC_MOE_DOWN_ARGS)

// Lane-block path (lane_gemv.cuh; CudaOptions::laneGemv, the default): the
// same steps and operands as the fast path, one warp per (t, slot, 8 rows).
//===----------------------------------------------------------------------===//

namespace dsc_moe_fast {
/// Work item n of T * (k + 1) * ceil(rowsOut / kTileRows): token t, slot (k:
/// the shared expert), first output row r0, expert id x (routed slots:
/// ids[t, slot], else 0), validity (a routed id outside [0, E) is skipped).
struct SlotItem {
  long long t, slot, r0, x;
  bool routed, valid;
};
template <int kTileRows>
__device__ __forceinline__ SlotItem slotItem(long long n, long long k, long long rowsOut,
                                             const int *ids, long long E) {
  const long long tiles = (rowsOut + kTileRows - 1) / kTileRows, perToken = (k + 1) * tiles;
  SlotItem it;
  it.t = n / perToken;
  const long long rem = n - it.t * perToken;
  it.slot = rem / tiles;
  it.r0 = (rem - it.slot * tiles) * kTileRows;
  it.routed = it.slot < k;
  it.x = it.routed ? ids[it.t * k + it.slot] : 0;
  it.valid = !it.routed || (it.x >= 0 && it.x < E);
  return it;
}
} // namespace dsc_moe_fast

namespace dsc_moe_lanes {
/// One warp item: token t, slot (k = the shared expert), the first output
/// row r0 of its kMoeLaneRoutedRows (routed: two lane tiles, r0 and r0 + 8)
/// or kMoeLaneSharedRows (shared: one tile), the slot's expert x (routed
/// slots: ids[t, slot], else 0). Items of a token: its k routed slots' tiles
/// in slot order, then the shared expert's; every item streams the same
/// weight bytes (16 FP4 rows or 8 FP8 rows), so one wave of warps ends
/// together (moeLaneItems, GemvLaunch.h, counts them).
struct Item {
  long long t, slot, r0, x;
  bool routed, valid;
};
__device__ __forceinline__ Item item(long long n, long long k, long long rowsOut, const int *ids,
                                     long long E) {
  constexpr long long kR = dsc::abi::kMoeLaneRoutedRows, kS = dsc::abi::kMoeLaneSharedRows;
  const long long tilesR = (rowsOut + kR - 1) / kR, tilesS = (rowsOut + kS - 1) / kS,
                  perToken = k * tilesR + tilesS;
  Item it;
  it.t = n / perToken;
  const long long rem = n - it.t * perToken;
  it.routed = rem < k * tilesR;
  it.slot = it.routed ? rem / tilesR : k;
  it.r0 = it.routed ? (rem - it.slot * tilesR) * kR : (rem - k * tilesR) * kS;
  it.x = it.routed ? ids[it.t * k + it.slot] : 0;
  it.valid = !it.routed || (it.x >= 0 && it.x < E);
  return it;
}
/// Every item of a step over T tokens (rowsOut output rows per slot) this
/// warp takes, grid-strided: f(it) for a valid one, invalid(it) for a
/// routed slot whose expert id is outside [0, E) (warp-uniform).
template <class Invalid, class F>
__device__ __forceinline__ void eachItem(long long T, long long k, long long rowsOut,
                                         const int *ids, long long E, Invalid invalid, F f) {
  const long long items = dsc::abi::moeLaneItems(T, k, rowsOut);
  for (long long n = dsc_gemv::firstRow(); n < items; n += dsc_gemv::rowStride()) {
    const Item it = item(n, k, rowsOut, ids, E);
    if (it.valid)
      f(it);
    else
      invalid(it);
  }
}
/// Zeroes an item's output rows of hs (lanes 0..7, one row per tile each).
__device__ __forceinline__ void zeroItem(const Item &it, long long rowsOut, unsigned short *hs) {
  constexpr long long kTile = dsc::abi::kLaneTileRows;
  const int lane = threadIdx.x & 31, tiles = it.routed ? 2 : 1;
  for (int q = 0; q < tiles; ++q)
    if (lane < kTile && it.r0 + q * kTile + lane < rowsOut)
      hs[it.r0 + q * kTile + lane] = 0;
}
/// Output row r (clamped to the last: computed, not written).
__device__ __forceinline__ long long clampRow(long long r, long long rowsOut) {
  return r < rowsOut ? r : rowsOut - 1;
}
/// The lane's rows of lane tile r0: rg = r0 + g (its weight row), ra / rb =
/// r0 + 2t, + 1 (its output rows), clamped.
struct TileRows {
  long long rg, ra, rb;
};
__device__ __forceinline__ TileRows tileRows(long long r0, long long rowsOut) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  return {clampRow(r0 + g, rowsOut), clampRow(r0 + 2 * t, rowsOut),
          clampRow(r0 + 2 * t + 1, rowsOut)};
}
/// Calls f(q, i, row) for each output row r0 + 8q + 2t + i (lane tile q <
/// tiles, row < rowsOut) lane t of lanes 0..3 holds after reduceResidues.
template <class F>
__device__ __forceinline__ void eachOutputRow(const Item &it, int tiles, long long rowsOut, F f) {
  const int t = threadIdx.x & 3;
#pragma unroll
  for (int q = 0; q < 2; ++q)
#pragma unroll
    for (int i = 0; i < 2; ++i) {
      const long long row = it.r0 + q * dsc::abi::kLaneTileRows + 2 * t + i;
      if (q < tiles && row < rowsOut)
        f(q, i, row);
    }
}
} // namespace dsc_moe_lanes

DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kMoeLaneUpWarps, dsc::abi::kMoeLaneUpBlocksPerSm)
    dsc_moe_experts_up_lanes(DSC_MOE_UP_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(16) unsigned char smem[];
  const dsc_moe_fast::Smem m = dsc_moe_fast::setup(xq, gCodes, gScales, T, D, smem);
  const float lim = (float)p.swiglu_limit;
  constexpr long long kTile = dsc::abi::kLaneTileRows;
  const int lane = threadIdx.x & 31;
  const long long kb = D / 32, items = dsc::abi::moeLaneItems(T, k, I);
  for (long long n = dsc_gemv::firstRow(); n < items; n += dsc_gemv::rowStride()) {
    const dsc_moe_lanes::Item it = dsc_moe_lanes::item(n, k, I, ids, E);
    unsigned short *hs = h + (it.t * (k + 1) + it.slot) * I;
    const int tiles = it.routed ? 2 : 1; // lane tiles of the item (warp-uniform)
    if (!it.valid) { // an invalid slot contributes nothing (warp-uniform)
      for (int q = 0; q < tiles; ++q)
        if (lane < kTile && it.r0 + q * kTile + lane < I)
          hs[it.r0 + q * kTile + lane] = 0;
      continue;
    }
    // acc[2q] / acc[2q + 1]: w1 / w3 of lane tile q.
    float acc[4][4] = {};
    if (it.routed) {
      const long long e = it.x * I;
      const dsc_moe_lanes::TileRows a = dsc_moe_lanes::tileRows(it.r0, I),
                                    b = dsc_moe_lanes::tileRows(it.r0 + kTile, I);
      const unsigned char *wr[4] = {w1 + (e + a.rg) * (D / 2), w3 + (e + a.rg) * (D / 2),
                                    w1 + (e + b.rg) * (D / 2), w3 + (e + b.rg) * (D / 2)},
                          *sa[4] = {w1s + (e + a.ra) * kb, w3s + (e + a.ra) * kb,
                                    w1s + (e + b.ra) * kb, w3s + (e + b.ra) * kb},
                          *sb[4] = {w1s + (e + a.rb) * kb, w3s + (e + a.rb) * kb,
                                    w1s + (e + b.rb) * kb, w3s + (e + b.rb) * kb};
      dsc_lanes::laneDots<true, 4, 1>(wr, sa, sb, m.codes, m.scales, D, it.t, 1, 0, kb, acc);
    } else {
      const dsc_moe_lanes::TileRows a = dsc_moe_lanes::tileRows(it.r0, I);
      const unsigned char *wr[2] = {s1 + a.rg * D, s3 + a.rg * D},
                          *sa[2] = {s1s + (a.ra / 32) * kb, s3s + (a.ra / 32) * kb},
                          *sb[2] = {s1s + (a.rb / 32) * kb, s3s + (a.rb / 32) * kb};
      dsc_lanes::laneDots<false, 2, 1>(wr, sa, sb, m.codes, m.scales, D, it.t, 1, 0, kb, acc);
    }
#pragma unroll
    for (int q = 0; q < 2; ++q)
      if (q < tiles) {
        dsc_lanes::reduceResidues<2>(acc[2 * q]);
        dsc_lanes::reduceResidues<2>(acc[2 * q + 1]);
      }
    if (lane < 4) { // activation row 0 (token t), output rows r0 + 8q + 2t, + 1
      const float rw = it.routed ? weights[it.t * k + it.slot] : 0.0f;
      dsc_moe_lanes::eachOutputRow(it, tiles, I, [&](int q, int i, long long row) {
        hs[row] = dsc_dense_moe::swiglu(roundToBf16(acc[2 * q][i]),
                                        roundToBf16(acc[2 * q + 1][i]), lim, it.routed, rw);
      });
    }
  }
}

DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kMoeLaneDownWarps,
                                  dsc::abi::kMoeLaneDownBlocksPerSm)
    dsc_moe_experts_down_lanes(DSC_MOE_DOWN_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(16) unsigned char smem[];
  const dsc_moe_fast::Smem m = dsc_moe_fast::setup(hq, gCodes, gScales, T * (k + 1), I, smem);
  constexpr long long kTile = dsc::abi::kLaneTileRows;
  const int lane = threadIdx.x & 31;
  const long long kb = I / 32, items = dsc::abi::moeLaneItems(T, k, D);
  for (long long n = dsc_gemv::firstRow(); n < items; n += dsc_gemv::rowStride()) {
    const dsc_moe_lanes::Item it = dsc_moe_lanes::item(n, k, D, ids, E);
    if (!it.valid)
      continue; // warp-uniform; the combine step skips the slot
    const long long hrow = it.t * (k + 1) + it.slot;
    const int tiles = it.routed ? 2 : 1;
    float acc[2][4] = {};
    if (it.routed) {
      const long long e = it.x * D;
      const dsc_moe_lanes::TileRows a = dsc_moe_lanes::tileRows(it.r0, D),
                                    b = dsc_moe_lanes::tileRows(it.r0 + kTile, D);
      const unsigned char *wr[2] = {w2 + (e + a.rg) * (I / 2), w2 + (e + b.rg) * (I / 2)},
                          *sa[2] = {w2s + (e + a.ra) * kb, w2s + (e + b.ra) * kb},
                          *sb[2] = {w2s + (e + a.rb) * kb, w2s + (e + b.rb) * kb};
      dsc_lanes::laneDots<true, 2, 1>(wr, sa, sb, m.codes, m.scales, I, hrow, 1, 0, kb, acc);
    } else {
      const dsc_moe_lanes::TileRows a = dsc_moe_lanes::tileRows(it.r0, D);
      const unsigned char *wr = s2 + a.rg * I, *sa = s2s + (a.ra / 32) * kb,
                          *sb = s2s + (a.rb / 32) * kb;
      dsc_lanes::laneDots<false, 1, 1>(&wr, &sa, &sb, m.codes, m.scales, I, hrow, 1, 0, kb,
                                       acc);
    }
#pragma unroll
    for (int q = 0; q < 2; ++q)
      if (q < tiles)
        dsc_lanes::reduceResidues<2>(acc[q]);
    if (lane < 4) {
      float *o = outs + hrow * D;
      dsc_moe_lanes::eachOutputRow(it, tiles, D,
                                   [&](int q, int i, long long row) { o[row] = roundToBf16(acc[q][i]); });
    }
  }
}

//===----------------------------------------------------------------------===//
// Row-lane entries (row_gemv.cuh; CudaOptions::gemv == Rows): the items,
// operands and outputs of the lanes entries (dsc_moe_lanes::Item: a routed
// slot's 16 FP4 rows, the shared expert's 8 FP8 rows), each lane streaming
// its own row; the activations staged as f16 (rowsSmem), or the global codes.
//===----------------------------------------------------------------------===//

namespace dsc_moe_rows {
/// The lane's row of lane tile r0 (r0 + g), clamped to the last.
__device__ __forceinline__ long long laneRow(long long r0, long long rowsOut) {
  return dsc_moe_lanes::clampRow(r0 + ((threadIdx.x & 31) >> 2), rowsOut);
}
/// Calls f(q, row) for lane tile q's row r0 + 8q + g of this lane, in the
/// lanes that write it (group 0), for rows < rowsOut.
template <class F>
__device__ __forceinline__ void eachLaneRow(const dsc_moe_lanes::Item &it, int tiles,
                                            long long rowsOut, F f) {
  const int lane = threadIdx.x & 31;
  if ((lane & 3) != 0)
    return;
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    const long long row = it.r0 + q * dsc::abi::kLaneTileRows + (lane >> 2);
    if (q < tiles && row < rowsOut)
      f(q, row);
  }
}
} // namespace dsc_moe_rows

DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kMoeLaneUpWarps, dsc::abi::kMoeLaneUpBlocksPerSm)
    dsc_moe_experts_up_rows(DSC_MOE_UP_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(16) unsigned char smem[];
  const dsc_rows::Acts a = dsc_rows::stageHalf(xq, gCodes, gScales, T, D, smem);
  const float lim = (float)p.swiglu_limit;
  constexpr long long kTile = dsc::abi::kLaneTileRows;
  const long long kb = D / 32;
  auto hsOf = [&](dsc_moe_lanes::Item it) { return h + (it.t * (k + 1) + it.slot) * I; };
  dsc_moe_lanes::eachItem(T, k, I, ids, E, [&](dsc_moe_lanes::Item it) {
    dsc_moe_lanes::zeroItem(it, I, hsOf(it)); // an invalid slot contributes nothing
  }, [&](dsc_moe_lanes::Item it) {
    unsigned short *hs = hsOf(it);
    const int tiles = it.routed ? 2 : 1; // lane tiles of the item (warp-uniform)
    // acc[2q] / acc[2q + 1]: w1 / w3 of lane tile q.
    float acc[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    if (it.routed) {
      const long long e = it.x * I, ra = e + dsc_moe_rows::laneRow(it.r0, I),
                      rb = e + dsc_moe_rows::laneRow(it.r0 + kTile, I);
      const unsigned char *wr[4] = {w1 + ra * (D / 2), w3 + ra * (D / 2), w1 + rb * (D / 2),
                                    w3 + rb * (D / 2)},
                          *sr[4] = {w1s + ra * kb, w3s + ra * kb, w1s + rb * kb, w3s + rb * kb};
      dsc_rows::rowDots<true, 4>(wr, sr, a, D, it.t, 1, 0, kb,
                                 reinterpret_cast<float(*)[1]>(acc));
    } else {
      const long long r = dsc_moe_rows::laneRow(it.r0, I);
      const unsigned char *wr[2] = {s1 + r * D, s3 + r * D},
                          *sr[2] = {s1s + (r / 32) * kb, s3s + (r / 32) * kb};
      dsc_rows::rowDots<false, 2>(wr, sr, a, D, it.t, 1, 0, kb,
                                  reinterpret_cast<float(*)[1]>(acc));
    }
    dsc_rows::rowTotals<4>(acc);
    const float rw = it.routed ? weights[it.t * k + it.slot] : 0.0f;
    dsc_moe_rows::eachLaneRow(it, tiles, I, [&](int q, long long row) {
      hs[row] = dsc_dense_moe::swiglu(roundToBf16(acc[2 * q]), roundToBf16(acc[2 * q + 1]), lim,
                                      it.routed, rw);
    });
  });
}

/// Whether the down step's row lanes load a step ahead (registers; the up
/// step does): a compile-time knob for dsc-kernel-bench --define.
#ifndef DSC_MOE_ROWS_DOWN_AHEAD
#define DSC_MOE_ROWS_DOWN_AHEAD 0
#endif

DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kMoeLaneDownWarps,
                                  dsc::abi::kMoeLaneDownBlocksPerSm)
    dsc_moe_experts_down_rows(DSC_MOE_DOWN_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(16) unsigned char smem[];
  const dsc_rows::Acts a = dsc_rows::stageHalf(hq, gCodes, gScales, T * (k + 1), I, smem);
  constexpr long long kTile = dsc::abi::kLaneTileRows;
  const long long kb = I / 32;
  // An invalid slot: nothing (the combine step skips it).
  dsc_moe_lanes::eachItem(T, k, D, ids, E, [](dsc_moe_lanes::Item) {},
                          [&](dsc_moe_lanes::Item it) {
    const long long hrow = it.t * (k + 1) + it.slot;
    const int tiles = it.routed ? 2 : 1;
    float acc[2] = {0.0f, 0.0f};
    if (it.routed) {
      const long long e = it.x * D, ra = e + dsc_moe_rows::laneRow(it.r0, D),
                      rb = e + dsc_moe_rows::laneRow(it.r0 + kTile, D);
      const unsigned char *wr[2] = {w2 + ra * (I / 2), w2 + rb * (I / 2)},
                          *sr[2] = {w2s + ra * kb, w2s + rb * kb};
      dsc_rows::rowDots<true, 2, bool(DSC_MOE_ROWS_DOWN_AHEAD)>(wr, sr, a, I, hrow, 1, 0, kb,
                                         reinterpret_cast<float(*)[1]>(acc));
    } else {
      const long long r = dsc_moe_rows::laneRow(it.r0, D);
      const unsigned char *wr = s2 + r * I, *sr = s2s + (r / 32) * kb;
      dsc_rows::rowDots<false, 1, bool(DSC_MOE_ROWS_DOWN_AHEAD)>(&wr, &sr, a, I, hrow, 1, 0, kb,
                                          reinterpret_cast<float(*)[1]>(acc));
    }
    dsc_rows::rowTotals<2>(acc);
    float *o = outs + hrow * D;
    dsc_moe_rows::eachLaneRow(it, tiles, D,
                              [&](int q, long long row) { o[row] = roundToBf16(acc[q]); });
  });
}

//===----------------------------------------------------------------------===//
// Block-slot entries (CudaOptions::gemv == Slots): the operands and outputs of
// the lanes entries, one warp per (t, slot, 16 rows) on slot_gemv.cuh's tiles.
//===----------------------------------------------------------------------===//

namespace dsc_moe_slots {
using Item = dsc_moe_fast::SlotItem;
__device__ __forceinline__ Item item(long long n, long long k, long long rowsOut, const int *ids,
                                     long long E) {
  return dsc_moe_fast::slotItem<dsc_slots::kTileRows>(n, k, rowsOut, ids, E);
}
/// This warp's share of a slot item: kSlotMoeItemWarps warps split its kb K
/// blocks in whole steps of four (warp ws: [j0, j1)).
__device__ __forceinline__ void slotShare(long long kb, int ws, long long &j0, long long &j1) {
  constexpr int kW = dsc::abi::kSlotMoeItemWarps;
  const long long per = ((kb + kW - 1) / kW + 3) / 4 * 4;
  j0 = ws * per < kb ? ws * per : kb;
  j1 = j0 + per < kb ? j0 + per : kb;
}
/// Sums the item's warps' v[kN] in warp order through comb (deterministic):
/// afterwards the item's first warp holds the totals. All threads of the
/// block call it (two barriers).
template <int kN> __device__ __forceinline__ void slotCombine(float *v, float *comb) {
  constexpr int kW = dsc::abi::kSlotMoeItemWarps;
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, ws = warp % kW;
  for (int i = 0; i < kN; ++i)
    comb[(warp * 32 + lane) * 4 + i] = v[i];
  __syncthreads();
  if (ws == 0)
    for (int i = 0; i < kN; ++i) {
      float total = v[i];
      for (int w = 1; w < kW; ++w)
        total = __fadd_rn(total, comb[((warp + w) * 32 + lane) * 4 + i]);
      v[i] = total;
    }
  __syncthreads();
}
} // namespace dsc_moe_slots

namespace dsc_moe_slots {
/// The block's share of `items` slot items over rowsOut output rows: each
/// split over kSlotMoeItemWarps warps (more loads in flight than a warp per
/// item: one token's slots are few tiles). dots(it, j0, j1, acc) adds the
/// warp's K share [j0, j1) for a valid item; the shares are combined in warp
/// order and emit(it, acc) runs on the item's first warp (every item, valid
/// or not). All threads of the block call it.
template <int kN, typename Dots, typename Emit>
__device__ __forceinline__ void slotItems(long long items, long long k, long long rowsOut,
                                          const int *ids, long long E, long long kb, float *comb,
                                          Dots dots, Emit emit) {
  constexpr int kW = dsc::abi::kSlotMoeItemWarps;
  const int warp = threadIdx.x >> 5, ws = warp % kW;
  const long long perBlock = (blockDim.x >> 5) / kW;
  for (long long base = blockIdx.x * perBlock; base < items; base += gridDim.x * perBlock) {
    const long long n = base + warp / kW;
    float acc[kN] = {};
    Item it{};
    if (n < items) {
      it = item(n, k, rowsOut, ids, E);
      long long j0, j1;
      slotShare(kb, ws, j0, j1);
      if (it.valid)
        dots(it, j0, j1, acc);
      dsc_slots::sumSlots<kN>(acc);
    }
    slotCombine<kN>(acc, comb);
    if (n < items && ws == 0)
      emit(it, acc);
  }
}
} // namespace dsc_moe_slots

DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kGemvWarps, 2)
    dsc_moe_experts_up_slots(DSC_MOE_UP_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(16) unsigned char smem[];
  const dsc_moe_fast::Smem m = dsc_moe_fast::setup(xq, gCodes, gScales, T, D, smem);
  const float lim = (float)p.swiglu_limit;
  const int lane = threadIdx.x & 31, g = lane >> 2;
  const long long kb = D / 32, rowsPer = dsc_slots::kTileRows;
  const long long items = T * (k + 1) * ((I + rowsPer - 1) / rowsPer);
  auto dots = [&](const dsc_moe_slots::Item &it, long long j0, long long j1, float *acc) {
    float(*a)[1][2] = reinterpret_cast<float(*)[1][2]>(acc); // [w1, w3][pass][rows g, g + 8]
    if (it.routed) {
      const long long e = it.x * I;
      const dsc_slots::Rows mats[2] = {
          dsc_slots::tileRows<true>(w1 + e * (D / 2), w1s + e * kb, I, D, it.r0),
          dsc_slots::tileRows<true>(w3 + e * (D / 2), w3s + e * kb, I, D, it.r0)};
      dsc_slots::slotDots<true, 2, 1>(mats, m.codes, m.scales, D, it.t, 1, j0, j1, a);
    } else {
      const dsc_slots::Rows mats[2] = {dsc_slots::tileRows<false>(s1, s1s, I, D, it.r0),
                                       dsc_slots::tileRows<false>(s3, s3s, I, D, it.r0)};
      dsc_slots::slotDots<false, 2, 1>(mats, m.codes, m.scales, D, it.t, 1, j0, j1, a);
    }
  };
  // Activation row 0 (token t) in the lanes with t = 0: output rows r0 + g,
  // r0 + g + 8; an invalid slot contributes nothing (zeros).
  auto emit = [&](const dsc_moe_slots::Item &it, const float *acc) {
    if ((lane & 3) != 0)
      return;
    unsigned short *hs = h + (it.t * (k + 1) + it.slot) * I;
    const float rw = it.routed && it.valid ? weights[it.t * k + it.slot] : 0.0f;
    for (int r = 0; r < 2; ++r) {
      const long long row = it.r0 + g + 8 * r;
      if (row < I)
        hs[row] = it.valid ? dsc_dense_moe::swiglu(roundToBf16(acc[r]), roundToBf16(acc[2 + r]),
                                                   lim, it.routed, rw)
                           : (unsigned short)0;
    }
  };
  dsc_moe_slots::slotItems<4>(items, k, I, ids, E, kb, m.comb, dots, emit);
}

DSC_KERNEL void __launch_bounds__(32 * dsc::abi::kGemvWarps, 2)
    dsc_moe_experts_down_slots(DSC_MOE_DOWN_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(16) unsigned char smem[];
  const dsc_moe_fast::Smem m = dsc_moe_fast::setup(hq, gCodes, gScales, T * (k + 1), I, smem);
  const int lane = threadIdx.x & 31, g = lane >> 2;
  const long long kb = I / 32, rowsPer = dsc_slots::kTileRows;
  const long long items = T * (k + 1) * ((D + rowsPer - 1) / rowsPer);
  auto dots = [&](const dsc_moe_slots::Item &it, long long j0, long long j1, float *acc) {
    float(*a)[1][2] = reinterpret_cast<float(*)[1][2]>(acc);
    const long long hrow = it.t * (k + 1) + it.slot;
    if (it.routed) {
      const long long e = it.x * D;
      const dsc_slots::Rows mat =
          dsc_slots::tileRows<true>(w2 + e * (I / 2), w2s + e * kb, D, I, it.r0);
      dsc_slots::slotDots<true, 1, 1>(&mat, m.codes, m.scales, I, hrow, 1, j0, j1, a);
    } else {
      const dsc_slots::Rows mat = dsc_slots::tileRows<false>(s2, s2s, D, I, it.r0);
      dsc_slots::slotDots<false, 1, 1>(&mat, m.codes, m.scales, I, hrow, 1, j0, j1, a);
    }
  };
  // An invalid slot writes nothing; the combine step skips it.
  auto emit = [&](const dsc_moe_slots::Item &it, const float *acc) {
    if (!it.valid || (lane & 3) != 0)
      return;
    float *o = outs + (it.t * (k + 1) + it.slot) * D;
    for (int r = 0; r < 2; ++r) {
      const long long row = it.r0 + g + 8 * r;
      if (row < D)
        o[row] = roundToBf16(acc[r]);
    }
  };
  dsc_moe_slots::slotItems<2>(items, k, D, ids, E, kb, m.comb, dots, emit);
}

//===----------------------------------------------------------------------===//
// Warpgroup entries (CudaOptions::gemv == Warpgroups): the operands and
// outputs of the lanes entries, one block per (t, slot, 64 rows) on
// wg_gemv.cuh's tiles (its warpgroups split K); each item stages its
// activation row in the k order of its weights' format (FP4 routed, FP8
// shared). The adapter launches them only for K % 128 == 0 and K / 32 <=
// dsc::abi::kWgMaxStageBlocks, with dsc::abi::wgSharedBytes(K / 32, mats).
//===----------------------------------------------------------------------===//

namespace dsc_moe_wg {
using Item = dsc_moe_fast::SlotItem;
__device__ __forceinline__ Item item(long long n, long long k, long long rowsOut, const int *ids,
                                     long long E) {
  return dsc_moe_fast::slotItem<dsc_wg::kRows>(n, k, rowsOut, ids, E);
}
} // namespace dsc_moe_wg

DSC_KERNEL void __launch_bounds__(dsc::abi::kWgThreads, 2)
    dsc_moe_experts_up_wg(DSC_MOE_UP_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(1024) unsigned char wgSmem[];
  const float lim = (float)p.swiglu_limit;
  const int q = threadIdx.x & 3;
  const long long kb = D / 32, items = T * (k + 1) * ((I + dsc_wg::kRows - 1) / dsc_wg::kRows);
  for (long long n = blockIdx.x; n < items; n += gridDim.x) {
    const dsc_moe_wg::Item it = dsc_moe_wg::item(n, k, I, ids, E);
    unsigned short *hs = h + (it.t * (k + 1) + it.slot) * I;
    if (!it.valid) { // an invalid slot contributes nothing (block-uniform)
      if (threadIdx.x < dsc_wg::kRows && it.r0 + threadIdx.x < I)
        hs[it.r0 + threadIdx.x] = 0;
      continue;
    }
    long long ra, rb;
    dsc_wg::threadRows(it.r0, I, ra, rb);
    float acc[2][4];
    if (it.routed) {
      const long long e = it.x * I;
      dsc_wg::Tile<true, 2> tl; // the gate, then the up projection
      tl.w[0][0] = w1 + (e + ra) * (D / 2);
      tl.w[0][1] = w1 + (e + rb) * (D / 2);
      tl.w[1][0] = w3 + (e + ra) * (D / 2);
      tl.w[1][1] = w3 + (e + rb) * (D / 2);
      tl.s[0][0] = w1s + (e + ra) * kb;
      tl.s[0][1] = w1s + (e + rb) * kb;
      tl.s[1][0] = w3s + (e + ra) * kb;
      tl.s[1][1] = w3s + (e + rb) * kb;
      dsc_wg::tileItem<true, 2>(tl, xq, gCodes, gScales, D, it.t, 1, 0, kb, wgSmem, acc);
    } else {
      dsc_wg::Tile<false, 2> tl;
      tl.w[0][0] = s1 + ra * D;
      tl.w[0][1] = s1 + rb * D;
      tl.w[1][0] = s3 + ra * D;
      tl.w[1][1] = s3 + rb * D;
      tl.s[0][0] = tl.s[0][1] = s1s + (ra / 32) * kb;
      tl.s[1][0] = tl.s[1][1] = s3s + (ra / 32) * kb;
      dsc_wg::tileItem<false, 2>(tl, xq, gCodes, gScales, D, it.t, 1, 0, kb, wgSmem, acc);
    }
    if ((threadIdx.x >> 7) == 0 && q == 0) { // activation row 0 (token t)
      const float rw = it.routed ? weights[it.t * k + it.slot] : 0.0f;
#pragma unroll
      for (int i = 0; i < 4; i += 2) {
        const long long row = (i == 0 ? ra : rb), want = it.r0 + 16 * ((threadIdx.x >> 5) & 3) +
                                                         ((threadIdx.x & 31) >> 2) + (i ? 8 : 0);
        if (want < I && row == want)
          hs[row] = dsc_dense_moe::swiglu(roundToBf16(acc[0][i]), roundToBf16(acc[1][i]), lim,
                                          it.routed, rw);
      }
    }
  }
}

DSC_KERNEL void __launch_bounds__(dsc::abi::kWgThreads, 2)
    dsc_moe_experts_down_wg(DSC_MOE_DOWN_PARAMS) {
  DSC_KERNEL_PROLOGUE();
  extern __shared__ __align__(1024) unsigned char wgSmem[];
  const int q = threadIdx.x & 3;
  const long long kb = I / 32, items = T * (k + 1) * ((D + dsc_wg::kRows - 1) / dsc_wg::kRows);
  for (long long n = blockIdx.x; n < items; n += gridDim.x) {
    const dsc_moe_wg::Item it = dsc_moe_wg::item(n, k, D, ids, E);
    if (!it.valid)
      continue; // block-uniform; the combine step skips the slot
    const long long hrow = it.t * (k + 1) + it.slot;
    long long ra, rb;
    dsc_wg::threadRows(it.r0, D, ra, rb);
    float acc[1][4];
    if (it.routed) {
      const long long e = it.x * D;
      dsc_wg::Tile<true, 1> tl;
      tl.w[0][0] = w2 + (e + ra) * (I / 2);
      tl.w[0][1] = w2 + (e + rb) * (I / 2);
      tl.s[0][0] = w2s + (e + ra) * kb;
      tl.s[0][1] = w2s + (e + rb) * kb;
      dsc_wg::tileItem<true, 1>(tl, hq, gCodes, gScales, I, hrow, 1, 0, kb, wgSmem, acc);
    } else {
      dsc_wg::Tile<false, 1> tl;
      tl.w[0][0] = s2 + ra * I;
      tl.w[0][1] = s2 + rb * I;
      tl.s[0][0] = tl.s[0][1] = s2s + (ra / 32) * kb;
      dsc_wg::tileItem<false, 1>(tl, hq, gCodes, gScales, I, hrow, 1, 0, kb, wgSmem, acc);
    }
    if ((threadIdx.x >> 7) == 0 && q == 0) {
      float *o = outs + hrow * D;
#pragma unroll
      for (int i = 0; i < 4; i += 2) {
        const long long row = (i == 0 ? ra : rb), want = it.r0 + 16 * ((threadIdx.x >> 5) & 3) +
                                                         ((threadIdx.x & 31) >> 2) + (i ? 8 : 0);
        if (want < D && row == want)
          o[row] = roundToBf16(acc[0][i]);
      }
    }
  }
}


DSC_KERNEL void dsc_moe_experts_combine_fast(const float *outs, const int *ids, long long T,
                                             long long k, long long E, long long D,
                                             unsigned short *y) {
  DSC_KERNEL_PROLOGUE();
  // Grid (ceil(D / (blockDim * kPer)), tokens). The token's valid slots in
  // ascending expert id (ties: slot order), as the CPU's expert loop adds
  // them: thread j < k ranks slot j among the valid ones (its place in that
  // order) from the ids staged in shared memory; every thread then sums its
  // kPer channels in that order, their loads issued together.
  constexpr int kPer = dsc::abi::kMoeCombinePerThread, kMax = dsc::abi::kMoeCombineMaxTopk;
  __shared__ int id[kMax], slots[kMax];
  __shared__ int count;
  const long long t = blockIdx.y;
  if (threadIdx.x < k)
    id[threadIdx.x] = ids[t * k + threadIdx.x];
  __syncthreads();
  auto valid = [&](int j) { return id[j] >= 0 && id[j] < E; };
  if (threadIdx.x < k && valid(threadIdx.x)) {
    const int j = threadIdx.x;
    int rank = 0;
    for (int i = 0; i < k; ++i)
      rank += valid(i) && (id[i] < id[j] || (id[i] == id[j] && i < j));
    slots[rank] = j;
  }
  if (threadIdx.x == 0) {
    int n = 0;
    for (int i = 0; i < k; ++i)
      n += valid(i);
    count = n;
  }
  __syncthreads();
  const int n = count;
  const float *o = outs + t * (k + 1) * D;
  const long long d0 = (long long)blockIdx.x * blockDim.x * kPer + threadIdx.x;
  float total[kPer];
#pragma unroll
  for (int u = 0; u < kPer; ++u)
    total[u] = 0.0f;
#pragma unroll 8
  for (int i = 0; i < n; ++i) {
    const float *os = o + (long long)slots[i] * D;
#pragma unroll
    for (int u = 0; u < kPer; ++u) {
      const long long d = d0 + (long long)u * blockDim.x;
      if (d < D)
        total[u] = __fadd_rn(total[u], os[d]);
    }
  }
#pragma unroll
  for (int u = 0; u < kPer; ++u) {
    const long long d = d0 + (long long)u * blockDim.x;
    if (d < D)
      y[t * D + d] = bf16FromFloat(__fadd_rn(total[u], o[k * D + d]));
  }
}
