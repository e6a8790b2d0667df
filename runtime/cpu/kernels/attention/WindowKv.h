//===- WindowKv.h - Sliding-window KV ring and index lists (CPU) ----------===//
//
// What: the reference's Attention._window_kv after kv_norm + RoPE and
// get_window_topk_idxs (reference-spec §9.3, §15.6, §15.11):
//   - act_quant QDQ (FP8 E4M3, UE8M0 scale per 32, all headDim channels incl.
//     the RoPE tail) of the window KV, stored as numerics::swaKvFormat(headDim)
//     records in a ring of `window` slots, slot = pos % window;
//   - prefill (start_pos == 0): the attention reads the chunk's own QDQ KV
//     [S, headDim]; query t lists max(0, t-W+1)..t, width min(S, W), -1
//     trailing for t < W-1 (idx > t);
//   - decode (start_pos = p > 0, one token): the record goes to slot p % W,
//     the attention reads the whole ring (decoded); the list is the ring
//     slots oldest first, (p%W + 1 .. W-1, 0 .. p%W), slots > p are -1 while
//     the ring fills.
// Rounding points: act_quant only (numerics encode); decoding is exact.
// Only the reference's two call shapes are supported: (0, S) and (p > 0, 1).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_WINDOWKV_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_WINDOWKV_H

#include "runtime/cpu/kernels/attention/KvRecords.h"

#include <cstdint>

namespace dsc::cpu {

/// Width of the window part of the index list: min(S, W) in prefill, W in
/// decode.
int64_t windowIdxWidth(int64_t startPos, int64_t S, int64_t window);

/// Number of window KV rows the attention reads: S in prefill, W in decode
/// (the offset of the compressed part in kv_all).
int64_t windowKvRows(int64_t startPos, int64_t S, int64_t window);

/// Prefill / chunk: kv bf16 [S, headDim] (after kv_norm + RoPE) of
/// positions pos0 .. pos0 + S - 1. Writes the ring records of the last
/// min(S, W) positions (slot pos % W) and the QDQ values of all S rows to
/// kvOut [S, headDim] (fp32 holding bf16 values). pos0 > 0: a CED replayed
/// chunk (the window source is the chunk's own rows).
void windowKvPrefill(const uint16_t *kv, int64_t S, int64_t headDim, const KvRecordPool &ring,
                     int64_t window, float *kvOut, int64_t pos0 = 0);

/// Decode: kv bf16 [1, headDim] at position pos > 0 into slot pos % W; then
/// decodes the whole ring into ringOut [W, headDim].
void windowKvDecode(const uint16_t *kv, int64_t headDim, int64_t pos, const KvRecordPool &ring,
                    int64_t window, float *ringOut);

/// Index lists: prefill [S, min(S, W)], decode [1, W] (int32, -1 = none).
void windowIdxPrefill(int64_t S, int64_t window, int32_t *idx);
void windowIdxDecode(int64_t pos, int64_t window, int32_t *idx);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_WINDOWKV_H
