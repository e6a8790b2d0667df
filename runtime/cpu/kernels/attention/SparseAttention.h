//===- SparseAttention.h - Sparse single-KV-head attention with sink (CPU) -===//
//
// What: the reference's sparse_attn (reference-spec §9.7, §15.10; kcpu
// sparse_attn, K41:296-403). Per query row s and head h, over the index
// list idx[s, 0..K) (int32 rows of kv; -1 = skip; duplicates kept):
//   - K = V = the full headDim vector of kv row idx;
//   - logit = (q . k)_fp32 * scale, scale = fp32(headDim^-1/2) (q bf16
//     widened, fp32 dot in index order);
//   - online softmax in blocks of 64 list entries, in list order: running
//     max m starts at -1e30; per block m' = max(m, block max) (-1 entries
//     are -inf), c = exp(m - m'), p_k = exp(logit_k - m');
//     denom = denom*c + sum_k p_k (fp32 p); acc = acc*c + sum_k bf16(p_k)*v_k
//     (p rounded to bf16 against the RUNNING max, fp32 accumulation);
//   - denom += exp(sink[h] - m) (the sink is a raw logit, not scaled);
//   - o = bf16(acc / denom). A row whose entries are all -1 gives 0
//     (exp(sink + 1e30) = inf).
// Rounding points: fp32 dot, *scale, exp (libm expf; torch uses Sleef
// expf_u10, <= 1 ulp apart), bf16(p), fp32 sums, final division, bf16.
// kv holds the dequantised rows (fp32 holding bf16 values): the window part
// then the compressed part, as cat(window_kv, compressed_kv).
// Rows x heads are independent (parallelFor).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_ATTENTION_SPARSEATTENTION_H
#define DSC_RUNTIME_CPU_KERNELS_ATTENTION_SPARSEATTENTION_H

#include <cstdint>

namespace dsc::cpu {

inline constexpr int64_t kSparseAttnBlock = 64;

/// fp32(headDim^-1/2) (a python float rounded to fp32 by torch.tensor).
float sparseAttnScale(int64_t headDim);

/// q bf16 [S, H, D]; kv fp32 [nKv, D]; sink fp32 [H]; idx int32 [S, K]
/// (entries in [-1, nKv)); o bf16 [S, H, D].
void sparseAttention(const uint16_t *q, int64_t S, int64_t H, int64_t D, const float *kv,
                     int64_t nKv, const float *sink, const int32_t *idx, int64_t K, float scale,
                     uint16_t *o);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_ATTENTION_SPARSEATTENTION_H
