//===- Npy.h - NumPy .npy files (version 1.0) -------------------------------===//
//
// Writes and reads little-endian C-order arrays of f4, f8, i4, i8, u1, i1 and
// b1 (bf16 bits are written as float32 by callers that want NumPy to read
// values). The header is "\x93NUMPY" 1.0, then a Python dict literal padded
// with spaces and a newline to a multiple of 64 bytes, as NumPy writes it.
// Reading accepts versions 1.0 to 3.0 with a header of at most 1 MiB and
// checks the data size against the file before allocating.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_NPY_H
#define DSC_RUNTIME_NPY_H

#include "dsc/runtime/HostTensor.h"
#include "dsc/runtime/Status.h"

#include <string>

namespace dsc::runtime {

/// Writes `tensor` (F32, F64, I32, I64, U8, I8, Bool) to `path` through a
/// unique temporary file in the same directory, renamed into place on
/// success and removed on failure.
Status writeNpy(const std::string &path, const HostTensor &tensor);
/// Reads an .npy file of a supported dtype ('<f4', '<f8', '<i4', '<i8',
/// '|u1', '|i1', '|b1'). A missing file is NotFound, an unreadable one
/// FailedPrecondition, a truncated or malformed one DataLoss.
Expected<HostTensor> readNpy(const std::string &path);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_NPY_H
