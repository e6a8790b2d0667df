//===- EngramHash.h - Engram n-gram hash of one position (host + device) --===//
//
// The pure per-position arithmetic of reference-spec §7.4
// [engram: NgramHashState.forward], usable from host C++, nvcc and NVRTC (no
// standard headers under NVRTC, no allocation, no exceptions; DSC_HD and the
// integer types come from Portability.h):
//
//   look-back: for shift k = 0..maxNgram-1 the source is the cached compressed
//     id at position max(p-k, 0); blocked |= (p < k) | (src == DEAD), the
//     blocking is cumulative over k; tok_k = blocked ? pad : src;
//   products:  prod_k = tok_k * mult[k] (int64; the multiplier bound keeps it
//     below 2^63 for ids < compressed vocab);
//   rolling:   r = prod_0; for n = 2..maxNgram: r ^= prod_{n-1};
//     hash[(n-2)*H + h] = (r mod primes[(n-2)*H + h]) + offsets[(n-2)*H + h]
//     (floor mod, as torch's `%`; r is never negative for valid ids).
//
// The caller supplies the look-back window; the stateful per-sequence cache
// lives in EngramHasher.h (host) or in device memory.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_ENGRAMHASH_H
#define DSC_NUMERICS_ENGRAMHASH_H

#include "dsc/numerics/Portability.h"

namespace dsc::numerics {

/// The cache value of a masked (image) position.
inline constexpr int64_t kEngramDead = -1;

/// Python/torch floor modulo for m > 0.
DSC_HD inline int64_t engramFloorMod(int64_t r, int64_t m) {
  int64_t q = r % m;
  return q < 0 ? q + m : q;
}

/// Wrapping int64 product (as torch's int64 multiply).
DSC_HD inline int64_t engramMulWrap(int64_t a, int64_t b) {
  return int64_t(uint64_t(a) * uint64_t(b));
}

/// One look-back shift k of one position: folds the source id read at
/// max(pos-k, 0) into the running (blocked, r) and, for k >= 1, writes the
/// numHeads columns of n-gram size n = k+1.
DSC_HD inline void engramHashShift(int k, int64_t src, int64_t pos, int64_t padId,
                                   const int64_t *mult, const int64_t *primes,
                                   const int64_t *offsets, int numHeads,
                                   bool &blocked, int64_t &r, int64_t *out) {
  blocked = blocked || pos < int64_t(k) || src == kEngramDead; // cumulative
  const int64_t tok = blocked ? padId : src;
  const int64_t prod = engramMulWrap(tok, mult[k]);
  r = k == 0 ? prod : (r ^ prod);
  if (k >= 1) {
    const int base = (k - 1) * numHeads;
    for (int h = 0; h < numHeads; ++h)
      out[base + h] = engramFloorMod(r, primes[base + h]) + offsets[base + h];
  }
}

/// Hashes one position of one Engram layer.
///   window[k]  (k < maxNgram): cached compressed id at position max(pos-k, 0)
///              (kEngramDead for a masked position; the value is ignored
///              when k > pos);
///   mult[k]    the layer's multipliers (maxNgram of them);
///   primes, offsets: (maxNgram-1)*numHeads each, column order n-gram-major;
///   out:       (maxNgram-1)*numHeads hash ids (rows of the layer's table).
DSC_HD inline void
engramHashPosition(const int64_t *window, int64_t pos, int64_t padId,
                   const int64_t *mult, int maxNgram, const int64_t *primes,
                   const int64_t *offsets, int numHeads, int64_t *out) {
  bool blocked = false;
  int64_t r = 0;
  for (int k = 0; k < maxNgram; ++k)
    engramHashShift(k, window[k], pos, padId, mult, primes, offsets, numHeads,
                    blocked, r, out);
}

/// Same, reading the window from a per-sequence cache laid out by position
/// (cache[q] = compressed id at position q, for q <= pos).
DSC_HD inline void
engramHashFromCache(const int64_t *cache, int64_t pos, int64_t padId,
                    const int64_t *mult, int maxNgram, const int64_t *primes,
                    const int64_t *offsets, int numHeads, int64_t *out) {
  bool blocked = false;
  int64_t r = 0;
  for (int k = 0; k < maxNgram; ++k)
    engramHashShift(k, cache[pos - k < 0 ? 0 : pos - k], pos, padId, mult,
                    primes, offsets, numHeads, blocked, r, out);
}

} // namespace dsc::numerics

#endif // DSC_NUMERICS_ENGRAMHASH_H
