//===- replay_slice.cu - CED replay slice (kernel `replay_slice`) ----------===//
//
// CPU: runtime/cpu/CpuAdaptersBasic.cpp (replaySlice). A CED plan's prefill
// keeps the last R' = min(R, S) rows of the stream [S, hc, D] and the mix
// [S, hc] for the replayed decoder layers (docs/passes.md, ds-ced-split).
// dsc_replay_slice: one launch per operand; copies `bytes` bytes from `in`
// (already offset by the skipped rows) to `out`, one thread per byte
// (grid-stride). The adapter passes the byte offset of row S - R'.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"

DSC_KERNEL void dsc_replay_slice(const unsigned char *in, unsigned char *out, long long bytes) {
  DSC_KERNEL_PROLOGUE();
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < bytes;
       i += (long long)gridDim.x * blockDim.x)
    out[i] = in[i];
}
