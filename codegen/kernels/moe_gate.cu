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
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/reduce.cuh"
#include "codegen/kernels/select.cuh"


DSC_KERNEL void dsc_moe_gate(const __grid_constant__ dsc::abi::MoeGateParams p,
                             const unsigned short *x, long long T, long long D,
                             const unsigned short *w, const float *bias, long long E,
                             float *weights, int *ids) {
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
    __syncthreads();
  }
}
