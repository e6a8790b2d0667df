//===- Embedding.h - CPU reference token embedding and LM head ------------===//
//
// What: the backbone embedding lookup (reference-spec §5.3; model
// ParallelEmbedding, world_size 1) and the head (§5.8; model ParallelHead):
// logits = F.linear(x.float(), W_fp32) with the checkpoint's bf16 head weight
// upcast to fp32 (exact), in fp32.
// Rounding: the lookup copies bf16 rows bit for bit; the head has one fp32
// rounding per logit (exact products summed in double in K order, see
// Linear.h linearF32). Callers pass the rows they want (the last position for
// generation, every row for `logits_all` / DSpark).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_EMBEDDING_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_EMBEDDING_H

#include <cstdint>

namespace dsc::cpu {

/// y[s] = table[ids[s]] (bf16 [vocab, D] -> y bf16 [S, D]). Returns false (and
/// writes a zero row) for an id outside [0, vocab); the reference would
/// raise there.
bool embedLookup(const int32_t *ids, int64_t S, const uint16_t *table, int64_t vocab, int64_t D,
                 uint16_t *y);

/// logits[r, v] fp32 = sum_d x[r, d]_f32 * W[v, d]_f32. x bf16 [rows, D] (the
/// final RMSNorm output), W bf16 [V, D], logits fp32 [rows, V].
void headLogits(const uint16_t *x, int64_t rows, int64_t D, const uint16_t *w, int64_t V,
                float *logits);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_EMBEDDING_H
