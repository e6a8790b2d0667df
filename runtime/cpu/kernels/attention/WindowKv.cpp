//===- WindowKv.cpp - Sliding-window KV ring and index lists --------------===//
#include "runtime/cpu/kernels/attention/WindowKv.h"

#include "dsc/numerics/ScalarCodecs.h"

#include <algorithm>
#include <cassert>
#include <vector>

namespace dsc::cpu {

int64_t windowIdxWidth(int64_t startPos, int64_t S, int64_t window, int64_t ringRows) {
  return startPos == 0 || S > 1 ? std::min(ringRows + S, window) : window;
}

int64_t windowKvRows(int64_t startPos, int64_t S, int64_t window, int64_t ringRows) {
  return startPos == 0 || S > 1 ? ringRows + S : window;
}

void windowRingPrefix(const KvRecordPool &ring, int64_t window, int64_t pos0, int64_t ringRows,
                      float *rowsOut) {
  assert(ringRows < window && ringRows <= pos0);
  const int64_t headDim = ring.values();
  for (int64_t i = 0; i < ringRows; ++i)
    ring.read((pos0 - ringRows + i) % window, rowsOut + i * headDim);
}

void windowKvPrefill(const uint16_t *kv, int64_t S, int64_t headDim, const KvRecordPool &ring,
                     int64_t window, float *kvOut, int64_t pos0) {
  assert(ring.values() == headDim && ring.capacity >= window);
  std::vector<float> in(static_cast<size_t>(headDim));
  for (int64_t t = 0; t < S; ++t) {
    for (int64_t i = 0; i < headDim; ++i)
      in[static_cast<size_t>(i)] = numerics::bf16ToFloat(kv[t * headDim + i]);
    if (t >= S - window) {
      // Seeds the ring: slot pos % W for the last min(S, W) positions; the
      // attention reads the same values decoded back.
      ring.write((pos0 + t) % window, in.data());
      ring.read((pos0 + t) % window, kvOut + t * headDim);
    } else {
      qdqThroughRecord(ring.layout.format, in.data(), kvOut + t * headDim);
    }
  }
}

void windowKvDecode(const uint16_t *kv, int64_t headDim, int64_t pos, const KvRecordPool &ring,
                    int64_t window, float *ringOut) {
  assert(ring.values() == headDim && ring.capacity >= window && pos > 0);
  std::vector<float> in(static_cast<size_t>(headDim));
  for (int64_t i = 0; i < headDim; ++i)
    in[static_cast<size_t>(i)] = numerics::bf16ToFloat(kv[i]);
  ring.write(pos % window, in.data());
  for (int64_t s = 0; s < window; ++s)
    ring.read(s, ringOut + s * headDim);
}

void windowIdxPrefill(int64_t S, int64_t window, int32_t *idx, int64_t ringRows) {
  const int64_t width = std::min(ringRows + S, window);
  for (int64_t t = 0; t < S; ++t) {
    const int64_t row = ringRows + t; // the query's own row
    const int64_t first = std::max<int64_t>(row - window + 1, 0);
    for (int64_t k = 0; k < width; ++k) {
      const int64_t j = first + k;
      idx[t * width + k] = j > row ? -1 : static_cast<int32_t>(j);
    }
  }
}

void windowIdxDecode(int64_t pos, int64_t window, int32_t *idx) {
  const int64_t oldest = pos % window + 1;
  for (int64_t k = 0; k < window; ++k) {
    const int64_t slot = (oldest + k) % window;
    idx[k] = slot > pos ? -1 : static_cast<int32_t>(slot);
  }
}

} // namespace dsc::cpu
