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
//     the ring fills;
//   - a continuation chunk of a chunked prefill (start p0 > 0, S >= W
//     tokens, docs/runtime.md): the attention reads `ringRows` = min(W-1,
//     p0) rows of positions p0-ringRows .. p0-1 decoded from the ring (read
//     before the chunk overwrites their slots), then the chunk's own QDQ
//     rows; query t lists rows max(0, ringRows+t-W+1) .. ringRows+t, in
//     position order like the one-shot prefill, so a chunked prefill
//     attends to the same values in the same order (bit-identical).
// Rounding points: act_quant only (numerics encode); decoding is exact.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_WINDOWKV_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_WINDOWKV_H

#include "runtime/cpu/kernels/attention/KvRecords.h"

#include <cstdint>

namespace dsc::cpu {

/// Width of the window part of the index list: min(ringRows + S, W) in a
/// prefill chunk (startPos == 0 or S > 1), W in decode.
int64_t windowIdxWidth(int64_t startPos, int64_t S, int64_t window, int64_t ringRows = 0);

/// Number of window KV rows the attention reads (the offset of the
/// compressed part in kv_all): ringRows + S in a prefill chunk, W in decode.
int64_t windowKvRows(int64_t startPos, int64_t S, int64_t window, int64_t ringRows = 0);

/// A continuation chunk's first rows: positions pos0-ringRows .. pos0-1
/// decoded from the ring into rowsOut [ringRows, headDim]. Call before
/// windowKvPrefill overwrites their slots.
void windowRingPrefix(const KvRecordPool &ring, int64_t window, int64_t pos0, int64_t ringRows,
                      float *rowsOut);

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

/// Index lists: prefill [S, min(ringRows + S, W)] over rows [ring prefix,
/// chunk] (ringRows = 0: a first chunk), decode [1, W] (int32, -1 = none).
void windowIdxPrefill(int64_t S, int64_t window, int32_t *idx, int64_t ringRows = 0);
void windowIdxDecode(int64_t pos, int64_t window, int32_t *idx);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_WINDOWKV_H
