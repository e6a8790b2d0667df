//===- stream_probe.cu - Weight-streaming access patterns against bandwidth -===//
//
// What: diagnostic kernels for `dsc-kernel-bench stream` (docs/bench.md): each
// reads a [rows, rowBytes] byte matrix once in one of the decode GEMVs'
// access patterns and xor-folds what it read into one word per warp (so no
// load is dead), to tell which pattern, and how many loads in flight per
// thread, reach the copy bandwidth (docs/perf.md, session 14):
//   pattern 0 "row":    a warp per row, lane reads 16 B at 16 lane + 512 i
//                       (the bf16 head's GEMV, gemv.cuh bf16RowDots);
//   pattern 1 "lanes":  a warp per 8 rows, lane (g, t) reads 16 B of row g
//                       at 64 i + 16 t (lane_gemv.cuh);
//   pattern 2 "wg":     a warp per 16 rows, lane (g, t) reads 4 B of rows g
//                       (i even) and g + 8 (i odd) at 16 (i / 2) + 4 t
//                       (wg_gemv.cuh);
//   pattern 3 "row128": a warp per row, lane reads 4 B at 4 lane + 128 i.
// kDepth loads per thread are issued before any of them is used; the loads
// are the GEMVs' (ld.global.nc with the L2::256B prefetch; 16-byte ones
// without L1 allocation, as loadStream16).
// Invariants: rowBytes % 512 == 0; rows a multiple of the pattern's rows
// per warp; out has one word per warp (rows / rows per warp).
// Bound: rows * rowBytes at memory bandwidth.
//===----------------------------------------------------------------------===//
#include "codegen/kernels/common.cuh"
#include "codegen/kernels/gemv.cuh"

namespace dsc_stream {

__device__ __forceinline__ unsigned load4(const unsigned char *p) {
  unsigned v;
  asm volatile("ld.global.nc.L2::256B.u32 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ unsigned load16(const unsigned char *p) {
  const uint4 v = dsc_gemv::loadStream16(p);
  return v.x ^ v.y ^ v.z ^ v.w;
}

__device__ __forceinline__ int rowsPerWarp(int pattern) {
  return pattern == 1 ? 8 : pattern == 2 ? 16 : 1;
}

/// The address of load i of this lane in the warp's rows starting at row0.
__device__ __forceinline__ const unsigned char *address(int pattern, const unsigned char *w,
                                                        long long row0, long long rowBytes,
                                                        long long i) {
  const int lane = threadIdx.x & 31, g = lane >> 2, t = lane & 3;
  switch (pattern) {
  case 0:
    return w + row0 * rowBytes + 16 * lane + 512 * i;
  case 1:
    return w + (row0 + g) * rowBytes + 64 * i + 16 * t;
  case 2:
    return w + (row0 + g + 8 * (i & 1)) * rowBytes + 16 * (i >> 1) + 4 * t;
  default:
    return w + row0 * rowBytes + 4 * lane + 128 * i;
  }
}

template <int kDepth>
__device__ void probe(const unsigned char *w, long long rows, long long rowBytes, int pattern,
                      unsigned *out) {
  const int rpw = rowsPerWarp(pattern);
  const bool wide = pattern < 2; // 16-byte loads
  // Loads per lane over the warp's rows: its bytes over 32 lanes' loads.
  const long long n = rpw * rowBytes / (32 * (wide ? 16 : 4));
  for (long long warp = dsc_gemv::firstRow(); warp < rows / rpw; warp += dsc_gemv::rowStride()) {
    unsigned acc = 0;
    for (long long i0 = 0; i0 < n; i0 += kDepth) {
      unsigned v[kDepth];
#pragma unroll
      for (int d = 0; d < kDepth; ++d) {
        const unsigned char *p = address(pattern, w, warp * rpw, rowBytes,
                                         i0 + d < n ? i0 + d : n - 1);
        v[d] = wide ? load16(p) : load4(p);
      }
#pragma unroll
      for (int d = 0; d < kDepth; ++d)
        acc ^= v[d];
    }
    acc ^= __shfl_xor_sync(0xffffffffu, acc, 16);
    if ((threadIdx.x & 31) == 0)
      out[warp] = acc;
  }
}

} // namespace dsc_stream

#define DSC_STREAM_PROBE_ENTRY(name, depth)                                                    \
  DSC_KERNEL void name(const unsigned char *w, long long rows, long long rowBytes, int pattern, \
                       unsigned *out) {                                                        \
    DSC_KERNEL_PROLOGUE();                                                                     \
    dsc_stream::probe<depth>(w, rows, rowBytes, pattern, out);                                 \
  }
DSC_STREAM_PROBE_ENTRY(dsc_stream_probe_d1, 1)
DSC_STREAM_PROBE_ENTRY(dsc_stream_probe_d2, 2)
DSC_STREAM_PROBE_ENTRY(dsc_stream_probe_d4, 4)
DSC_STREAM_PROBE_ENTRY(dsc_stream_probe_d8, 8)
DSC_STREAM_PROBE_ENTRY(dsc_stream_probe_d16, 16)
