//===- GemvLaunch.h - Launch shapes of the fast GEMV kernels ---------------===//
//
// What: the host side shared by every adapter that launches the fast GEMV
// entries of codegen/kernels/gemv.cuh (linear, head, grouped_output, MoE,
// indexer queries, compressor): grids, shared-memory budgets, alignment
// checks, act_quant scratch and the quantised (FP8/FP4) tensor-core GEMV
// launch with its shared-memory or global-scratch activation path.
// Invariants: the constants mirror gemv.cuh (kWarps, kCombineBytes,
// quantBytes); the numerics of a row never depend on which activation path
// ran (the same act_quant codes either way), so a call's shape never changes
// its bytes (CED exact == full, chunked == one call).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CUDA_GEMVLAUNCH_H
#define DSC_RUNTIME_CUDA_GEMVLAUNCH_H

#include "dsc/abi/LaunchShapes.h"
#include "runtime/cuda/CudaAdapter.h"

#include <algorithm>
#include <initializer_list>
#include <string>

namespace dsc::cuda {

using runtime::Expected;

/// The fast GEMV entries' launch shape: kGemvWarps warps per block; the bf16
/// GEMVs take one output row per warp (gemvGrid), the tensor-core tiles one
/// block per 16 x 8 tile (tileGrid), grid-strided beyond kMaxGemvBlocks.
constexpr unsigned kGemvWarps = abi::kGemvWarps;
/// SMs of the parts the launch shapes below are tuned for (H100 and H200
/// SXM: 132). Every grid is grid-strided, so another part runs the same
/// shapes correctly (and gets the same split-K sums, hence the same bytes),
/// only not tuned for its SM count.
constexpr long long kTunedSms = 132;
constexpr long long kMaxGemvBlocks = kTunedSms * 16;
/// Dynamic shared memory a kernel gets without opting in.
constexpr size_t kSharedLimit = 48 * 1024;
inline Dim3 gemvGrid(long long rows) {
  long long b = (rows + kGemvWarps - 1) / kGemvWarps;
  return Dim3{unsigned(b < 1 ? 1 : b > kMaxGemvBlocks ? kMaxGemvBlocks : b), 1, 1};
}
inline Dim3 gemvBlock() { return block1(32 * kGemvWarps); }
/// Weight rows of one warp of the lane-block tiles (lane_gemv.cuh
/// kTileRows): their grids are gemvGrid(tiles), one warp per tile.
constexpr long long kLaneTileRows = abi::kLaneTileRows;
/// Blocks of the tensor-core GEMVs (gemv.cuh tcGemv, the MoE steps): one per
/// `tiles` (16 weight rows x 8 activation rows), grid-strided beyond the cap.
inline Dim3 tileGrid(long long tiles) {
  return Dim3{unsigned(tiles < 1 ? 1 : tiles > kMaxGemvBlocks ? kMaxGemvBlocks : tiles), 1, 1};
}
inline long long ceilDiv(long long a, long long b) { return (a + b - 1) / b; }
/// The warp-combine buffer of the tensor-core tiles.
constexpr size_t kCombineBytes = abi::kGemvCombineBytes;
/// dsc_gemv::quantBytes: act_quant codes + scales of [M, K] in shared memory.
inline size_t quantBytes(long long M, long long K) { return size_t(M * K + M * (K / 32) * 4); }
/// dsc_rows::halfBytes: the row-lane tiles' staging, f16 values + scales of [M, K].
inline size_t rowHalfBytes(long long M, long long K) {
  return size_t(M * K * 2 + M * (K / 32) * 4);
}
inline bool aligned16(std::initializer_list<CUdeviceptr> ptrs) {
  for (CUdeviceptr p : ptrs)
    if (p % 16 != 0)
      return false;
  return true;
}

/// act_quant scratch of an [M, K] bf16 activation: E4M3 codes + fp32 scales.
struct ActQuant {
  CUdeviceptr codes = 0, scales = 0;
};
inline Expected<ActQuant> actQuantScratch(CudaLaunchContext &c, long long M, long long K) {
  ActQuant q;
  auto codes = c.scratch(size_t(M * K));
  if (!codes)
    return codes.status();
  auto scales = c.scratch(size_t(M * (K / 32)) * sizeof(float));
  if (!scales)
    return scales.status();
  q.codes = *codes;
  q.scales = *scales;
  return q;
}
/// K splits of the tensor-core GEMV over blocks: enough blocks for the SMs
/// when N has few 16-row tiles, each split keeping >= 8 K blocks (one per
/// warp). A function of N and K only, never of M, so a row's bytes do not
/// depend on the call's row count.
/// The K splits (powers of two up to 16) that give `tiles` work units at
/// least `units` items while each split keeps >= 8 K blocks: the rule of
/// gemvSplits and laneSplits, each with its tile and its unit.
inline long long kSplitsFor(long long tiles, long long K, long long units) {
  const long long kb = K / 32;
  long long splits = 1;
  while (splits < 16 && tiles * splits < units && kb / (splits * 2) >= 8)
    splits *= 2;
  return splits;
}
inline long long gemvSplits(long long N, long long K) {
  return kSplitsFor(ceilDiv(N, 16), K, 2 * kTunedSms); // blocks of 16 rows: two per SM
}
/// Warps the lane-block GEMV keeps resident: kTunedSms SMs x 2 blocks of
/// kGemvWarps (DSC_GEMV_WARP_ENTRY's launch bounds).
constexpr long long kLaneSlots = kTunedSms * 2 * kGemvWarps;
/// A lane-block warp item's fixed cost (the round trip of its first loads,
/// the lane reduction, the stores), counted as K elements of its rows.
constexpr long long kLaneItemOverheadK = 2048;
/// K splits of the lane-block GEMV (lane_gemv.cuh laneGemv: one warp per 8
/// weight rows and one of `splits` K ranges). A warp streams its items at a
/// rate set by the loads it keeps in flight, so a call lasts as long as its
/// busiest warp: ceil(tiles * s / kLaneSlots) items of K / s elements plus
/// kLaneItemOverheadK each. The rule takes the s in 1..16 (each split
/// keeping >= 8 K blocks, two steps of four) of least such cost, the
/// smallest on ties. At released widths: wo_b (640 tiles, K 8192) 3 splits,
/// one wave of 1,920 items, where doubling until the warps were full gave 4
/// (2,560 items: a second wave 21% full); wq_a (160 tiles, K 5120) 13, one
/// wave, where doubling gave 16 (2,560). A function of N and K only, never
/// of M.
inline long long laneSplits(long long N, long long K) {
  const long long tiles = ceilDiv(N, kLaneTileRows), kb = K / 32;
  auto cost = [&](long long s) {
    return ceilDiv(tiles * s, kLaneSlots) * (ceilDiv(kb, s) * 32 + kLaneItemOverheadK);
  };
  long long best = 1;
  for (long long s = 2; s <= 16 && kb / s >= 8; ++s)
    if (cost(s) < cost(best))
      best = s;
  return best;
}
/// K splits of the block-slot GEMV (slot_gemv.cuh slotGemv: one warp per 16
/// weight rows): enough warps to fill the SMs (132 x 16) when N has few
/// tiles, each split keeping >= 8 K blocks (two steps of four), up to 32. A
/// function of N and K only, never of M.
inline long long slotSplits(long long N, long long K) {
  const long long tiles = ceilDiv(N, abi::kSlotTileRows), kb = K / 32;
  long long splits = 1;
  while (splits < 32 && tiles * splits < kTunedSms * 16 && kb / (splits * 2) >= 8)
    splits *= 2;
  return splits;
}
/// K splits of the warpgroup GEMV (wg_gemv.cuh wgGemv: one block per 64
/// weight rows): enough blocks for two per SM when N has few tiles, each
/// split keeping >= 8 K blocks per warpgroup, and as many more as keep an
/// item's staged K range within kWgMaxStageBlocks. A function of N and K
/// only, never of M.
inline long long wgSplits(long long N, long long K) {
  const long long tiles = ceilDiv(N, abi::kWgTileRows), kb = K / 32;
  long long splits = 1;
  while (splits < 16 && tiles * splits < 2 * kTunedSms && kb / (splits * 2) >= 8 * abi::kWgGroups)
    splits *= 2;
  while (ceilDiv(kb, splits) > abi::kWgMaxStageBlocks)
    splits *= 2;
  return splits;
}
/// The K blocks one item of wgGemv stages: ceil(kb / splits) rounded up to
/// whole steps of every warpgroup (the kernel's perSplit).
inline long long wgItemBlocks(long long K, long long splits) {
  const long long unit = abi::kWgStepBlocks * abi::kWgGroups;
  return ceilDiv(ceilDiv(K / 32, splits), unit) * unit;
}
/// Whether the warpgroup tiles take W [., K] (K % 128 == 0: whole steps;
/// the scale rows are read 4 bytes at a time, so they must be 4-aligned).
inline bool wgTakes(long long K, CUdeviceptr scales) {
  return K % (32 * abi::kWgStepBlocks) == 0 && scales % 4 == 0;
}
/// Weight rows and activation rows of one work item of the GEMV family
/// (a warp for lanes and slots, a block for the tiles and warpgroups).
inline long long gemvItemRows(runtime::GemvKernels k) {
  return k == runtime::GemvKernels::Lanes || k == runtime::GemvKernels::Rows ? kLaneTileRows
         : k == runtime::GemvKernels::Slots      ? abi::kSlotTileRows
         : k == runtime::GemvKernels::Warpgroups ? abi::kWgTileRows
                                                 : 16;
}
inline long long gemvItemActRows(runtime::GemvKernels k) {
  return k == runtime::GemvKernels::Slots        ? abi::kSlotTileActRows
         : k == runtime::GemvKernels::Warpgroups ? abi::kWgItemRows
                                                 : 8;
}
/// The grid of `items` work items of the family: warps (gemvGrid) for lanes
/// and slots, blocks (tileGrid) for the tiles and warpgroups.
inline Dim3 gemvItemGrid(runtime::GemvKernels k, long long items) {
  return k == runtime::GemvKernels::Tiles || k == runtime::GemvKernels::Warpgroups
             ? tileGrid(items)
             : gemvGrid(items);
}
/// The family's block: kWgThreads for the warpgroups, else gemvBlock().
inline Dim3 gemvFamilyBlock(runtime::GemvKernels k) {
  return k == runtime::GemvKernels::Warpgroups ? block1(abi::kWgThreads) : gemvBlock();
}
/// The grid of `items` MoE up/down work items of the family: the slots split
/// each item over kSlotMoeItemWarps warps (moe_experts.cu).
inline Dim3 moeItemGrid(runtime::GemvKernels k, long long items) {
  return k == runtime::GemvKernels::Slots ? gemvGrid(items * abi::kSlotMoeItemWarps)
                                          : gemvItemGrid(k, items);
}
/// Work items of a lane-block MoE up or down step over T tokens with k
/// routed slots each and rowsOut output rows (moe_experts.cu
/// dsc_moe_lanes::item): per token, each routed slot's items of
/// kMoeLaneRoutedRows rows, then the shared expert's of kMoeLaneSharedRows.
inline long long moeLaneItems(long long T, long long k, long long rowsOut) {
  return abi::moeLaneItems(T, k, rowsOut);
}
/// The grid and block of a MoE up (`up`) or down step of the family over T
/// tokens: the lanes' items on their own block sizes (kMoeLaneUpWarps,
/// kMoeLaneDownWarps), the other families' (token, slot, item rows) items.
struct MoeStepShape {
  Dim3 grid, block;
};
inline MoeStepShape moeStepShape(runtime::GemvKernels k, bool up, long long T, long long topk,
                                 long long rowsOut) {
  if (k == runtime::GemvKernels::Lanes || k == runtime::GemvKernels::Rows) {
    const long long warps = up ? abi::kMoeLaneUpWarps : abi::kMoeLaneDownWarps;
    return {tileGrid(ceilDiv(moeLaneItems(T, topk, rowsOut), warps)), block1(unsigned(32 * warps))};
  }
  return {moeItemGrid(k, T * (topk + 1) * ceilDiv(rowsOut, gemvItemRows(k))),
          gemvFamilyBlock(k)};
}
/// The family's K splits for W [N, K].
inline long long gemvFamilySplits(runtime::GemvKernels k, long long N, long long K) {
  return k == runtime::GemvKernels::Lanes || k == runtime::GemvKernels::Rows ? laneSplits(N, K)
         : k == runtime::GemvKernels::Slots      ? slotSplits(N, K)
         : k == runtime::GemvKernels::Warpgroups ? wgSplits(N, K)
                                                 : gemvSplits(N, K);
}
/// Whether `blocks` blocks should each act_quant all of [M, K] in shared
/// memory (no extra launch) rather than read one global act_quant: only
/// while the redundant work stays small (the bytes are the same either way).
/// `stagedBytes`: what each block keeps in shared memory for it.
inline bool stageInBlocks(long long blocks, long long M, long long K, size_t stagedBytes) {
  return stagedBytes <= kSharedLimit && blocks * M * (K / 32) <= 16384;
}
inline bool quantizeInBlocks(long long blocks, long long M, long long K) {
  return stageInBlocks(blocks, M, K, quantBytes(M, K) + kCombineBytes);
}
/// The row lanes' f16 staging of x [M, K] (row_gemv.cuh stageHalf): its
/// bytes whenever they fit, else 0 (the lanes read x from global memory).
inline size_t rowStagedBytes(long long M, long long K) {
  return rowHalfBytes(M, K) <= kSharedLimit ? rowHalfBytes(M, K) : 0;
}
/// Whether a quantised GEMV launch of `grid` blocks of the family act_quants
/// x [M, K] in its blocks (else a global act_quant runs first): the
/// warpgroups quantise only their item's rows and K range while staging.
inline bool gemvQuantInBlocks(runtime::GemvKernels k, long long grid, long long M, long long K,
                              long long splits) {
  if (k == runtime::GemvKernels::Warpgroups)
    return grid * (M < abi::kWgItemRows ? M : abi::kWgItemRows) * wgItemBlocks(K, splits) <= 16384;
  if (k == runtime::GemvKernels::Rows)
    return stageInBlocks(grid, M, K, rowHalfBytes(M, K));
  return quantizeInBlocks(grid, M, K);
}
/// The dynamic shared memory of that launch.
inline size_t gemvLaunchSmem(runtime::GemvKernels k, bool shared, long long M, long long K,
                             long long splits) {
  if (k == runtime::GemvKernels::Warpgroups)
    return size_t(abi::wgSharedBytes(wgItemBlocks(K, splits), 1));
  if (k == runtime::GemvKernels::Rows) // staged f16 whenever it fits (row_gemv.cuh stageHalf)
    return rowStagedBytes(M, K);
  return (shared ? quantBytes(M, K) : 0) + kCombineBytes;
}
/// The same for a MoE up (mats 2) or down (mats 1) step of `slots` (token,
/// slot) rows of width K, `rowsOut` output rows per slot, `rows` activation rows.
inline bool moeQuantInBlocks(runtime::GemvKernels k, long long slots, long long rowsOut,
                             long long rows, long long K) {
  if (k == runtime::GemvKernels::Warpgroups)
    return slots * ceilDiv(rowsOut, abi::kWgTileRows) * (K / 32) <= 16384;
  const long long blocks = tileGrid(slots * ceilDiv(rowsOut, 16)).x;
  if (k == runtime::GemvKernels::Rows) // f16 staging: the rows' own budget
    return stageInBlocks(blocks, rows, K, rowHalfBytes(rows, K));
  return quantizeInBlocks(blocks, rows, K);
}
inline size_t moeLaunchSmem(runtime::GemvKernels k, bool shared, long long rows, long long K,
                            int mats) {
  if (k == runtime::GemvKernels::Warpgroups)
    return size_t(abi::wgSharedBytes(K / 32, mats));
  if (k == runtime::GemvKernels::Rows) // staged f16 whenever it fits (row_gemv.cuh stageHalf)
    return rowStagedBytes(rows, K);
  return (shared ? quantBytes(rows, K) : 0) + kCombineBytes;
}

/// Rows of x per launch of a split GEMV (bounds its partial scratch).
constexpr long long kSplitRowChunk = 512;

/// A fast FP8/FP4 GEMV (gemv.cuh fp8Gemv / fp4Gemv) of x [M, K]: the block
/// act_quants x in shared memory when it fits, else `<prefix>_act_quant_fast`
/// quantises it into scratch first and the GEMV reads the codes from there;
/// with K splits (gemvSplits) the partials go to scratch and
/// `<prefix>_splitk_reduce_fast` sums them, kSplitRowChunk rows at a time.
/// CudaOptions::gemv picks the entry: the lane-block one (lane_gemv.cuh
/// DSC_LANE_GEMV_ENTRY, the same arguments; one warp per (8 weight rows, 8
/// activation rows, K split: laneSplits)), the block-slot one (slot_gemv.cuh
/// DSC_SLOT_GEMV_ENTRY; one warp per (16 weight rows, 8 activation rows, K
/// split: slotSplits)) or the tiles'.
struct QuantizedGemvEntries {
  const char *tiles; ///< DSC_GEMV_QUANTIZED_ENTRY (`..._fast`)
  const char *lanes; ///< DSC_LANE_GEMV_ENTRY (`..._lanes`)
  const char *slots; ///< DSC_SLOT_GEMV_ENTRY (`..._slots`)
  const char *wg;    ///< DSC_WG_GEMV_ENTRY (`..._wg`)
  const char *rows = nullptr; ///< DSC_ROW_GEMV_ENTRY (`..._rows`); none: the lanes run
};
inline Status quantizedGemv(CudaLaunchContext &c, const std::string &prefix,
                            QuantizedGemvEntries entries, CUdeviceptr xp, long long M, long long K,
                            CUdeviceptr wp, CUdeviceptr sp, long long N, CUdeviceptr yp) {
  CUdeviceptr none = 0;
  using runtime::GemvKernels;
  // The warpgroups take whole steps of K; other shapes run the lanes, as do
  // the callers without a row-lane entry.
  const GemvKernels family =
      (c.gemv == GemvKernels::Warpgroups && !wgTakes(K, sp)) ||
              (c.gemv == GemvKernels::Rows && !entries.rows)
          ? GemvKernels::Lanes
          : c.gemv;
  const bool wg = family == GemvKernels::Warpgroups;
  const char *entry = family == GemvKernels::Lanes   ? entries.lanes
                      : family == GemvKernels::Rows  ? entries.rows
                      : family == GemvKernels::Slots ? entries.slots
                      : wg                           ? entries.wg
                                                     : entries.tiles;
  // The grid of `rows` activation rows: one work item per tile and split.
  auto gridOf = [&](long long rows, long long splits) {
    return gemvItemGrid(family, ceilDiv(N, gemvItemRows(family)) *
                                    ceilDiv(rows, gemvItemActRows(family)) * splits);
  };
  long long splits = gemvFamilySplits(family, N, K);
  const long long chunk = splits > 1 ? (M < kSplitRowChunk ? M : kSplitRowChunk) : M;
  CUdeviceptr partial = 0;
  if (splits > 1) {
    auto p = c.scratch(size_t(splits * chunk * N) * sizeof(float));
    if (!p)
      return p.status();
    partial = *p;
  }
  const bool shared = gemvQuantInBlocks(family, gridOf(chunk, splits).x, chunk, K, splits);
  ActQuant q;
  if (!shared) {
    auto qs = actQuantScratch(c, chunk, K);
    if (!qs)
      return qs.status();
    q = *qs;
  }
  for (long long m0 = 0; m0 < M; m0 += chunk) {
    long long rows = M - m0 < chunk ? M - m0 : chunk;
    CUdeviceptr x = xp + CUdeviceptr(m0 * K * 2), y = yp + CUdeviceptr(m0 * N * 2);
    const Dim3 grid = gridOf(rows, splits);
    if (shared) {
      if (Status s = c.launchEntry(entry, grid, gemvFamilyBlock(family),
                                   gemvLaunchSmem(family, true, rows, K, splits),
                                   args(x, none, none, rows, K, wp, sp, N, y, splits, partial));
          !s)
        return s;
    } else {
      if (Status s = c.launchEntry((prefix + "_act_quant_fast").c_str(),
                                   gemvGrid(rows * (K / 32)), gemvBlock(), 0,
                                   args(x, rows, K, q.codes, q.scales));
          !s)
        return s;
      if (Status s = c.launchEntry(entry, grid, gemvFamilyBlock(family),
                                   gemvLaunchSmem(family, false, rows, K, splits),
                                   args(none, q.codes, q.scales, rows, K, wp, sp, N, y, splits,
                                        partial));
          !s)
        return s;
    }
    if (splits > 1) {
      long long mn = rows * N;
      if (Status s = c.launchEntry((prefix + "_splitk_reduce_fast").c_str(), gridFor(mn),
                                   block1(), 0, args(partial, splits, mn, y));
          !s)
        return s;
    }
  }
  return Status::ok();
}

/// Dynamic shared memory dsc_hc_mixes_finish_fast may take without opting
/// in (48 KiB, less 1 KiB for its static arrays).
constexpr long long kMaxDynamicShared = 47 * 1024;

/// Bytes dsc_hc_mixes_finish_fast stages per token: nmix * splits split
/// sums (double), then the group sums of the squares (floats).
inline long long hcStageBytes(long long nmix, long long width, long long splits) {
  return nmix * splits * 8 + abi::torchGroupStride(width) * 32 * 4;
}

/// Splits per mHC mix row of dsc_hc_mixes_dot_fast: kHcSplits, fewer where
/// one token's stage would not fit the finish kernel's shared memory; a
/// function of the widths only, so a row's mixes do not depend on the call
/// (chunked == one call). 0: not even one split fits (the adapter then runs
/// the CPU-order kernel).
inline long long hcSplits(long long nmix, long long width) {
  long long splits = abi::kHcSplits;
  while (splits > 0 && hcStageBytes(nmix, width, splits) > kMaxDynamicShared)
    --splits;
  return splits;
}

/// Threads per row of dsc_rms_norm(_fast) and dsc_mhc_pre_norm(_fast): one
/// value for the norm and the fused mhc_entry kernel (both launch shapes).
inline unsigned normBlock(const CudaLaunchContext &c) {
  return c.cpuOrder(runtime::KernelFamily::Norm) ? kBlock : unsigned(abi::kNormThreads);
}

} // namespace dsc::cuda

#endif // DSC_RUNTIME_CUDA_GEMVLAUNCH_H
