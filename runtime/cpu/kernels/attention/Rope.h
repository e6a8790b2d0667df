//===- Rope.h - Interleaved RoPE on bf16 rows (CPU reference) -------------===//
//
// What: the reference's apply_rotary_emb (reference-spec §9.2, §15.5) on the
// LAST ropeDim channels of each headDim vector of bf16 rows, forward or
// inverse (conjugate), at per-row positions.
// Rules:
//   - pairs (2k, 2k+1) of the rope slice form a + ib; angle
//     theta = fp32(pos) * invFreq[k] (one fp32 product, torch.outer);
//     c = cosf(theta), s = sinf(theta) (torch.polar, fp32);
//   - forward:  re = a*c - b*s, im = a*s + b*c; inverse (x * conj):
//     re = a*c - b*(-s), im = a*(-s) + b*c. Each product is an fp32
//     rounding, then one fp32 add/sub (torch's complex mul, no FMA);
//   - the result is rounded to bf16 (RNE) in place.
//   - invFreq comes from numerics::ropeInvFreq (YaRN when originalSeqLen > 0:
//     the ratio > 0 layers, with compress_rope_theta; ratio-0 layers use
//     rope_theta without YaRN).
// Rows are independent (parallelFor over rows).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_ROPE_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_ROPE_H

#include <cstdint>
#include <vector>

namespace dsc::cpu {

/// A layer's RoPE frequencies (numerics::ropeInvFreq).
struct RopeFreqs {
  int64_t ropeDim = 0;
  std::vector<float> invFreq; ///< ropeDim / 2 entries
};

/// base = rope_theta (ratio 0) or compress_rope_theta (ratio > 0, with YaRN:
/// originalSeqLen > 0); factor/betas from the config.
RopeFreqs makeRopeFreqs(int64_t ropeDim, double base, int64_t originalSeqLen = 0,
                        double factor = 1.0, double betaFast = 32.0, double betaSlow = 1.0);

/// x: bf16 [rows, heads, headDim] contiguous. Row r is rotated at position
/// pos0 + r * posStep (posStep = ratio for compressed latents at j*ratio).
void applyRope(uint16_t *x, int64_t rows, int64_t heads, int64_t headDim, const RopeFreqs &freqs,
               int64_t pos0, int64_t posStep, bool inverse);

/// Same with explicit per-row positions.
void applyRopeAt(uint16_t *x, int64_t rows, int64_t heads, int64_t headDim,
                 const RopeFreqs &freqs, const int64_t *positions, bool inverse);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_ROPE_H
