//===- SafetensorsFuzzer.cpp - libFuzzer harness: the safetensors reader --===//
//
// Input: the raw bytes of a safetensors file (8-byte length, JSON header,
// data), written to one temporary path per process ($TMPDIR or /tmp), opened
// and unlinked again for each input, because SafetensorsFile::open reads a
// path (open + mmap).
// API: dsc::runtime::SafetensorsFile::open (runtime/lib/Safetensors.cpp), then
// what a checkpoint loader does with an accepted file: tensors(), find(),
// numElements(), metadata(), every tensor byte read.
// Finding: a crash, a sanitizer report (ASan, UBSan, leak), a hang or a huge
// allocation on any input; or an accepted file that breaks the documented
// rules (bytes outside the data section, size != numElements * dtype size,
// overlapping tensors, find() not finding a listed tensor).
//===----------------------------------------------------------------------===//
#include "FuzzCheck.h"
#include "dsc/runtime/Safetensors.h"

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include <fcntl.h>
#include <unistd.h>

namespace {

using dsc::runtime::SafetensorsFile;

/// One path per process, written and removed again by every input (libFuzzer
/// leaves with _Exit, so an atexit cleanup would not run).
const std::string &tempPath() {
  static const std::string path = [] {
    const char *dir = std::getenv("TMPDIR");
    return std::string(dir && *dir ? dir : "/tmp") + "/dsc-fuzz-safetensors-" +
           std::to_string(::getpid()) + ".safetensors";
  }();
  return path;
}

void check(bool ok, const char *what) {
  dsc::fuzz::check(ok, "dsc-fuzz-safetensors: accepted file breaks a rule", what);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const std::string &path = tempPath();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    std::perror(path.c_str());
    std::abort();
  }
  for (size_t done = 0; done < size;) {
    const ssize_t n = ::write(fd, data + done, size - done);
    if (n <= 0) {
      std::perror(path.c_str());
      std::abort();
    }
    done += size_t(n);
  }
  ::close(fd);

  auto file = SafetensorsFile::open(path);
  ::unlink(path.c_str()); // the mapping outlives the name
  if (!file) {
    check(!file.status().message().empty(), "an error without a message");
    return 0;
  }
  uint64_t headerLen = 0;
  for (int i = 7; i >= 0; --i)
    headerLen = (headerLen << 8) | data[i];
  const uint64_t dataSize = size - 8 - headerLen;
  check(file->fileSize() == size, "fileSize() is not the file's size");
  const dsc::runtime::TensorView *previous = nullptr;
  unsigned sum = 0;
  for (const dsc::runtime::TensorView &t : file->tensors()) {
    check(t.dataBegin <= t.dataEnd && t.dataEnd <= dataSize, "bytes outside the data section");
    check(t.bytes.size() == t.dataEnd - t.dataBegin, "span size != data_offsets");
    check(uint64_t(t.numElements()) * dsc::runtime::dtypeSize(t.dtype) == t.bytes.size(),
          "numElements * dtype size != bytes");
    if (previous && t.bytes.size() && previous->bytes.size())
      check(previous->dataEnd <= t.dataBegin, "overlapping tensors");
    if (t.bytes.size())
      previous = &t;
    check(file->find(t.name) == &t, "find() misses a listed tensor");
    for (std::byte b : t.bytes)
      sum += std::to_integer<unsigned>(b);
  }
  for (const auto &[key, value] : file->metadata())
    sum += unsigned(key.size() + value.size());
  volatile unsigned sink = sum;
  (void)sink;
  return 0;
}
