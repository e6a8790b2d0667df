//===- GroupedOutput.h - CPU reference grouped attention output projection -===//
//
// What: reference-spec §9.8 steps 2-4 (model Attention.forward tail); step 1
// (inverse RoPE on o) belongs to the attention kernels.
//   o [S, H*Dh] bf16 viewed as [S, G, Din], Din = H*Dh/G (heads
//   (H/G)g .. (H/G)(g+1)-1 in group g);
//   z[s, g, r] = einsum('bsgd,grd->bsgr', o, wo_a.view(G, R, Din)) in bf16;
//   y = wo_b(flatten(z)) (FP8 GEMM, Linear.h linearFp8) -> bf16 [S, D].
// Rounding: the einsum is a torch CPU bf16 bmm: exact products, fp32-or-wider
// accumulation, ONE bf16 rounding per output (assumption; dsc uses
// linearBf16's rule: double accumulation in d order, rounded to fp32 then
// bf16). wo_a is bf16 (the reference's convert.py dequantises the released
// fp8 wo_a; use Linear.h dequantizeFp8WeightToBf16 for such a checkpoint).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_GROUPEDOUTPUT_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_GROUPEDOUTPUT_H

#include <cstdint>

namespace dsc::cpu {

/// Step 3: z bf16 [S, G*R] from o bf16 [S, G*Din] and wo_a bf16 [G*R, Din].
void groupedWoA(const uint16_t *o, int64_t S, int64_t G, int64_t Din, const uint16_t *woA,
                int64_t R, uint16_t *z);

/// Steps 2-4: y bf16 [S, D]. woB E4M3 [D, G*R], woBScale UE8M0
/// [ceil(D/32), G*R/32].
void groupedOutputProjection(const uint16_t *o, int64_t S, int64_t G, int64_t Din,
                             const uint16_t *woA, int64_t R, const uint8_t *woB,
                             const uint8_t *woBScale, int64_t D, uint16_t *y);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_GROUPEDOUTPUT_H
