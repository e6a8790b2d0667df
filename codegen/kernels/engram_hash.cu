//===- engram_hash.cu - Engram history update and n-gram hash (§7.4) ------===//
//
// Two steps:
//   dsc_engram_hash_map: history[start + t] = tokenMap[ids[t]] (one thread per
//     token; an id outside the map writes kEngramDead = -1, the CPU adapter
//     rejects it instead);
//   dsc_engram_hash: one thread per (token, layer) runs
//     numerics::engramHashFromCache (the CPU code, bit for bit) and writes the
//     (maxNgram-1)*heads hash ids of hashes[t, layer, :]; maxNgram =
//     p.max_ngram, heads = p.heads, layers = p.layers.count
//     (dsc::abi::EngramHashParams, its first argument; the arrays themselves
//     come as the device tables below), padId = the pad token's mapped id
//     (the adapter maps p.pad_id through the token map).
// mult [layers, maxNgram], primes/offsets [layers, (maxNgram-1)*heads] (i64).
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_engram_hash_map(const int *ids, const long long *tokenMap, long long mapSize,
                                    long long *history, const long long *callState,
                                    long long S) {
  DSC_KERNEL_PROLOGUE();
  const long long start = DSC_CALL_START(callState);
  for (long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x; t < S;
       t += (long long)gridDim.x * blockDim.x) {
    const long long id = ids[t];
    history[start + t] = (id < 0 || id >= mapSize) ? kEngramDead : tokenMap[id];
  }
}

DSC_KERNEL void dsc_engram_hash(const __grid_constant__ dsc::abi::EngramHashParams p,
                                const long long *history, const long long *callState,
                                long long S, long long padId, const long long *mult,
                                const long long *primes, const long long *offsets,
                                long long *hashes) {
  DSC_KERNEL_PROLOGUE();
  const int maxNgram = (int)p.max_ngram, heads = (int)p.heads, layers = (int)p.layers.count;
  const long long start = DSC_CALL_START(callState);
  const long long cols = (long long)(maxNgram - 1) * heads;
  const long long n = S * layers;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x) {
    const long long t = i / layers, l = i - t * layers;
    engramHashFromCache(history, start + t, padId, mult + l * maxNgram, maxNgram,
                        primes + l * cols, offsets + l * cols, heads, hashes + i * cols);
  }
}
