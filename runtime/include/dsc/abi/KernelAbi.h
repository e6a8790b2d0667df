//===- KernelAbi.h - The hand-written pieces of the kernel ABI -------------===//
//
// What: the parameter types the generated KernelParams.h builds its per-kernel
// structs from, for the attributes that are not plain scalars: `Rope`
// (#ds.rope) and `KernelArray` (a DenseI64ArrayAttr, stored out of line in
// KernelSpec::constants so that every struct stays fixed-size and can be a
// CUDA `__grid_constant__` argument).
// Why here: the compiler (lowering), the plan reader, both backends and the
// NVRTC-compiled kernels include the same definitions (codegen embeds this
// folder), so a kernel's parameters have one layout everywhere.
// Invariants: POD only, no standard headers (NVRTC has none); `long long` /
// `double` / `bool` / `unsigned char` enums. RoPE fields absent from the
// attribute hold the values the reference uses when YaRN is off.
//===----------------------------------------------------------------------===//
#ifndef DSC_ABI_KERNELABI_H
#define DSC_ABI_KERNELABI_H

namespace dsc::abi {

/// #ds.rope: interleaved RoPE on the last `dim` channels, YaRN when
/// original_seq_len > 0 (reference-spec §9.2).
struct Rope {
  long long dim = 0;
  double theta = 0;
  long long original_seq_len = 0;
  double factor = 1.0;
  double beta_fast = 32.0;
  double beta_slow = 1.0;
#ifndef __CUDACC_RTC__
  bool operator==(const Rope &) const = default;
#endif
};

/// `count` int64 values at `offset` of the kernel specialisation's constants
/// (KernelSpec::constants); verifyPlan checks the range.
struct KernelArray {
  long long offset = 0;
  long long count = 0;
#ifndef __CUDACC_RTC__
  bool operator==(const KernelArray &) const = default;
#endif
};

} // namespace dsc::abi

#endif // DSC_ABI_KERNELABI_H
