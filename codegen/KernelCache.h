//===- KernelCache.h - On-disk cache of compiled kernels -------------------===//
//
// Internal to dsc_codegen. The key is the SHA-256 of length-prefixed fields
// (KeyBuilder), so no two different field lists can collide by
// concatenation. An entry is the directory <cacheDir>/<key>/ holding
// kernel.cubin, kernel.ptx, kernel.log and manifest (size + SHA-256 of each
// of the three); an entry whose files are missing or do not match the
// manifest is treated as absent. Entries are published by writing a
// temporary directory, fsyncing it, then renaming it into place: readers see
// a complete entry or none; when two writers race, the first rename wins and
// the loser discards its copy (same key, same content).
//===----------------------------------------------------------------------===//
#ifndef DSC_CODEGEN_KERNELCACHE_H
#define DSC_CODEGEN_KERNELCACHE_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dsc::codegen::cache {

/// SHA-256 of `data`, as 64 lowercase hex digits.
std::string sha256Hex(std::string_view data);

/// Accumulates key fields as <decimal length>:<bytes>; digest() hashes them.
class KeyBuilder {
public:
  KeyBuilder &add(std::string_view field);
  std::string digest() const { return sha256Hex(buffer_); }

private:
  std::string buffer_;
};

struct Entry {
  std::vector<uint8_t> cubin;
  std::string ptx;
  std::string log;
};

/// $DSC_KERNEL_CACHE, else $XDG_CACHE_HOME/dsc/kernels, else
/// $HOME/.cache/dsc/kernels ("" if none can be formed).
std::string defaultCacheDir();

/// The verified entry for `key`, or nullopt (absent, partial or corrupted).
std::optional<Entry> load(const std::string &cacheDir, const std::string &key);

/// Publishes `entry` under `key`. A corrupted entry already there is
/// replaced. Returns false when the cache is unusable (not an error for the
/// caller: the kernel is compiled anyway).
bool publish(const std::string &cacheDir, const std::string &key, const Entry &entry);

} // namespace dsc::codegen::cache

#endif // DSC_CODEGEN_KERNELCACHE_H
