//===- KernelCache.cpp - On-disk cache of compiled kernels -----------------===//
#include "codegen/KernelCache.h"

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <random>
#include <sstream>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsc::codegen::cache {

//===--------------------------------------------------------------------===//
// SHA-256 (FIPS 180-4)
//===--------------------------------------------------------------------===//
namespace {

constexpr uint32_t kK[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
    0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
    0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
    0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
    0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
    0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
    0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
    0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
    0xc67178f2};

constexpr uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

void compress(uint32_t h[8], const unsigned char *block) {
  uint32_t w[64];
  for (int i = 0; i < 16; ++i)
    w[i] = uint32_t(block[4 * i]) << 24 | uint32_t(block[4 * i + 1]) << 16 |
           uint32_t(block[4 * i + 2]) << 8 | uint32_t(block[4 * i + 3]);
  for (int i = 16; i < 64; ++i) {
    const uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
    const uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
    w[i] = w[i - 16] + s0 + w[i - 7] + s1;
  }
  uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int i = 0; i < 64; ++i) {
    const uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) +
                        kK[i] + w[i];
    const uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
    hh = g;
    g = f;
    f = e;
    e = d + t1;
    d = c;
    c = b;
    b = a;
    a = t1 + t2;
  }
  h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += hh;
}

} // namespace

std::string sha256Hex(std::string_view data) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  const auto *p = reinterpret_cast<const unsigned char *>(data.data());
  size_t n = data.size();
  size_t full = n / 64;
  for (size_t i = 0; i < full; ++i)
    compress(h, p + 64 * i);
  // Padding: 0x80, zeros, 64-bit big-endian bit length.
  unsigned char tail[128] = {};
  const size_t rest = n - 64 * full;
  if (rest != 0) // an empty view may have no data (memcpy from null is UB, size 0 or not)
    std::memcpy(tail, p + 64 * full, rest);
  tail[rest] = 0x80;
  const size_t tailLen = rest + 9 <= 64 ? 64 : 128;
  const uint64_t bits = uint64_t(n) * 8;
  for (int i = 0; i < 8; ++i)
    tail[tailLen - 1 - i] = static_cast<unsigned char>(bits >> (8 * i));
  for (size_t off = 0; off < tailLen; off += 64)
    compress(h, tail + off);
  static const char kHex[] = "0123456789abcdef";
  std::string out(64, '0');
  for (int i = 0; i < 32; ++i) {
    const unsigned byte = (h[i / 4] >> (24 - 8 * (i % 4))) & 0xff;
    out[2 * i] = kHex[byte >> 4];
    out[2 * i + 1] = kHex[byte & 15];
  }
  return out;
}

KeyBuilder &KeyBuilder::add(std::string_view field) {
  buffer_ += std::to_string(field.size());
  buffer_ += ':';
  buffer_.append(field);
  return *this;
}

//===--------------------------------------------------------------------===//
// Files
//===--------------------------------------------------------------------===//
namespace {

namespace fs = std::filesystem;

constexpr const char *kCubin = "kernel.cubin";
constexpr const char *kPtx = "kernel.ptx";
constexpr const char *kLog = "kernel.log";
constexpr const char *kManifest = "manifest";

std::optional<std::string> readFile(const fs::path &path) {
  FILE *f = std::fopen(path.c_str(), "rb");
  if (!f)
    return std::nullopt;
  std::string data;
  char buf[65536];
  size_t got;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0)
    data.append(buf, got);
  const bool bad = std::ferror(f);
  std::fclose(f);
  if (bad)
    return std::nullopt;
  return data;
}

/// Writes and fsyncs one file.
bool writeFile(const fs::path &path, std::string_view data) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return false;
  const char *p = data.data();
  size_t left = data.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      ::close(fd);
      return false;
    }
    p += n;
    left -= size_t(n);
  }
  const bool ok = ::fsync(fd) == 0;
  return ::close(fd) == 0 && ok;
}

void fsyncDir(const fs::path &dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

std::string manifestLine(const char *name, std::string_view data) {
  return std::string(name) + " " + std::to_string(data.size()) + " " + sha256Hex(data) + "\n";
}

std::string manifestFor(std::string_view cubin, std::string_view ptx, std::string_view log) {
  return "dsc-kernel-cache 1\n" + manifestLine(kCubin, cubin) + manifestLine(kPtx, ptx) +
         manifestLine(kLog, log);
}

std::string uniqueSuffix() {
  std::random_device rd;
  std::ostringstream os;
  os << ::getpid() << "-" << std::hex << rd() << rd();
  return os.str();
}

std::string_view asView(const std::vector<uint8_t> &bytes) {
  return {reinterpret_cast<const char *>(bytes.data()), bytes.size()};
}

} // namespace

std::string defaultCacheDir() {
  if (const char *d = std::getenv("DSC_KERNEL_CACHE"); d && *d)
    return d;
  if (const char *x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return (fs::path(x) / "dsc" / "kernels").string();
  if (const char *home = std::getenv("HOME"); home && *home)
    return (fs::path(home) / ".cache" / "dsc" / "kernels").string();
  return "";
}

std::optional<Entry> load(const std::string &cacheDir, const std::string &key) {
  if (cacheDir.empty())
    return std::nullopt;
  const fs::path dir = fs::path(cacheDir) / key;
  auto manifest = readFile(dir / kManifest);
  auto cubin = readFile(dir / kCubin);
  auto ptx = readFile(dir / kPtx);
  auto log = readFile(dir / kLog);
  if (!manifest || !cubin || !ptx || !log)
    return std::nullopt;
  if (*manifest != manifestFor(*cubin, *ptx, *log))
    return std::nullopt;
  Entry e;
  e.cubin.assign(cubin->begin(), cubin->end());
  e.ptx = std::move(*ptx);
  e.log = std::move(*log);
  return e;
}

bool publish(const std::string &cacheDir, const std::string &key, const Entry &entry) {
  if (cacheDir.empty())
    return false;
  std::error_code ec;
  const fs::path root(cacheDir);
  fs::create_directories(root, ec);
  if (ec)
    return false;
  const fs::path tmp = root / (".tmp-" + uniqueSuffix());
  if (!fs::create_directory(tmp, ec) || ec)
    return false;
  const std::string_view cubin = asView(entry.cubin);
  const bool written = writeFile(tmp / kCubin, cubin) && writeFile(tmp / kPtx, entry.ptx) &&
                       writeFile(tmp / kLog, entry.log) &&
                       writeFile(tmp / kManifest, manifestFor(cubin, entry.ptx, entry.log));
  if (!written) {
    fs::remove_all(tmp, ec);
    return false;
  }
  fsyncDir(tmp);
  const fs::path final = root / key;
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (::rename(tmp.c_str(), final.c_str()) == 0) {
      fsyncDir(root);
      return true;
    }
    if (errno != EEXIST && errno != ENOTEMPTY)
      break;
    // Someone published first: keep theirs if it is complete...
    if (load(cacheDir, key))
      break;
    // ...else move the broken entry aside (atomically) and retry once.
    const fs::path trash = root / (".trash-" + uniqueSuffix());
    if (::rename(final.c_str(), trash.c_str()) == 0)
      fs::remove_all(trash, ec);
  }
  fs::remove_all(tmp, ec);
  return load(cacheDir, key).has_value();
}

} // namespace dsc::codegen::cache
