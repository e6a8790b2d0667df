//===- Embedding.cpp - CPU reference token embedding and LM head ----------===//
#include "runtime/cpu/kernels/dense/Embedding.h"

#include "runtime/cpu/kernels/dense/DenseUtil.h"
#include "runtime/cpu/kernels/dense/Linear.h"

#include <cstring>

namespace dsc::cpu {

bool embedLookup(const int32_t *ids, int64_t S, const uint16_t *table, int64_t vocab, int64_t D,
                 uint16_t *y) {
  bool ok = true;
  for (int64_t s = 0; s < S; ++s) {
    const int64_t id = ids[s];
    if (id < 0 || id >= vocab) {
      std::memset(y + s * D, 0, static_cast<size_t>(D) * sizeof(uint16_t));
      ok = false;
      continue;
    }
    std::memcpy(y + s * D, table + id * D, static_cast<size_t>(D) * sizeof(uint16_t));
  }
  return ok;
}

void headLogits(const uint16_t *x, int64_t rows, int64_t D, const uint16_t *w, int64_t V,
                float *logits) {
  const std::vector<float> xf = widenBf16(x, rows * D);
  linearF32(xf.data(), rows, D, w, V, logits);
}

} // namespace dsc::cpu
