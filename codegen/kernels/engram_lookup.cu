//===- engram_lookup.cu - Engram table rows (reference-spec §7.5.1) -------===//
//
// out[s, c*hd + i] = bf16( e4m3(table[id, i]) * ue8m0(scale[id, i/32]) ),
// id = hashes[s*hashStride + slot*cols + c]: the slot's columns of the hash
// rows, slot = p.slot (dsc::abi::EngramLookupParams, the first argument; the
// adapter checks it is inside the hash layers); an id outside [0, rows)
// gives zeros. One thread per element.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_engram_lookup(const __grid_constant__ dsc::abi::EngramLookupParams p,
                                  const long long *hashes, long long S, long long cols,
                                  long long hashStride, const unsigned char *table,
                                  const unsigned char *tableScale, long long rows, long long hd,
                                  unsigned short *out) {
  DSC_KERNEL_PROLOGUE();
  const long long *slotHashes = hashes + p.slot * cols;
  const long long n = S * cols * hd, nb = hd / 32;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < n;
       e += (long long)gridDim.x * blockDim.x) {
    const long long i = e % hd, sc = e / hd, c = sc % cols, s = sc / cols;
    const long long id = slotHashes[s * hashStride + c];
    if (id < 0 || id >= rows) {
      out[e] = 0;
      continue;
    }
    out[e] = bf16FromFloat(
        __fmul_rn(e4m3ToFloat(table[id * hd + i]), ue8m0ToFloat(tableScale[id * nb + i / 32])));
  }
}
