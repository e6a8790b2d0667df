//===- Npy.cpp - NumPy .npy files ------------------------------------------===//
#include "dsc/runtime/Npy.h"

#include "dsc/runtime/InputFile.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsc::runtime {
namespace {

const char *descrOf(DType dtype) {
  switch (dtype) {
  case DType::F32: return "<f4";
  case DType::F64: return "<f8";
  case DType::I32: return "<i4";
  case DType::I64: return "<i8";
  case DType::U8: return "|u1";
  case DType::Bool: return "|b1";
  case DType::I8: return "|i1";
  default: return nullptr;
  }
}

std::optional<DType> dtypeOfDescr(const std::string &descr) {
  if (descr == "<f4") return DType::F32;
  if (descr == "<f8") return DType::F64;
  if (descr == "<i4") return DType::I32;
  if (descr == "<i8") return DType::I64;
  if (descr == "|u1") return DType::U8;
  if (descr == "|b1") return DType::Bool;
  if (descr == "|i1") return DType::I8;
  return std::nullopt;
}

} // namespace

namespace {

/// Maps an errno of open/read/write to a status code: a missing file is
/// NotFound, anything else (permissions, a directory, I/O) FailedPrecondition.
Status ioError(int err, const std::string &message) {
  std::string text = message + ": " + std::strerror(err);
  if (err == ENOENT || err == ENOTDIR)
    return notFound(text);
  return failedPrecondition(text);
}

struct FdCloser {
  int fd = -1;
  ~FdCloser() {
    if (fd >= 0)
      ::close(fd);
  }
};

/// Moves `size` bytes with a read(2)/write(2)-like call, retrying on EINTR
/// and short transfers; false on an error or end of file.
template <typename Data, typename Op> bool transferAll(int fd, Data *data, size_t size, Op op) {
  while (size) {
    ssize_t n = op(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    data += n;
    size -= size_t(n);
  }
  return true;
}

bool writeAll(int fd, const char *data, size_t size) {
  return transferAll(fd, data, size, [](int f, const char *d, size_t n) { return ::write(f, d, n); });
}

bool readAll(int fd, char *data, size_t size) {
  return transferAll(fd, data, size, [](int f, char *d, size_t n) { return ::read(f, d, n); });
}

} // namespace

Status writeNpy(const std::string &path, const HostTensor &tensor) {
  const char *descr = descrOf(tensor.dtype());
  if (!descr)
    return invalidArgument(path + ": cannot write dtype " + dtypeName(tensor.dtype()) + " as .npy");
  if (!tensor.hasStorage())
    return failedPrecondition(path + ": the tensor has no host storage");
  std::ostringstream dict;
  dict << "{'descr': '" << descr << "', 'fortran_order': False, 'shape': (";
  for (size_t i = 0; i < tensor.shape().size(); ++i)
    dict << tensor.shape()[i] << (tensor.shape().size() == 1 ? "," : i + 1 < tensor.shape().size() ? ", " : "");
  dict << "), }";
  std::string header = dict.str();
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header.push_back('\n');
  if (header.size() > 0xffff)
    return invalidArgument(path + ": the .npy header of " + std::to_string(header.size()) +
                           " bytes exceeds the version 1.0 limit of 65535");

  // A unique temporary file next to the target, so rename is atomic and two
  // writers never share a temporary.
  std::string tmp = path + ".XXXXXX";
  FdCloser file;
  file.fd = ::mkstemp(tmp.data());
  if (file.fd < 0)
    return ioError(errno, path + ": cannot create a temporary file");
  auto failed = [&](int err, const std::string &what) {
    if (file.fd >= 0)
      ::close(file.fd);
    file.fd = -1;
    ::unlink(tmp.c_str());
    return ioError(err, path + ": " + what);
  };
  if (::fchmod(file.fd, 0644) != 0) // mkstemp creates 0600; .npy files are shared
    return failed(errno, "cannot set permissions");
  uint16_t len = uint16_t(header.size());
  char prefix[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', '\x01', '\x00', char(len & 0xff),
                     char(len >> 8)};
  if (!writeAll(file.fd, prefix, sizeof(prefix)) ||
      !writeAll(file.fd, header.data(), header.size()) ||
      !writeAll(file.fd, reinterpret_cast<const char *>(tensor.bytes()), tensor.byteSize()))
    return failed(errno ? errno : EIO, "write failed");
  if (::fsync(file.fd) != 0)
    return failed(errno, "flush failed");
  int fd = file.fd;
  file.fd = -1;
  if (::close(fd) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ioError(err, path + ": close failed");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    return ioError(err, path + ": cannot rename the temporary file into place");
  }
  return Status::ok();
}

Expected<HostTensor> readNpy(const std::string &path) {
  constexpr uint32_t kMaxHeader = 1u << 20;
  Expected<RegularFile> file = RegularFile::open(path, ".npy file"); // never waits on a FIFO
  if (!file) // not a regular file: unreadable, FailedPrecondition (Npy.h)
    return file.status().code() == StatusCode::InvalidArgument
               ? failedPrecondition(file.status().message())
               : file.status();
  const uint64_t fileSize = file->size();
  char magic[8];
  if (!readAll(file->fd(), magic, 8) || std::string(magic, 6) != "\x93NUMPY")
    return dataLoss(path + ": not a .npy file");
  if (magic[6] < 1 || magic[6] > 3)
    return dataLoss(path + ": unsupported .npy version " + std::to_string(int(magic[6])) +
                    ", expected 1, 2 or 3");
  uint32_t headerLen = 0;
  uint64_t prefixLen = 0;
  if (magic[6] == 1) {
    unsigned char b[2];
    if (!readAll(file->fd(), reinterpret_cast<char *>(b), 2))
      return dataLoss(path + ": truncated header length");
    headerLen = b[0] | (b[1] << 8);
    prefixLen = 10;
  } else {
    unsigned char b[4];
    if (!readAll(file->fd(), reinterpret_cast<char *>(b), 4))
      return dataLoss(path + ": truncated header length");
    headerLen = b[0] | (b[1] << 8) | (b[2] << 16) | (uint32_t(b[3]) << 24);
    prefixLen = 12;
  }
  if (headerLen > kMaxHeader)
    return dataLoss(path + ": header of " + std::to_string(headerLen) +
                    " bytes exceeds the limit of " + std::to_string(kMaxHeader));
  if (prefixLen + headerLen > fileSize)
    return dataLoss(path + ": truncated header (" + std::to_string(headerLen) + " bytes declared, " +
                    std::to_string(fileSize - prefixLen) + " in the file)");
  std::string header(headerLen, '\0');
  if (!readAll(file->fd(), header.data(), headerLen))
    return dataLoss(path + ": truncated header");
  auto field = [&](const std::string &key) -> std::string {
    size_t k = header.find("'" + key + "'");
    if (k == std::string::npos)
      return "";
    size_t colon = header.find(':', k);
    return header.substr(colon + 1);
  };
  std::string descrField = field("descr");
  size_t q1 = descrField.find('\''), q2 = descrField.find('\'', q1 + 1);
  if (q1 == std::string::npos || q2 == std::string::npos)
    return dataLoss(path + ": header has no descr");
  std::string descr = descrField.substr(q1 + 1, q2 - q1 - 1);
  std::optional<DType> dtype = dtypeOfDescr(descr);
  if (!dtype)
    return invalidArgument(path + ": unsupported dtype '" + descr + "'");
  if (field("fortran_order").find("True") != std::string::npos &&
      field("fortran_order").find("True") < field("fortran_order").find(','))
    return invalidArgument(path + ": Fortran-order arrays are not supported");
  std::string shapeField = field("shape");
  size_t open = shapeField.find('('), close = shapeField.find(')');
  if (open == std::string::npos || close == std::string::npos)
    return dataLoss(path + ": header has no shape");
  std::vector<int64_t> shape;
  std::stringstream dims(shapeField.substr(open + 1, close - open - 1));
  std::string item;
  while (std::getline(dims, item, ',')) {
    if (item.find_first_not_of(" ") == std::string::npos)
      continue;
    char *end = nullptr;
    errno = 0;
    long long d = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || d < 0 || errno == ERANGE)
      return dataLoss(path + ": bad shape entry '" + item + "'");
    shape.push_back(d);
  }
  // Checked element count x size against the bytes left, before allocating.
  std::optional<uint64_t> bytes = HostTensor::checkedByteSize(*dtype, shape);
  uint64_t left = fileSize - prefixLen - headerLen;
  if (!bytes)
    return dataLoss(path + ": shape " + HostTensor::shapeString(shape) + " overflows");
  if (*bytes > left)
    return dataLoss(path + ": shape " + HostTensor::shapeString(shape) + " of " + descr + " needs " +
                    std::to_string(*bytes) + " data bytes, the file has " + std::to_string(left));
  HostTensor tensor;
  if (Status s = tensor.resetChecked(*dtype, shape); !s)
    return s.withContext(path + ": ");
  if (!readAll(file->fd(), reinterpret_cast<char *>(tensor.bytes()), tensor.byteSize()))
    return dataLoss(path + ": truncated data (expected " + std::to_string(tensor.byteSize()) +
                    " bytes)");
  return tensor;
}

} // namespace dsc::runtime
