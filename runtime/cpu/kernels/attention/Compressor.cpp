//===- Compressor.cpp - KV compressor and compressed-KV records -----------===//
#include "runtime/cpu/kernels/attention/Compressor.h"

#include "dsc/numerics/ScalarCodecs.h"
#include "runtime/cpu/kernels/dense/Linear.h"
#include "runtime/cpu/kernels/dense/Norm.h"

#include <cassert>
#include <cmath>
#include <limits>

namespace dsc::cpu {

void CompressorState::reset(int64_t r, int64_t d) {
  ratio = r;
  headDim = d;
  kv.assign(static_cast<size_t>(r * d), 0.0f);
  score.assign(static_cast<size_t>(r * d), -std::numeric_limits<float>::infinity());
}

int64_t compressorLatentCount(int64_t ratio, int64_t startPos, int64_t S) {
  if (ratio <= 1)
    return S;
  return (startPos + S) / ratio - startPos / ratio;
}

namespace {

/// Softmax over the r rows of score (per channel) and the weighted sum of kv
/// rows, both [r, d] with row stride d; out fp32 [d].
void poolGroup(const float *kv, const float *score, int64_t r, int64_t d, float *out) {
  for (int64_t c = 0; c < d; ++c) {
    float m = score[c];
    for (int64_t i = 1; i < r; ++i)
      m = std::max(m, score[i * d + c]);
    float e[16];
    float sum = 0.0f;
    for (int64_t i = 0; i < r; ++i) {
      e[i] = std::exp(score[i * d + c] - m);
      sum += e[i];
    }
    float acc = 0.0f;
    for (int64_t i = 0; i < r; ++i)
      acc += kv[i * d + c] * (e[i] / sum);
    out[c] = acc;
  }
}

} // namespace

int64_t compressorForward(const CompressorWeights &w, const uint16_t *x, int64_t S,
                          int64_t startPos, CompressorState *state, uint16_t *latents) {
  const int64_t r = w.ratio, d = w.headDim;
  assert(r >= 1 && startPos >= 0);
  if (r == 1) {
    std::vector<uint16_t> lin(static_cast<size_t>(S * d));
    linearBf16(x, S, w.dim, w.wkv, d, lin.data());
    rmsNorm(lin.data(), S, d, w.norm, w.eps, latents);
    return S;
  }
  assert(r <= 16 && state && state->ratio == r && state->headDim == d);
  std::vector<float> xf(static_cast<size_t>(S * w.dim));
  for (int64_t i = 0; i < S * w.dim; ++i)
    xf[static_cast<size_t>(i)] = numerics::bf16ToFloat(x[i]);
  std::vector<float> kv(static_cast<size_t>(S * d)), score(static_cast<size_t>(S * d));
  linearF32(xf.data(), S, w.dim, w.wkv, d, kv.data());
  linearF32(xf.data(), S, w.dim, w.wgate, d, score.data());

  // Token p belongs to group p / r, slot p % r. A group that starts and
  // ends inside this call is pooled from the call's rows and leaves the
  // state alone (the reference's prefill); a token of a group that started
  // in an earlier call or ends in a later one goes to its state slot, and a
  // group finished from the state is pooled there (the reference's decode).
  // The pooled fp32 values are the same either way, so prefill, decode and
  // prefill chunks of any split produce identical latents and states.
  const int64_t n = compressorLatentCount(r, startPos, S);
  std::vector<float> pooled(static_cast<size_t>(n * d));
  int64_t emitted = 0;
  const int64_t end = startPos + S;
  for (int64_t p = startPos; p < end; ++p) {
    const int64_t slot = p % r, groupStart = p - slot, groupEnd = groupStart + r;
    const int64_t t = p - startPos;
    if (groupStart >= startPos && groupEnd <= end) {
      if (slot == r - 1)
        poolGroup(kv.data() + (t - slot) * d, score.data() + (t - slot) * d, r, d,
                  pooled.data() + (emitted++) * d);
      continue;
    }
    for (int64_t c = 0; c < d; ++c) {
      state->kv[static_cast<size_t>(slot * d + c)] = kv[static_cast<size_t>(t * d + c)];
      state->score[static_cast<size_t>(slot * d + c)] = score[static_cast<size_t>(t * d + c)];
    }
    if (slot == r - 1)
      poolGroup(state->kv.data(), state->score.data(), r, d, pooled.data() + (emitted++) * d);
  }
  assert(emitted == n);
  if (n == 0)
    return 0;
  std::vector<uint16_t> pooledBf16(static_cast<size_t>(n * d));
  for (int64_t i = 0; i < n * d; ++i)
    pooledBf16[static_cast<size_t>(i)] = numerics::bf16FromFloat(pooled[static_cast<size_t>(i)]);
  rmsNorm(pooledBf16.data(), n, d, w.norm, w.eps, latents);
  return n;
}

void compressKvWrite(const uint16_t *latents, int64_t n, int64_t j0, int64_t ratio,
                     int64_t headDim, const RopeFreqs &freqs, const KvRecordPool &mainKv) {
  assert(mainKv.values() == headDim);
  std::vector<uint16_t> rot(latents, latents + n * headDim);
  applyRope(rot.data(), n, 1, headDim, freqs, j0 * ratio, ratio, false);
  std::vector<float> row(static_cast<size_t>(headDim));
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t c = 0; c < headDim; ++c)
      row[static_cast<size_t>(c)] = numerics::bf16ToFloat(rot[static_cast<size_t>(i * headDim + c)]);
    mainKv.write(j0 + i, row.data());
  }
}

} // namespace dsc::cpu
