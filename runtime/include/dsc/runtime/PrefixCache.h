//===- PrefixCache.h - Content-addressed prompt blocks for KV reuse ---------===//
//
// What: the index of the serving runtime's prefix cache (issue 13): a
// prompt's tokens cut into blocks of `blockTokens` (the KV page size), each
// block named by a hash chain over every token up to its end, mapped to the
// page (an opaque id of the caller's KV pool) that holds its global KV.
// acquire() finds the longest cached prefix in whole blocks and takes a
// reference on each of its pages; insert() adds a prompt's further blocks
// with the pages the caller filled; release() drops references; evict()
// frees unreferenced pages, least recently used first.
// Why: agentic workloads resend the same long prefix turn after turn; a hit
// lets prefill start at position H > 0 on pages that already hold the KV.
// Invariants: a block is served only with its whole chain (acquire stops at
// the first block not cached; only leaves are evicted, so a block goes after
// everything below it); a hash match is checked against the stored tokens
// and the parent block before a page is served, so a collision is a miss,
// never a wrong page; a referenced page is never evicted (references are
// taken along the chain, so an unreferenced leaf has no holder below it); a
// failed call changes nothing; every method is safe to call from many
// threads.
// Not here yet: the pages themselves (paged KV), the host tier, the SWA
// snapshots with their TTL, the engine's use (docs/runtime.md).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_PREFIXCACHE_H
#define DSC_RUNTIME_PREFIXCACHE_H

#include "dsc/runtime/Status.h"

#include <cstdint>
#include <mutex>
#include <span>
#include <unordered_map>
#include <vector>

namespace dsc::runtime {

/// The chain hashes of ids' whole blocks: hash[i] names tokens [0, (i + 1)
/// * blockTokens) (FNV-1a-style mixing of the previous hash and the block's
/// ids, then a 64-bit finaliser), so two prompts share hash[i] exactly when
/// (up to collisions) they share those tokens. blockTokens > 0.
std::vector<uint64_t> prefixBlockHashes(std::span<const int32_t> ids, int64_t blockTokens);

class PrefixCache {
public:
  /// blockTokens: tokens per block (the KV page's); the caller owns the pages.
  explicit PrefixCache(int64_t blockTokens);

  int64_t blockTokens() const { return blockTokens_; }

  /// The longest cached prefix of ids in whole blocks: tokens = blocks *
  /// blockTokens, pages in block order, each with one more reference
  /// (give them back with release).
  struct Hit {
    int64_t tokens = 0;
    std::vector<int64_t> pages;
  };
  Hit acquire(std::span<const int32_t> ids);

  /// Adds ids' blocks from `fromBlock` on (the blocks before are cached and
  /// held by the caller: acquire's hit), block fromBlock + i in pages[i],
  /// each with one reference for the caller. InvalidArgument when a block
  /// before fromBlock is not cached, a page is already in the cache, or
  /// there are fewer pages than blocks; a block that is already cached (an
  /// equal prompt inserted meanwhile) or collides is skipped, and so is
  /// everything after it: its page stays the caller's (not in `added`).
  Status insert(std::span<const int32_t> ids, int64_t fromBlock, std::span<const int64_t> pages,
                std::vector<int64_t> *added = nullptr);

  /// Drops one reference of each page (a page may repeat). A page the cache
  /// does not hold, or releases beyond its references, is an
  /// InvalidArgument naming the page, and then no reference is dropped.
  Status release(std::span<const int64_t> pages);

  /// Evicts unreferenced leaf blocks, least recently used first (a block
  /// becomes a leaf when the blocks below it are gone: a shared prefix
  /// outlives its tails), until `pages` pages are freed or none is left;
  /// returns the freed pages (the caller's again).
  std::vector<int64_t> evict(int64_t pages);

  /// Blocks cached, and of them the referenced ones.
  int64_t cachedBlocks() const;
  int64_t referencedBlocks() const;

private:
  struct Block {
    uint64_t parent = 0;         ///< the previous block's hash (0 for block 0)
    std::vector<int32_t> tokens; ///< the block's ids (the collision check)
    int64_t page = -1;
    int64_t refs = 0;
    uint64_t lastUse = 0;
    std::vector<uint64_t> children;
  };
  /// The cached block named `hash` if it really is block `ids` after
  /// `parent`, else null.
  Block *find(uint64_t hash, uint64_t parent, std::span<const int32_t> ids);

  const int64_t blockTokens_;
  mutable std::mutex mutex_;
  std::unordered_map<uint64_t, Block> blocks_;
  std::unordered_map<int64_t, uint64_t> byPage_;
  uint64_t clock_ = 0;
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_PREFIXCACHE_H
