//===- window_kv.cu - Sliding-window KV ring (kernel `window_kv`) ----------===//
//
// CPU: runtime/cpu/kernels/attention/WindowKv.cpp. Records: the ring's page
// layout (swaKvFormat: E4M3 values, UE8M0 scale per 32). Every entry takes p
// (dsc::abi::WindowKvParams) first: window = p.window, the ring's slots W.
//   dsc_window_kv: one thread per (row t, tile) of kv bf16 [S, Dh]: the tile
//     is quantised exactly as encodeKvRecord does; rows t >= writeFrom go to
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
  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= S * tiles)
    return;
  const long long t = i / tiles;
  const int b = static_cast<int>(i % tiles);
  float vals[kMaxTile];
  for (int k = 0; k < tile; ++k)
    vals[k] = bf16ToFloat(kv[t * headDim + b * tile + k]);
  // Quantise into a private record tile (data + scale), then store/decode.
  unsigned char data[kMaxTile];
  unsigned char sc;
  const bool fp8 = l.format.valueType == KvValueType::E4M3;
  if (fp8)
    sc = quantizeFp8Block(vals, tile, data);
  else if (l.format.scaleType == KvScaleType::UE8M0)
    sc = quantizeFp4E8M0Block(vals, tile, data);
  else
    sc = quantizeFp4E4M3Block(vals, tile, data);
  const int bytes = fp8 ? tile : tile / 2;
  if (t >= writeFrom) {
    const long long slot = (pos0 + t) % window;
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
