//===- common.cuh - Shared conventions and helpers for dsc kernel templates ===//
//
// Every kernel template codegen/kernels/<name>.cu includes this header first:
//
//   #include "codegen/kernels/common.cuh"
//
// The templates are compiled by NVRTC at dsc-compile time (KernelCompiler.h),
// with this header, the kernel ABI and the numerics library passed in
// memory. There is no -I and no CUDA header: NVRTC ships none (toolchain.md
// §2), so kernels use only this header, dsc/abi/* (the typed kernel
// parameters, shared with the host) and dsc/numerics/* (one definition of
// every number: the bf16/fp8/fp4 rounding rules are the CPU backend's, bit
// for bit).
//
// Conventions (the runtime launches kernels by these rules):
//   - entry points are `DSC_KERNEL void dsc_<kernel>(...)`, or
//     `dsc_<kernel>_<step>` when one template has several launches
//     (extern "C", so the cubin symbol is the plain name);
//   - the kernel's parameters (the plan's typed params: eps, ratio, rope,
//     topk, ...) come as ONE struct, the kernel's dsc::abi::<X>Params of
//     dsc/abi/KernelParams.h (generated from the ODS; the host adapter
//     passes the very struct it gets), as the entry's first argument:
//     `const __grid_constant__ dsc::abi::XParams p` (read in place in the
//     parameter space, no copy; same layout on host and device, checked by
//     test/unit/codegen/KernelAbiTest.cpp). An entry reads every parameter
//     from `p`, converting as the host did before (`(float)p.eps`), and takes
//     none of them as a scalar; an entry that uses no parameter does not
//     take the struct. A fused kernel takes its steps' structs first, in
//     step order (documented in the template);
//   - every other argument is a raw device pointer or a scalar: shapes,
//     strides, the call state, record layouts (six ints) and values the
//     host derives (RoPE inverse frequencies, mapped ids, ...); no other
//     structs by value;
//   - bf16 tensors are `unsigned short` (bf16Load/bf16Store below convert
//     through dsc::numerics, round-to-nearest-even);
//   - element counts, strides and offsets are `long long`;
//   - specialisation constants come as -D NAME=VALUE defines; a template
//     gives each a default with #ifndef so it compiles stand-alone;
//   - no INFINITY: use kNegInf / kPosInf (numerics, constexpr);
//   - every entry's first statement is DSC_KERNEL_PROLOGUE(); (below): the
//     runtime may launch any entry as a programmatic dependent launch
//     (CudaOptions::dependentLaunch), and the test
//     KernelPrologue.EveryEntryWaitsForItsPredecessor checks each entry's PTX.
// Compiled with -std=c++17 -default-device (functions without an execution
// space annotation are device functions).
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELS_COMMON_CUH
#define DSC_CODEGEN_KERNELS_COMMON_CUH

#include "dsc/abi/KernelParams.h"
#include "dsc/abi/LaunchShapes.h"
#include "dsc/numerics/Portability.h"
#include "dsc/numerics/ScalarCodecs.h"
#include "dsc/numerics/Quantize.h"
#include "dsc/numerics/KvLayout.h"
#include "dsc/numerics/EngramHash.h"

#define DSC_KERNEL extern "C" __global__

// Programmatic dependent launch (PDL, sm_90): with CudaOptions::
// dependentLaunch the runtime launches every kernel with the
// programmatic-stream-serialisation attribute, so a kernel may be scheduled
// while its predecessor in the stream still runs. The prologue first waits
// until the predecessor grid has completed and its writes are visible
// (griddepcontrol.wait; nothing of the kernel runs before it, so no read or
// write can race), then lets the successor be scheduled as soon as every
// block of this grid has started (griddepcontrol.launch_dependents: the
// successor's blocks only take the resources this grid's last wave leaves
// and wait in their own prologue). Without the attribute both are no-ops.
// Bound: what it saves is the launch latency and block ramp between two
// kernels (a few microseconds for the small kernels of a decode step).
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
#define DSC_KERNEL_PROLOGUE()                                                                  \
  do {                                                                                         \
    asm volatile("griddepcontrol.wait;" ::: "memory");                                         \
    asm volatile("griddepcontrol.launch_dependents;" ::: "memory");                            \
  } while (0)
#else
#define DSC_KERNEL_PROLOGUE()                                                                  \
  do {                                                                                         \
  } while (0)
#endif
/// The module's mark that its entries begin with DSC_KERNEL_PROLOGUE: the
/// runtime launches a module's entries as dependent launches only when it
/// finds this symbol (hal::Executable::waitsForPredecessor), so a plan
/// compiled before the prologue existed still runs, serialised.
extern "C" __device__ int dsc_kernel_prologue = 1;

// The call state (runtime/cuda/CudaAdapter.h): a device long long[3] =
// {start position p, tokens S, chunk} written before each call / graph
// replay. chunk (CallInfo::chunk) is 1 for a prefill-like call (prefill, and
// the CED replayed launches at p = S_prompt - R' > 0, which read their own
// call state buffer): the window source is the call's own rows; 0 in decode.
// Kernels choose prefill vs decode paths from chunk, never from p == 0.
// A continuation chunk of a chunked prefill stores 1 + ringRows there
// (CallInfo::ringRows: the window rows read from the ring ahead of the
// chunk's own), so chunk stays "nonzero" and ringRows = field - 1.
// Position-dependent kernels take `const long long *callState` and derive
// everything from it; their grids are sized by capacity and threads beyond
// the live range exit.
#define DSC_CALL_START(cs) ((cs)[0])
#define DSC_CALL_TOKENS(cs) ((cs)[1])
#define DSC_CALL_CHUNK(cs) ((cs)[2] != 0)
#define DSC_CALL_RING_ROWS(cs) ((cs)[2] > 0 ? (cs)[2] - 1 : 0)
/// kCompressedLength: entries visible after the call, floor((p + S) / r).
#define DSC_CALL_COMPRESSED_LENGTH(cs, r) (((cs)[0] + (cs)[1]) / (r))
/// kCompressedTokens: entries the call emits, floor((p + S) / r) - floor(p / r).
#define DSC_CALL_COMPRESSED_TOKENS(cs, r) (((cs)[0] + (cs)[1]) / (r) - (cs)[0] / (r))

namespace dsc::kernels {

using namespace dsc::numerics;

// -inf / +inf without <math.h> (NVRTC has no INFINITY): kNegInf, kPosInf and
// kQuietNaN are numerics' constexpr floats (Portability.h, visible here via
// the using-directive); negInf() is the same value as an intrinsic.
__device__ __forceinline__ float negInf() { return __int_as_float(0xff800000); }

/// bf16 stored as its 16 raw bits.
__device__ __forceinline__ float bf16Load(const unsigned short *p, long long i) {
  return bf16ToFloat(p[i]);
}
__device__ __forceinline__ void bf16Store(unsigned short *p, long long i, float v) {
  p[i] = bf16FromFloat(v);
}
/// bf16FromFloat(lo) | bf16FromFloat(hi) << 16 in one instruction (F2FP):
/// the same bits for every non-NaN value (round to nearest even); a NaN
/// becomes 0x7fff instead of 0x7fc0 (still a NaN).
__device__ __forceinline__ unsigned bf16x2FromFloats(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}

/// The block copies n elements: store(i, load(i)) for every i < n, each
/// thread issuing kAhead loads before its stores (a shared-memory store
/// between two global loads would order them: the compiler cannot tell the
/// generic pointers apart, so a plain copy loop waits one memory latency
/// per element it copies). All threads of the block may call it; it has no
/// barrier.
template <int kAhead = 8, typename Load, typename Store>
__device__ __forceinline__ void blockCopy(long long n, Load load, Store store) {
  using T = decltype(load(0LL));
  const long long stride = blockDim.x;
  for (long long base = threadIdx.x; base < n; base += kAhead * stride) {
    T v[kAhead];
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const long long i = base + u * stride;
      if (i < n)
        v[u] = load(i);
    }
#pragma unroll
    for (int u = 0; u < kAhead; ++u) {
      const long long i = base + u * stride;
      if (i < n)
        store(i, v[u]);
    }
  }
}

/// Sum over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float warpSum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

/// Max over the 32 lanes of a warp; every lane gets the result.
__device__ __forceinline__ float warpMax(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) {
    const float o = __shfl_xor_sync(0xffffffffu, v, offset);
    v = o > v ? o : v;
  }
  return v;
}

/// Sum over a 1-D block (blockDim.x a multiple of 32, at most 1024); every
/// thread gets the result. `scratch` is __shared__ float[32]. Contains
/// __syncthreads(): all threads of the block must call it.
__device__ __forceinline__ float blockSum(float v, float *scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warpSum(v);
  __syncthreads(); // scratch may still be read by a previous call
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : 0.0f;
  return warpSum(v);
}

/// Max over a 1-D block, same contract as blockSum.
__device__ __forceinline__ float blockMax(float v, float *scratch) {
  const int lane = threadIdx.x & 31;
  const int warp = threadIdx.x >> 5;
  const int warps = (blockDim.x + 31) >> 5;
  v = warpMax(v);
  __syncthreads();
  if (lane == 0)
    scratch[warp] = v;
  __syncthreads();
  v = lane < warps ? scratch[lane] : kNegInf;
  return warpMax(v);
}

} // namespace dsc::kernels

// Kernel entry points live at global scope (extern "C"); let them name the
// helpers and the numerics unqualified. Only kernel templates include this.
using namespace dsc::kernels;
using namespace dsc::numerics;

#endif // DSC_CODEGEN_KERNELS_COMMON_CUH
