//===- InputFile.h - Opening and reading input files that are regular files ===//
//
// What: the one way the runtime and its tools open a file they read (a plan,
// a checkpoint shard or index, an .npy, an id or prompts file): only a
// regular file is opened for good, and the open itself never waits. A FIFO
// or a character device (`/dev/zero`, a terminal) given as an input is an
// error naming the path instead of a hang or an unbounded read.
// How: open(O_RDONLY | O_NONBLOCK) (a FIFO without a writer does not block
// it), fstat on the descriptor (no window between the check and the use),
// then O_NONBLOCK cleared. readRegularFile reads a whole file of at most
// `maxBytes` bytes (its size known up front from fstat).
// Invariants: errors name the path: NotFound (no such file), FailedPrecondition
// (cannot open or read), InvalidArgument (not a regular file, over the limit).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_INPUTFILE_H
#define DSC_RUNTIME_INPUTFILE_H

#include "dsc/runtime/Status.h"

#include <cstdint>
#include <string>

namespace dsc::runtime {

/// A descriptor of the regular file `path`, open for reading (the caller
/// closes it); `what` names the file's role in errors ("plan", "index").
Expected<int> openRegularFile(const std::string &path, const std::string &what);

/// The whole content of the regular file `path`, at most `maxBytes` bytes.
Expected<std::string> readRegularFile(const std::string &path, const std::string &what,
                                      uint64_t maxBytes);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_INPUTFILE_H
