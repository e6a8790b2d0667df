//===- Moe.h - CPU reference MoE: gate, routed FP4 experts, shared expert --===//
//
// What: reference-spec §10 (model Gate.forward, Expert.forward, MoE.forward).
// Input x is the ffn_norm output, bf16 [T, D] (tokens flattened).
//
// Gate (§10.2-3), all fp32:
//   s = (x_f32 . W_f32^T) / gate_temp   (exact products, double sum, one fp32
//       rounding; then an fp32 division by fp32(gate_temp))
//   sqrtsoftplus: sqrt(softplus(s)), torch softplus beta 1 threshold 20
//       (identity for s > 20, else log1p(exp(s)));  sigmoid / softmax also
//       provided for completeness;
//   idx = topk(s + bias, k) (bias fp32; bias_vl for image tokens) with the
//       numerics tie rule (SparseSelect.h topKIndices: larger first, at an
//       exact tie the LOWER expert id wins; torch's order at ties is
//       implementation-defined, the goldens list such rows as expert_ties);
//       idx is in rank order (torch.topk sorted=True);
//   w = s[idx] (no bias); if norm_topk_prob and k > 1: w /= (sum_rank_order(w)
//       + fp32(1e-20)); w *= fp32(route_scale).
// Experts (§10.4-5):
//   g = bf16(w1(x)) widened, u = bf16(w3(x)) widened -- the reference's
//       `self.w1(x).float()` takes the bf16 output of fp4_gemm/fp8_gemm, so
//       this is bf16-then-fp32, NOT the fp32 accumulator;
//   if swiglu_limit > 0: u = clamp(u, -lim, lim), g = min(g, lim);
//   y = silu(g) * u (silu = g / (1 + exp(-g))), then y = w_route * y (fp32,
//       routed experts only), bf16(y), out = w2(bf16 y) -> bf16;
//   acc fp32 = 0; for expert id ascending: acc[token] += out; then
//   acc += shared_expert(x) (FP8 weights, same clamps, no route weight);
//   result bf16(acc).
// Determinism: each GEMM splits over output columns only; the expert loop and
// the accumulation are sequential in expert-id order.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CPU_KERNELS_DENSE_MOE_H
#define DSC_RUNTIME_CPU_KERNELS_DENSE_MOE_H

#include <cstdint>
#include <vector>

namespace dsc::cpu {

enum class MoeScoreFunc { SqrtSoftplus, Sigmoid, Softmax };

struct MoeGateParams {
  int64_t nExperts = 0;
  int64_t topk = 0;
  MoeScoreFunc scoreFunc = MoeScoreFunc::SqrtSoftplus;
  float gateTemp = 1.0f;
  bool normTopkProb = true;
  float routeScale = 1.0f;
};

/// Gate. x bf16 [T, D]; gateW bf16 [E, D]; bias fp32 [E]; biasVl fp32 [E] or
/// null; imageMask [T] (nonzero = image token, uses biasVl) or null.
/// Outputs indices [T, k] (rank order) and weights [T, k] fp32.
/// Optional scores [T, E] fp32 (after the score function), may be null.
void moeGate(const uint16_t *x, int64_t T, int64_t D, const uint16_t *gateW, const float *bias,
             const float *biasVl, const uint8_t *imageMask, const MoeGateParams &p,
             int32_t *indices, float *weights, float *scores = nullptr);

/// One routed expert's FP4 weights: w1/w3 packed [I, D/2] + UE8M0 [I, D/32];
/// w2 packed [D, I/2] + UE8M0 [D, I/32].
struct MoeRoutedExpert {
  const uint8_t *w1 = nullptr, *w1Scale = nullptr;
  const uint8_t *w3 = nullptr, *w3Scale = nullptr;
  const uint8_t *w2 = nullptr, *w2Scale = nullptr;
};

/// Stacked routed weights as the brief's layout: w1/w3 [E, I, D/2] + scale
/// [E, I, D/32]; w2 [E, D, I/2] + scale [E, D, I/32].
struct MoeStackedExperts {
  const uint8_t *w1 = nullptr, *w1Scale = nullptr;
  const uint8_t *w3 = nullptr, *w3Scale = nullptr;
  const uint8_t *w2 = nullptr, *w2Scale = nullptr;
};

/// Views of each expert inside stacked arrays.
std::vector<MoeRoutedExpert> moeExpertViews(const MoeStackedExperts &stacked, int64_t E, int64_t D,
                                            int64_t I);

/// Shared expert: FP8 w1/w3 [I, D] + UE8M0 [ceil(I/32), D/32]; w2 [D, I] +
/// UE8M0 [ceil(D/32), I/32].
struct MoeSharedExpert {
  const uint8_t *w1 = nullptr, *w1Scale = nullptr;
  const uint8_t *w3 = nullptr, *w3Scale = nullptr;
  const uint8_t *w2 = nullptr, *w2Scale = nullptr;
};

struct MoeExpertsParams {
  int64_t dim = 0;     // D
  int64_t inter = 0;   // I (moe_inter_dim)
  float swigluLimit = 0.0f;
};

/// Routed experts + shared expert. indices/weights [T, topk] from moeGate;
/// experts has one entry per routed expert (E = experts count); y bf16 [T, D]
/// (must not alias x).
void moeExperts(const uint16_t *x, int64_t T, const MoeExpertsParams &p,
                const MoeRoutedExpert *experts, int64_t E, const MoeSharedExpert &shared,
                const int32_t *indices, const float *weights, int64_t topk, uint16_t *y);

/// Gate + experts (the whole MoE.forward).
void moe(const uint16_t *x, int64_t T, const uint16_t *gateW, const float *bias,
         const float *biasVl, const uint8_t *imageMask, const MoeGateParams &gp,
         const MoeExpertsParams &ep, const MoeRoutedExpert *experts,
         const MoeSharedExpert &shared, uint16_t *y);

/// The SwiGLU of one expert on fp32 g/u (bf16 values widened), with the
/// clamps and an optional route weight (nullptr = none), written as bf16:
/// out[i] = bf16( w * (silu(min(g,lim)) * clamp(u,+-lim)) ).
void moeSwiglu(const float *g, const float *u, int64_t n, float swigluLimit, const float *routeW,
               uint16_t *out);

} // namespace dsc::cpu

#endif // DSC_RUNTIME_CPU_KERNELS_DENSE_MOE_H
