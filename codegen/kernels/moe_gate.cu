//===- moe_gate.cu - MoE gate: scores, top-k, route weights (§10.2-3) -----===//
//
// One block per token; dynamic shared memory: scores f32 [E], choice f32
// [E], taken u8 [E]. Parameters: p (dsc::abi::MoeGateParams, the first
// argument): k = p.topk, temp = (float)p.temperature, route_scale =
// (float)p.route_scale, normalize = p.normalize. Threads e: s =
// fp32(dotF64(x, W[e])) / temp (IEEE), s = sqrt(softplus(s)) (threshold 20;
// device expf/log1pf/sqrtf, within a few ulp of the host libm), choice = s +
// bias. Thread 0: k rounds of argmax under numerics' tie rule (NaN first,
// larger first, lower id at ties) = rank order; w = s[idx]; normalise
// (rank-order fp32 sum + 1e-20) when normalize && k > 1; times route_scale.
// That is the CPU-order kernel (CudaOptions::cpuOrderFamilies). The default,
// fast path (same formulas, scores accumulated in fp32 in gemv.cuh's order):
//   dsc_moe_gate_scores_fast: one warp per expert row e (16-byte loads),
//     all tokens in passes: s[t, e], choice[t, e] into global scratch;
//   dsc_moe_gate_select_fast: one block per token: the choice row as
//     rankKey keys and the scores in shared memory (E <= 2048; larger key =
//     ranks before, the same tie rule), then k <= 64 rounds of a warp argmax
//     over them (each a u64 max, the pick's key cleared; no global access
//     inside a round), then the same normalisation by lane 0;
//   dsc_moe_gate_fused_fast (calls of few tokens: decode): both in one
//     launch, the last block of the scores selecting (same values).
// Bound: the 2*E*D bytes of the gate weight at memory bandwidth.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"
#include "codegen/kernels/select.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_moe_gate_tail {
/// sqrt(softplus(v / temperature)) (threshold 20), as dsc_moe_gate.
__device__ __forceinline__ float score(float dot, float temperature) {
  float v = __fdiv_rn(dot, temperature);
  v = v > 20.0f ? v : log1pf(expf(v));
  return __fsqrt_rn(v);
}
/// Route weights of one token by lane 0: normalise, scale (dsc_moe_gate's tail).
__device__ void finishWeights(float *wt, long long topk, bool normalize, float routeScale) {
  if (normalize && topk > 1) {
    float sum = 0.0f;
    for (long long j = 0; j < topk; ++j)
      sum = __fadd_rn(sum, wt[j]);
    const float denom = __fadd_rn(sum, 1e-20f);
    for (long long j = 0; j < topk; ++j)
      wt[j] = __fdiv_rn(wt[j], denom);
  }
  for (long long j = 0; j < topk; ++j)
    wt[j] = __fmul_rn(wt[j], routeScale);
}
/// The scores of every (token, expert): s [T, E] and choice = s + bias,
/// a warp per expert row (dsc_moe_gate_scores_fast's grid).
__device__ void scoreRows(const dsc::abi::MoeGateParams &p, const unsigned short *x, long long T,
                          long long D, const unsigned short *w, const float *bias, long long E,
                          float *scores, float *choice) {
  const float temperature = (float)p.temperature;
  dsc_gemv::bf16RowGemv<dsc_gemv::kFewRowLoads>(
      E, T, D, D, [&](long long e) { return w + e * D; }, [&](long long) { return x; },
      [&](long long t, long long e, float dot) {
        const float v = score(dot, temperature);
        scores[t * E + e] = v;
        choice[t * E + e] = bias ? __fadd_rn(v, bias[e]) : v;
      });
}
} // namespace dsc_moe_gate_tail

DSC_KERNEL void dsc_moe_gate(const __grid_constant__ dsc::abi::MoeGateParams p,
                             const unsigned short *x, long long T, long long D,
                             const unsigned short *w, const float *bias, long long E,
                             float *weights, int *ids) {
  DSC_KERNEL_PROLOGUE();
  const long long topk = p.topk;
  const float routeScale = (float)p.route_scale, temperature = (float)p.temperature;
  const bool normalize = p.normalize;
  extern __shared__ float smem[];
  float *s = smem, *choice = smem + E;
  unsigned char *taken = (unsigned char *)(smem + 2 * E);
  for (long long t = blockIdx.x; t < T; t += gridDim.x) {
    const unsigned short *xr = x + t * D;
    for (long long e = threadIdx.x; e < E; e += blockDim.x) {
      const unsigned short *wr = w + e * D;
      const double d = dsc_dense_d64::dotF64(
          D, [&](long long k) { return bf16ToFloat(xr[k]); },
          [&](long long k) { return bf16ToFloat(wr[k]); });
      float v = __fdiv_rn((float)d, temperature);
      v = v > 20.0f ? v : log1pf(expf(v));
      v = __fsqrt_rn(v);
      s[e] = v;
      choice[e] = bias ? __fadd_rn(v, bias[e]) : v;
      taken[e] = 0;
    }
    __syncthreads();
    if (threadIdx.x == 0) {
      float *wt = weights + t * topk;
      int *it = ids + t * topk;
      const long long k = topk < E ? topk : E;
      for (long long j = 0; j < k; ++j) {
        long long best = -1;
        for (long long e = 0; e < E; ++e)
          if (!taken[e] && (best < 0 || ranksBefore(choice[e], e, choice[best], best)))
            best = e;
        taken[best] = 1;
        it[j] = (int)best;
        wt[j] = s[best];
      }
      for (long long j = k; j < topk; ++j) { // k > E: never in a valid plan
        it[j] = -1;
        wt[j] = 0.0f;
      }
      dsc_moe_gate_tail::finishWeights(wt, topk, normalize, routeScale);
    }
    __syncthreads();
  }
}


DSC_KERNEL void dsc_moe_gate_scores_fast(const __grid_constant__ dsc::abi::MoeGateParams p,
                                         const unsigned short *x, long long T, long long D,
                                         const unsigned short *w, const float *bias, long long E,
                                         float *scores, float *choice) {
  DSC_KERNEL_PROLOGUE();
  dsc_moe_gate_tail::scoreRows(p, x, T, D, w, bias, E, scores, choice);
}

namespace dsc_moe_gate_tail {
/// The select of token t by the calling block (dsc_moe_gate_select_fast's
/// body): the choice row as rankKey keys and the scores into shared memory,
/// k argmax rounds of warp 0, the route weights. `load(i)` reads element i
/// of a [T, E] scratch row-major (scores: which = 0, choice: which = 1).
template <typename Load>
__device__ void selectToken(const dsc::abi::MoeGateParams &p, Load load, long long t, long long E,
                            float *weights, int *ids, unsigned long long *keys, float *score,
                            int *pick) {
  const long long topk = p.topk;
  const long long k = topk < E ? topk : E;
  blockCopy(
      E, [&](long long e) { return make_float2(load(1, t * E + e), load(0, t * E + e)); },
      [&](long long e, float2 v) {
        keys[e] = rankKey(v.x, e);
        score[e] = v.y;
      });
  __syncthreads();
  if (threadIdx.x < 32) { // k argmax rounds of warp 0 over the keys
    const int lane = threadIdx.x;
    for (long long j = 0; j < k; ++j) {
      unsigned long long best = 0; // below every key (their low word is > 0)
      for (long long e = lane; e < E; e += 32)
        best = keys[e] > best ? keys[e] : best;
#pragma unroll
      for (int off = 16; off > 0; off >>= 1) {
        const unsigned long long other = __shfl_xor_sync(0xffffffffu, best, off);
        best = other > best ? other : best;
      }
      const long long e = 0xffffffffll - (long long)(best & 0xffffffffull);
      if (lane == 0) {
        pick[j] = (int)e;
        keys[e] = 0; // taken
      }
      __syncwarp();
    }
    for (long long j = lane; j < k; j += 32) {
      ids[t * topk + j] = pick[j];
      weights[t * topk + j] = score[pick[j]];
    }
    __syncwarp();
    if (lane == 0) {
      for (long long j = k; j < topk; ++j) { // k > E: never in a valid plan
        ids[t * topk + j] = -1;
        weights[t * topk + j] = 0.0f;
      }
      finishWeights(weights + t * topk, topk, p.normalize, (float)p.route_scale);
    }
  }
  __syncthreads();
}
} // namespace dsc_moe_gate_tail

DSC_KERNEL void dsc_moe_gate_select_fast(const __grid_constant__ dsc::abi::MoeGateParams p,
                                         const float *scores, const float *choice, long long T,
                                         long long E, float *weights, int *ids) {
  DSC_KERNEL_PROLOGUE();
  constexpr int kE = dsc::abi::kMoeSelectMaxExperts, kK = dsc::abi::kMoeSelectMaxTopk;
  __shared__ unsigned long long keys[kE]; // E <= kE and k <= kK (the adapter checks)
  __shared__ float score[kE];             // the row's scores: no global load per round
  __shared__ int pick[kK];                // the rounds' experts
  auto load = [&](int which, long long i) { return which ? choice[i] : scores[i]; };
  for (long long t = blockIdx.x; t < T; t += gridDim.x)
    dsc_moe_gate_tail::selectToken(p, load, t, E, weights, ids, keys, score, pick);
}

/// dsc_moe_gate_scores_fast and dsc_moe_gate_select_fast in ONE launch for
/// calls of few tokens (decode, M-row steps): the scores' blocks as in
/// dsc_moe_gate_scores_fast, then the last block to finish (a ticket on
/// `counter`, a zeroed scratch word it leaves zero again) selects every
/// token as dsc_moe_gate_select_fast: the same values, one dependent launch
/// fewer on the decode chain. The other blocks' scores are read through L2
/// (__ldcg) after the ticket's fence.
DSC_KERNEL void dsc_moe_gate_fused_fast(const __grid_constant__ dsc::abi::MoeGateParams p,
                                        const unsigned short *x, long long T, long long D,
                                        const unsigned short *w, const float *bias, long long E,
                                        float *scores, float *choice, unsigned *counter,
                                        float *weights, int *ids) {
  DSC_KERNEL_PROLOGUE();
  dsc_moe_gate_tail::scoreRows(p, x, T, D, w, bias, E, scores, choice);
  __shared__ bool lastBlock;
  __threadfence(); // this thread's scores before the block's ticket
  __syncthreads();
  if (threadIdx.x == 0)
    lastBlock = atomicAdd(counter, 1u) == gridDim.x - 1;
  __syncthreads();
  if (!lastBlock)
    return;
  __threadfence(); // every block's scores after their tickets
  constexpr int kE = dsc::abi::kMoeSelectMaxExperts, kK = dsc::abi::kMoeSelectMaxTopk;
  __shared__ unsigned long long keys[kE];
  __shared__ float score[kE];
  __shared__ int pick[kK];
  auto load = [&](int which, long long i) { return __ldcg(which ? choice + i : scores + i); };
  for (long long t = 0; t < T; ++t)
    dsc_moe_gate_tail::selectToken(p, load, t, E, weights, ids, keys, score, pick);
  if (threadIdx.x == 0)
    atomicExch(counter, 0u); // the next launch's tickets start at zero
}
