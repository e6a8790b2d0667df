//===- AttentionInverseRope.cpp - native `attention`: one kernel -----------===//
//
// What: the host side of the native executable attention_inverse_rope
// (NativeExecutables.def): the `attention` group [sparse_attention, rope
// (inverse)] as one launch of dsc_sparse_attention with its RoPE epilogue
// (codegen/kernels/sparse_attention.cu), which rotates the attention output
// in registers and writes the rope step's output; the attention output
// itself is internal to the group and never written.
// Invariant: byte-identical to the two steps (the epilogue applies the rope
// step's arithmetic to the bf16-rounded attention output).
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"

namespace dsc::cuda {

Status attentionInverseRope(NativeLaunch &launch) {
  CudaLaunchContext *attention = launch.step<abi::SparseAttentionParams>();
  CudaLaunchContext *rope = launch.step<abi::RopeParams>();
  if (!attention || !rope || rope->outputs.empty())
    return runtime::internalError("attention_inverse_rope: the group is not sparse_attention + "
                                  "rope");
  return attentionWithInverseRope(*attention, rope->kernel, rope->launch.kernel,
                                  *rope->outputs[0]);
}

} // namespace dsc::cuda
