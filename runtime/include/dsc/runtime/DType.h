//===- DType.h - Element types of tensors, plans and checkpoints -----------===//
//
// What: the element types the plan, the checkpoint reader and the backends
// share, named as in safetensors headers ("BF16", "F8_E4M3", ...).
// Why its own header: the plan (Plan.h) needs DType without the
// checkpoint reader, so the compiler links the plan library alone.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_DTYPE_H
#define DSC_RUNTIME_DTYPE_H

#include <cstddef>
#include <optional>
#include <string_view>

namespace dsc::runtime {

enum class DType { BF16, F16, F32, F64, I8, U8, I16, I32, I64, Bool, F8_E4M3, F8_E8M0 };

/// "BF16", "F8_E4M3", ... as written in safetensors headers.
const char *dtypeName(DType dtype);
/// Bytes per element.
size_t dtypeSize(DType dtype);
/// Parses a safetensors dtype string; nullopt if unknown.
std::optional<DType> parseDType(std::string_view name);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_DTYPE_H
