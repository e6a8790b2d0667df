//===- window_kv.cu - Sliding-window KV ring (kernel `window_kv`) ----------===//
//
// CPU: runtime/cpu/kernels/attention/WindowKv.cpp. Records: the ring's page
// layout (swaKvFormat: E4M3 values, UE8M0 scale per 32). Every entry takes p
// (dsc::abi::WindowKvParams) first: window = p.window, the ring's slots W.
//   dsc_window_kv: one warp per (row t, tile) of kv bf16 [S, Dh]: the tile
//     is quantised exactly as encodeKvRecord does (FP8 tiles of 32: lane k
//     value k, the abs max by a warp max; other formats: lane 0); rows t >= writeFrom go to
//     ring slot (pos0 + t) % window; if `rows` is not null the QDQ values
//     (decoded record, rounded to bf16) go to rows f32 [S, Dh].
//     pos0 = p (call state). Chunk (prefill, CED replay at p = S_prompt - R'):
//     writeFrom = S - window, rows = the output (the chunk's own rows), ring
//     slots (p + t) % window. Decode: S = 1, writeFrom = 0, rows = null.
//   dsc_window_kv_ring: one thread per (slot, channel): rows[s, c] = decoded
//     ring record s, s < window (decode: all W slots).
//   dsc_window_kv_prefix: one thread per (row i, channel): rows[i, c] =
//     decoded ring record of position firstPos + i (slot % window), i <
//     count: the ring rows a continuation chunk of a chunked prefill reads
//     ahead of its own (launched before dsc_window_kv overwrites the slots).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/attention.cuh"

namespace dsc_window {
/// Tile i (row t = i / tiles) of dsc_window_kv by one warp (see the header).
__device__ void windowTile(const KvPageLayout &l, const unsigned short *kv, long long headDim,
                           int tile, long long tiles, long long i, int lane, long long pos0,
                           long long window, long long writeFrom, unsigned char *ring,
                           float *rows) {
  const long long t = i / tiles;
  const int b = static_cast<int>(i % tiles);
  const bool fp8 = l.format.valueType == KvValueType::E4M3;
  const long long slot = (pos0 + t) % window;
  if (fp8 && tile == 32) {
    // quantizeFp8Block with lane k holding value k: the block's abs max (a
    // max of the non-NaN values, NaN if any lane has one: absMax's value in
    // any order), then each lane's code, as encodeKvRecord.
    const float v = bf16ToFloat(kv[t * headDim + b * tile + lane]);
    const float a = absF(v);
    const bool nan = __any_sync(0xffffffffu, isNaN(a));
    const float amax = nan ? kQuietNaN : warpMax(isNaN(a) ? 0.0f : a);
    const float s = fp8ActScale(amax);
    const unsigned char q = e4m3FromFloat(clampSym(v / s, kE4M3Max));
    const unsigned char sc = ue8m0FromScale(s);
    if (t >= writeFrom) {
      ring[l.tokenDataOffset(slot) + (long long)b * tile + lane] = q;
      if (lane == 0)
        ring[l.tokenScaleOffset(slot) + b] = sc;
    }
    if (rows)
      rows[t * headDim + b * tile + lane] = roundToBf16(e4m3ToFloat(q) * ue8m0ToFloat(sc));
    return;
  }
  if (lane != 0)
    return; // other formats: lane 0 quantises the tile as encodeKvRecord
  float vals[kMaxTile];
  for (int k = 0; k < tile; ++k)
    vals[k] = bf16ToFloat(kv[t * headDim + b * tile + k]);
  // Quantise into a private record tile (data + scale), then store/decode.
  unsigned char data[kMaxTile];
  unsigned char sc;
  if (fp8)
    sc = quantizeFp8Block(vals, tile, data);
  else if (l.format.scaleType == KvScaleType::UE8M0)
    sc = quantizeFp4E8M0Block(vals, tile, data);
  else
    sc = quantizeFp4E4M3Block(vals, tile, data);
  const int bytes = fp8 ? tile : tile / 2;
  if (t >= writeFrom) {
    unsigned char *d = ring + l.tokenDataOffset(slot) + (long long)b * bytes;
    for (int k = 0; k < bytes; ++k)
      d[k] = data[k];
    ring[l.tokenScaleOffset(slot) + b] = sc;
  }
  if (rows) {
    const float s = l.format.scaleType == KvScaleType::UE8M0 ? ue8m0ToFloat(sc) : e4m3ToFloat(sc);
    for (int k = 0; k < tile; ++k) {
      const float v = fp8 ? e4m3ToFloat(data[k]) * ue8m0ToFloat(sc)
                          : e2m1ToFloat(fp4CodeAt(data, k)) * s;
      rows[t * headDim + b * tile + k] = roundToBf16(v);
    }
  }
}
} // namespace dsc_window

DSC_KERNEL void dsc_window_kv(const __grid_constant__ dsc::abi::WindowKvParams p,
                              const unsigned short *kv, long long S, long long headDim,
                              const long long *callState, long long writeFrom,
                              unsigned char *ring, int values, int tile, int valueType,
                              int scaleType, int tokensPerPage, int order, float *rows) {
  DSC_KERNEL_PROLOGUE();
  const long long window = p.window;
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long pos0 = DSC_CALL_START(callState);
  const long long tiles = headDim / tile;
  const int lane = threadIdx.x & 31;
  const long long warps = ((long long)gridDim.x * blockDim.x) >> 5;
  for (long long i = ((long long)blockIdx.x * blockDim.x + threadIdx.x) >> 5; i < S * tiles;
       i += warps) // one warp per tile, warp-uniform
    dsc_window::windowTile(l, kv, headDim, tile, tiles, i, lane, pos0, window, writeFrom, ring,
                           rows);
}

DSC_KERNEL void dsc_window_kv_ring(const __grid_constant__ dsc::abi::WindowKvParams p,
                                   const unsigned char *ring, long long headDim, int values,
                                   int tile, int valueType, int scaleType, int tokensPerPage,
                                   int order, float *rows) {
  DSC_KERNEL_PROLOGUE();
  const long long slots = p.window;
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= slots * headDim)
    return;
  rows[i] = readValue(l, ring, i / headDim, static_cast<int>(i % headDim));
}

DSC_KERNEL void dsc_window_kv_prefix(const __grid_constant__ dsc::abi::WindowKvParams p,
                                     const unsigned char *ring, long long firstPos,
                                     long long count, long long headDim, int values, int tile,
                                     int valueType, int scaleType, int tokensPerPage, int order,
                                     float *rows) {
  DSC_KERNEL_PROLOGUE();
  const long long window = p.window;
  const KvPageLayout l = pageLayout(values, tile, valueType, scaleType, tokensPerPage, order);
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= count * headDim)
    return;
  const long long r = i / headDim;
  rows[i] = readValue(l, ring, (firstPos + r) % window, static_cast<int>(i % headDim));
}
