//===- InputFile.h - Opening and reading input files that are regular files ===//
//
// What: the one way the runtime and its tools open a file they read (a plan,
// a checkpoint shard or index, an .npy, an id or prompts file): only a
// regular file is opened for good, and the open itself never waits. A FIFO
// or a character device (`/dev/zero`, a terminal) given as an input is an
// error naming the path instead of a hang or an unbounded read.
// How: RegularFile::open does open(O_RDONLY | O_NONBLOCK) (a FIFO without a
// writer does not block it), fstat on the descriptor (no window between the
// check and the use; the size is kept), then clears O_NONBLOCK. The object
// owns the descriptor (closed on destruction). readRegularFile reads a whole
// file of at most `maxBytes` bytes.
// Invariants: errors name the path and the file's role: NotFound (no such
// file), FailedPrecondition (cannot open, stat or read), InvalidArgument
// (not a regular file, over the limit), DataLoss (it shrank while read).
// Readers in libraries below the runtime (models' config import, numerics'
// Engram map) check the same with a stat before their own open.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_INPUTFILE_H
#define DSC_RUNTIME_INPUTFILE_H

#include "dsc/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <string>

namespace dsc::runtime {

/// An open regular file for reading; `what` names its role in errors
/// ("plan", "index file").
class RegularFile {
public:
  static Expected<RegularFile> open(const std::string &path, const std::string &what);
  RegularFile(RegularFile &&other) noexcept
      : fd_(other.fd_), size_(other.size_), path_(std::move(other.path_)),
        what_(std::move(other.what_)) {
    other.fd_ = -1;
  }
  RegularFile &operator=(RegularFile &&) = delete;
  RegularFile(const RegularFile &) = delete;
  ~RegularFile();

  int fd() const { return fd_; }
  uint64_t size() const { return size_; } ///< at open
  /// Reads exactly `n` bytes from the current offset (EINTR and short reads
  /// retried): DataLoss if the file ends first, FailedPrecondition on an error.
  Status read(void *data, size_t n) const;

private:
  RegularFile(int fd, uint64_t size, std::string path, std::string what)
      : fd_(fd), size_(size), path_(std::move(path)), what_(std::move(what)) {}
  int fd_ = -1;
  uint64_t size_ = 0;
  std::string path_, what_;
};

/// The whole content of the regular file `path`, at most `maxBytes` bytes.
Expected<std::string> readRegularFile(const std::string &path, const std::string &what,
                                      uint64_t maxBytes);

} // namespace dsc::runtime

#endif // DSC_RUNTIME_INPUTFILE_H
