//===- LaunchShapes.h - Launch-shape constants shared by kernels and hosts --===//
//
// What: the numbers a fast kernel template (codegen/kernels/) and its host
// adapter (runtime/cuda/) must agree on: threads per block, shared-memory
// layouts and the block and split sizes that fix a kernel's summation order.
// Why here: like KernelParams.h, this folder is embedded for NVRTC and
// included by the runtime, so each constant has one definition; an adapter
// that sized a grid or a scratch buffer from its own copy could silently
// disagree with the kernel.
// Invariants: constexpr integers only, no standard headers (NVRTC has none).
// Changing a value changes results bit for bit where it fixes an order
// (kSparseBlock; kHcSplits only where two double sums round apart), never
// their correctness.
//===----------------------------------------------------------------------===//
#ifndef DSC_ABI_LAUNCHSHAPES_H
#define DSC_ABI_LAUNCHSHAPES_H

namespace dsc::abi {

/// Warps per block of the fast GEMV entries (codegen/kernels/gemv.cuh).
inline constexpr int kGemvWarps = 8;
/// Activation rows one pass of a bf16 row dot serves (registers per lane).
inline constexpr int kGemvRowsPerPass = 4;
/// Bytes of the warp-combine buffer of the tensor-core tiles: per warp, per
/// lane, four fp32 accumulators.
inline constexpr int kGemvCombineBytes = kGemvWarps * 32 * 4 * 4;
/// Weight rows of one warp of the lane-block GEMV tiles
/// (codegen/kernels/lane_gemv.cuh: the mma's 8 B columns).
inline constexpr int kLaneTileRows = 8;
/// Weight rows of one warp item of the lane-block MoE steps (codegen/kernels/
/// moe_experts.cu `_lanes`): a routed FP4 slot's item is two lane tiles, the
/// shared FP8 expert's one, so every item streams the same bytes (an FP8 row
/// is twice an FP4 row) and no warp carries twice the others' work.
inline constexpr int kMoeLaneRoutedRows = 2 * kLaneTileRows;
inline constexpr int kMoeLaneSharedRows = kLaneTileRows;
/// Work items of a lane MoE up or down step over T tokens with k routed
/// slots and rowsOut output rows: per token, each routed slot's items, then
/// the shared expert's (the kernels' item order).
inline constexpr long long moeLaneItems(long long T, long long k, long long rowsOut) {
  return T * (k * ((rowsOut + kMoeLaneRoutedRows - 1) / kMoeLaneRoutedRows) +
              (rowsOut + kMoeLaneSharedRows - 1) / kMoeLaneSharedRows);
}
/// Warps per block and blocks per SM of the lane-block MoE steps: enough
/// warps on 132 SMs for one wave of a decode token's items (up: 6 x 144 +
/// 288 = 1,152 at released widths; down: 6 x 320 + 640 = 2,560) within the
/// registers of their weight streams (up: four per item, 168 registers at
/// 12 warps per SM, the register file being four quarters of 16K; down:
/// two, 96 registers at 20 warps).
inline constexpr int kMoeLaneUpWarps = 4;
inline constexpr int kMoeLaneUpBlocksPerSm = 3;
inline constexpr int kMoeLaneDownWarps = 4;
inline constexpr int kMoeLaneDownBlocksPerSm = 5;
/// Weight rows and activation rows of one warp of the block-slot GEMV tiles
/// (codegen/kernels/slot_gemv.cuh: the mma's 16 A rows; four passes of two
/// activation rows over its 8 B columns).
inline constexpr int kSlotTileRows = 16;
inline constexpr int kSlotTileActRows = 8;
/// Warps of one block that split a block-slot MoE item's K (codegen/kernels/
/// moe_experts.cu `_slots`; the grid has this many warps per item; it
/// divides kGemvWarps).
inline constexpr int kSlotMoeItemWarps = 4;
/// The warpgroup GEMV tiles (codegen/kernels/wg_gemv.cuh, `_wg` entries):
/// weight rows per warpgroup (the wgmma's M), its N (4 blocks x the
/// activation rows of an item), the activation rows of an item, warpgroups
/// per block (they split an item's K range in contiguous parts, combined in
/// their order), K blocks per step (an item's K range is a multiple of
/// kWgStepBlocks * kWgGroups blocks, so K % 128 == 0 is required), the K
/// blocks one item may stage and the shared memory per staged block (the
/// block-diagonal f16 B operand, 512 bytes; the scales, 8; the act_quant
/// codes of the item's rows, 64), then the combine buffer per matrix.
inline constexpr int kWgTileRows = 64;
inline constexpr int kWgTileCols = 8;
inline constexpr int kWgItemRows = kWgTileCols / 4;
inline constexpr int kWgGroups = 2;
inline constexpr int kWgThreads = 128 * kWgGroups;
inline constexpr int kWgStepBlocks = 4;
inline constexpr int kWgMaxStageBlocks = 160;
inline constexpr int kWgStageBlockBytes = 512 + 8 + 32 * kWgItemRows;
inline constexpr long long wgCombineBytes(int mats) {
  return (kWgGroups - 1) * 128LL * 4 * mats * 4;
}
inline constexpr long long wgSharedBytes(long long blocks, int mats) {
  return blocks * kWgStageBlockBytes + wgCombineBytes(mats);
}
/// Entries per online-softmax block of the sparse attention walk (the
/// reference's block: probabilities are rounded against its running max).
inline constexpr int kSparseBlock = 64;
/// The MQA split-KV attention kernels (sparse_attention.cu, "MQA split-KV"):
/// q values per lane (D <= 32 * kMqaMaxLane, D % 16 == 0), heads per block
/// (the adapter's choice, at most kMqaMaxHeads: every logits warp holds the
/// group's queries in registers), PV threads and the channel pairs each owns
/// (D <= 2 * kMqaPvThreads * kMqaPvRounds). A block stages its kSparseBlock
/// entries as bf16: kSparseBlock * D * 2 bytes of dynamic shared memory (64
/// KiB at D = 512).
inline constexpr int kMqaMaxLane = 16;
inline constexpr int kMqaMaxHeads = 8;
inline constexpr int kMqaHeadsPerBlock = 8;
inline constexpr int kMqaPvThreads = 256;
inline constexpr int kMqaPvRounds = 2;
static_assert(kMqaHeadsPerBlock <= kMqaMaxHeads, "the MQA kernels hold kMqaMaxHeads heads");
/// The tensor-core split-KV attention (codegen/kernels/sparse_attention_tc.cuh):
/// heads per row it takes (one warp per 16), the bf16 row padding of its
/// shared-memory tiles (16 bytes: conflict-free ldmatrix), its threads (all
/// of them stage, the first ceil(H / 16) warps compute) and the dynamic
/// shared memory of its logits kernel (the row's queries [ceil16(H), D +
/// pad] and the block's entries [kSparseBlock, D + pad] as bf16: 133,120
/// bytes at H = 64, D = 512) and of its PV kernel (the entries, then the
/// probabilities as bf16 [ceil16(H), kSparseBlock + pad] and fp32
/// [ceil16(H), kSparseBlock]: 101,888 bytes).
inline constexpr int kTcMaxHeads = 128;
inline constexpr int kTcRowPad = 8;
inline constexpr long long tcHeadsPadded(long long H) { return (H + 15) / 16 * 16; }
inline constexpr unsigned kTcThreads = 512;
inline constexpr long long tcLogitsBytes(long long H, long long D) {
  return (tcHeadsPadded(H) + kSparseBlock) * (D + kTcRowPad) * 2;
}
inline constexpr long long tcPvBytes(long long H, long long D) {
  return kSparseBlock * (D + kTcRowPad) * 2 + tcHeadsPadded(H) * (kSparseBlock + kTcRowPad) * 2 +
         tcHeadsPadded(H) * kSparseBlock * 4;
}
/// Channels the tensor-core PV kernel multiplies per pass (its 16 n-tiles
/// of 8 in registers); a decode call whose (row, block) pairs leave SMs idle
/// also splits D into ranges of this many channels over gridDim.z.
inline constexpr int kTcPvChannels = 128;
/// The fast MoE gate select (codegen/kernels/moe_gate.cu): experts (keys
/// and scores in shared memory) and top-k rounds per token it takes.
inline constexpr int kMoeSelectMaxExperts = 2048;
inline constexpr int kMoeSelectMaxTopk = 64;
/// dsc_moe_experts_combine_fast: slots per token it orders (the adapter
/// checks topk) and channels per thread (grid x = ceil(D / (256 * this))).
inline constexpr int kMoeCombineMaxTopk = 64;
inline constexpr int kMoeCombinePerThread = 1;
/// Splits of one mHC mix row in dsc_hc_mixes_dot_fast (fewer only where the
/// finish kernel's shared memory needs it: cuda::hcSplits, a function of the
/// model's widths, never of the call's tokens); the split sums are double,
/// so the count only moves a mix where a double sum sits at a float boundary.
inline constexpr int kHcSplits = 64;
/// Tokens per dsc_hc_mixes_dot_fast / _finish_fast launch pair (bounds the
/// scratch: tokens * (nmix + 1) * splits doubles).
inline constexpr int kHcTokenChunk = 256;
/// dsc_mhc_entry_decode_fast (codegen/kernels/mhc_entry.cu, the native
/// mhc_entry group in one launch, one block per row): its threads (512: at
/// kNormThreads' 64 registers it spills) and the most rows (tokens) a call
/// runs through it. More rows run the
/// group's steps, or dsc_mhc_pre_norm_fast. It is compiled for
/// kMhcDecodeCopies residual copies (hc_mult; the released 4): a model with
/// another count runs the steps.
inline constexpr int kMhcDecodeThreads = 512;
inline constexpr int kMhcDecodeMaxRows = 64;
inline constexpr int kMhcDecodeCopies = 4;
/// Group sums per chain (x 32 chains, fp32) that torchSumBlock keeps in
/// static shared memory (codegen/kernels/reduce.cuh): kernels using it have
/// kTorchBlockSharedBytes less for their dynamic shared memory.
inline constexpr int kTorchBlockGroups = 128;
inline constexpr int kTorchBlockSharedBytes = kTorchBlockGroups * 32 * 4 + 16;
/// Scratch stride (group sums per chain) for a row of `n` items summed in
/// torch's order from group sums computed apart (dsc_hc_mixes_*_fast): a
/// chain has n / 32 items in groups of at least 16, plus a tail group.
inline constexpr long long torchGroupStride(long long n) { return n / 512 + 1; }
/// Threads per row of the bf16 selections dsc_indexer_topk_radix and
/// dsc_candidate_blocks_radix (select.cuh selectTop16Ascending: one
/// contiguous chunk of positions per thread; the result does not depend on it).
inline constexpr int kSelectThreads = 1024;
/// Threads per row of dsc_rms_norm_fast and dsc_mhc_pre_norm_fast (the
/// result does not depend on it: warp 0 sums in torch's order).
inline constexpr int kNormThreads = 1024;

} // namespace dsc::abi

#endif // DSC_ABI_LAUNCHSHAPES_H
