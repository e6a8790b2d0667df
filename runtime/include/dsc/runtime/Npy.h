//===- Npy.h - NumPy .npy files (version 1.0) -------------------------------===//
//
// Writes and reads little-endian C-order arrays of f4, i4, i8, u1, u2 (bf16
// bits are written as float32 by callers that want NumPy to read values).
// The header is "\x93NUMPY" 1.0, then a Python dict literal padded with
// spaces and a newline to a multiple of 64 bytes, as NumPy writes it.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_NPY_H
#define DSC_RUNTIME_NPY_H

#include "dsc/runtime/HostTensor.h"
#include "dsc/runtime/Status.h"

#include <string>

namespace dsc::runtime {

/// Writes `tensor` (F32, I32, I64, U8, U16, F64) to `path`.
Status writeNpy(const std::string &path, const HostTensor &tensor);
/// Reads an .npy file of a supported dtype ('<f4', '<i4', '<i8', '|u1', '<u2', '<f8').
Expected<HostTensor> readNpy(const std::string &path);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_NPY_H
