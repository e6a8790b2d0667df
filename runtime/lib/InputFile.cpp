//===- InputFile.cpp - Opening and reading input files that are regular files ===//
#include "dsc/runtime/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsc::runtime {

Expected<int> openRegularFile(const std::string &path, const std::string &what) {
  const std::string where = path + ": ";
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    const int err = errno;
    const std::string msg = where + "cannot open " + what + ": " + std::strerror(err);
    return err == ENOENT ? notFound(msg) : failedPrecondition(msg);
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    return failedPrecondition(where + "cannot stat the " + what + ": " + std::strerror(err));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalidArgument(where + "not a regular file (the " + what +
                           " must be a file, not a FIFO, a device or a directory)");
  }
  const int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    const int err = errno;
    ::close(fd);
    return failedPrecondition(where + "cannot set up the " + what + ": " + std::strerror(err));
  }
  return fd;
}

Expected<std::string> readRegularFile(const std::string &path, const std::string &what,
                                      uint64_t maxBytes) {
  Expected<int> fd = openRegularFile(path, what);
  if (!fd)
    return fd.status();
  struct stat st {};
  if (::fstat(*fd, &st) != 0) {
    ::close(*fd);
    return failedPrecondition(path + ": cannot stat the " + what);
  }
  const uint64_t size = uint64_t(st.st_size);
  if (size > maxBytes) {
    ::close(*fd);
    return invalidArgument(path + ": the " + what + " holds " + std::to_string(size) +
                           " bytes, more than the " + std::to_string(maxBytes) + " accepted");
  }
  std::string text(size_t(size), '\0');
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(*fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : 0;
      ::close(*fd);
      return failedPrecondition(path + ": cannot read the " + what +
                                (err ? std::string(": ") + std::strerror(err)
                                     : std::string(": the file shrank while read")));
    }
    done += size_t(n);
  }
  ::close(*fd);
  return text;
}

} // namespace dsc::runtime
