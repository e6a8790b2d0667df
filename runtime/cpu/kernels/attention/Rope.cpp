//===- Rope.cpp - Interleaved RoPE on bf16 rows ---------------------------===//
#include "runtime/cpu/kernels/attention/Rope.h"

#include "dsc/numerics/Rope.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "runtime/cpu/ParallelFor.h"

#include <cassert>
#include <cmath>

namespace dsc::cpu {

RopeFreqs makeRopeFreqs(int64_t ropeDim, double base, int64_t originalSeqLen, double factor,
                        double betaFast, double betaSlow) {
  RopeFreqs f;
  f.ropeDim = ropeDim;
  f.invFreq = numerics::ropeInvFreq(static_cast<int>(ropeDim), base, originalSeqLen, factor,
                                    betaFast, betaSlow);
  return f;
}

namespace {

void rotateRow(uint16_t *row, int64_t heads, int64_t headDim, const RopeFreqs &freqs,
               int64_t pos, bool inverse, float *cosv, float *sinv) {
  const int64_t half = freqs.ropeDim / 2;
  const float p = static_cast<float>(pos);
  for (int64_t k = 0; k < half; ++k) {
    const float theta = p * freqs.invFreq[static_cast<size_t>(k)];
    cosv[k] = std::cos(theta);
    sinv[k] = inverse ? -std::sin(theta) : std::sin(theta);
  }
  for (int64_t h = 0; h < heads; ++h) {
    uint16_t *r = row + h * headDim + (headDim - freqs.ropeDim);
    for (int64_t k = 0; k < half; ++k) {
      const float a = numerics::bf16ToFloat(r[2 * k]);
      const float b = numerics::bf16ToFloat(r[2 * k + 1]);
      const float c = cosv[k], s = sinv[k];
      const float ac = a * c, bs = b * s, as = a * s, bc = b * c;
      r[2 * k] = numerics::bf16FromFloat(ac - bs);
      r[2 * k + 1] = numerics::bf16FromFloat(as + bc);
    }
  }
}

} // namespace

void applyRopeAt(uint16_t *x, int64_t rows, int64_t heads, int64_t headDim,
                 const RopeFreqs &freqs, const int64_t *positions, bool inverse) {
  assert(freqs.ropeDim % 2 == 0 && freqs.ropeDim <= headDim);
  const int64_t rowElems = heads * headDim;
  parallelFor(rows, 16, [&](int64_t begin, int64_t end) {
    std::vector<float> cosv(static_cast<size_t>(freqs.ropeDim / 2));
    std::vector<float> sinv(cosv.size());
    for (int64_t r = begin; r < end; ++r)
      rotateRow(x + r * rowElems, heads, headDim, freqs, positions[r], inverse, cosv.data(),
                sinv.data());
  });
}

void applyRope(uint16_t *x, int64_t rows, int64_t heads, int64_t headDim, const RopeFreqs &freqs,
               int64_t pos0, int64_t posStep, bool inverse) {
  std::vector<int64_t> pos(static_cast<size_t>(rows > 0 ? rows : 0));
  for (int64_t r = 0; r < rows; ++r)
    pos[static_cast<size_t>(r)] = pos0 + r * posStep;
  applyRopeAt(x, rows, heads, headDim, freqs, pos.data(), inverse);
}

} // namespace dsc::cpu
