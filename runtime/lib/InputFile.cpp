//===- InputFile.cpp - Opening and reading input files that are regular files ===//
#include "dsc/runtime/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsc::runtime {

Expected<RegularFile> RegularFile::open(const std::string &path, const std::string &what) {
  const std::string where = path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = where + "cannot open " + what + ": " + std::strerror(err);
    return err == ENOENT ? notFound(msg) : failedPrecondition(msg);
  }
  RegularFile file(fd, 0, path, what); // closes fd on every return below
  struct stat st {};
  if (::fstat(fd, &st) != 0)
    return failedPrecondition(where + "cannot stat the " + what + ": " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return invalidArgument(where + "not a regular file (the " + what +
                           " must be a file, not a FIFO, a device or a directory)");
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0)
    return failedPrecondition(where + "cannot set up the " + what + ": " + std::strerror(errno));
  file.size_ = uint64_t(st.st_size);
  return file;
}

RegularFile::~RegularFile() {
  if (fd_ >= 0)
    ::close(fd_);
}

Status RegularFile::read(void *data, size_t n) const {
  auto *out = static_cast<char *>(data);
  size_t done = 0;
  while (done < n) {
    const ssize_t got = ::read(fd_, out + done, n - done);
    if (got < 0 && errno == EINTR)
      continue;
    if (got < 0)
      return failedPrecondition(path_ + ": cannot read the " + what_ + ": " +
                                std::strerror(errno));
    if (got == 0)
      return dataLoss(path_ + ": the " + what_ + " shrank while read (" +
                      std::to_string(done) + " of " + std::to_string(n) + " bytes)");
    done += size_t(got);
  }
  return Status::ok();
}

Expected<std::string> readRegularFile(const std::string &path, const std::string &what,
                                      uint64_t maxBytes) {
  Expected<RegularFile> file = RegularFile::open(path, what);
  if (!file)
    return file.status();
  if (file->size() > maxBytes)
    return invalidArgument(path + ": the " + what + " holds " + std::to_string(file->size()) +
                           " bytes, more than the " + std::to_string(maxBytes) + " accepted");
  std::string text(size_t(file->size()), '\0');
  if (Status s = file->read(text.data(), text.size()); !s)
    return s;
  return text;
}

} // namespace dsc::runtime
