//===- PrefixCache.cpp - Content-addressed prompt blocks for KV reuse -------===//
//
// See PrefixCache.h. Blocks live in one hash map keyed by their chain hash;
// a second map finds a block by its page (release). Eviction scans for the
// least recently used unreferenced leaf (O(blocks) per evicted block: an
// LRU list of evictable leaves is the next step when pools grow large).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/PrefixCache.h"

#include <algorithm>
#include <string>

namespace dsc::runtime {
namespace {

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  return h * 0x100000001b3ull; // FNV-1a's 64-bit prime
}

uint64_t finalise(uint64_t h) { // splitmix64's finaliser: every bit moves every bit
  h ^= h >> 30;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 27;
  h *= 0x94d049bb133111ebull;
  h ^= h >> 31;
  return h ? h : 1; // 0 means "no parent"
}

} // namespace

std::vector<uint64_t> prefixBlockHashes(std::span<const int32_t> ids, int64_t blockTokens) {
  std::vector<uint64_t> out;
  if (blockTokens <= 0)
    return out;
  const size_t blocks = ids.size() / size_t(blockTokens);
  uint64_t prev = 0;
  for (size_t b = 0; b < blocks; ++b) {
    uint64_t h = mix(0xcbf29ce484222325ull, prev); // FNV-1a's offset basis
    for (size_t i = 0; i < size_t(blockTokens); ++i)
      h = mix(h, uint64_t(uint32_t(ids[b * size_t(blockTokens) + i])));
    prev = finalise(h);
    out.push_back(prev);
  }
  return out;
}

PrefixCache::PrefixCache(int64_t blockTokens) : blockTokens_(blockTokens > 0 ? blockTokens : 1) {}

PrefixCache::Block *PrefixCache::find(uint64_t hash, uint64_t parent,
                                      std::span<const int32_t> ids) {
  auto it = blocks_.find(hash);
  if (it == blocks_.end() || it->second.parent != parent ||
      !std::equal(ids.begin(), ids.end(), it->second.tokens.begin(), it->second.tokens.end()))
    return nullptr;
  return &it->second;
}

PrefixCache::Hit PrefixCache::acquire(std::span<const int32_t> ids) {
  const std::vector<uint64_t> hashes = prefixBlockHashes(ids, blockTokens_);
  std::lock_guard<std::mutex> lock(mutex_);
  Hit hit;
  uint64_t parent = 0;
  const uint64_t now = ++clock_;
  for (size_t b = 0; b < hashes.size(); ++b) {
    Block *block = find(hashes[b], parent, ids.subspan(b * size_t(blockTokens_), size_t(blockTokens_)));
    if (!block)
      break;
    ++block->refs;
    block->lastUse = now;
    hit.pages.push_back(block->page);
    parent = hashes[b];
  }
  hit.tokens = int64_t(hit.pages.size()) * blockTokens_;
  return hit;
}

Status PrefixCache::insert(std::span<const int32_t> ids, int64_t fromBlock,
                           std::span<const int64_t> pages, std::vector<int64_t> *added) {
  const std::vector<uint64_t> hashes = prefixBlockHashes(ids, blockTokens_);
  if (fromBlock < 0 || size_t(fromBlock) > hashes.size())
    return invalidArgument("prefix cache insert: block " + std::to_string(fromBlock) + " of " +
                           std::to_string(hashes.size()) + " whole blocks");
  if (pages.size() < hashes.size() - size_t(fromBlock))
    return invalidArgument("prefix cache insert: " + std::to_string(pages.size()) +
                           " pages for " + std::to_string(hashes.size() - size_t(fromBlock)) +
                           " blocks");
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> mine(pages.begin(), pages.begin() + std::ptrdiff_t(hashes.size() - size_t(fromBlock)));
  std::sort(mine.begin(), mine.end());
  for (size_t i = 0; i < mine.size(); ++i)
    if (byPage_.count(mine[i]) || (i > 0 && mine[i] == mine[i - 1]))
      return invalidArgument("prefix cache insert: page " + std::to_string(mine[i]) +
                             (byPage_.count(mine[i]) ? " is already in the cache"
                                                     : " is given twice"));
  uint64_t parent = 0;
  for (size_t b = 0; b < size_t(fromBlock); ++b) {
    if (!find(hashes[b], parent, ids.subspan(b * size_t(blockTokens_), size_t(blockTokens_))))
      return invalidArgument("prefix cache insert: block " + std::to_string(b) +
                             " before the inserted ones is not cached");
    parent = hashes[b];
  }
  const uint64_t now = ++clock_;
  for (size_t b = size_t(fromBlock); b < hashes.size(); ++b) {
    if (blocks_.count(hashes[b]))
      break; // cached meanwhile (or a collision): the rest stays the caller's
    Block block;
    block.parent = parent;
    auto first = ids.begin() + std::ptrdiff_t(b * size_t(blockTokens_));
    block.tokens.assign(first, first + blockTokens_);
    block.page = pages[b - size_t(fromBlock)];
    block.refs = 1;
    block.lastUse = now;
    if (parent)
      blocks_.at(parent).children.push_back(hashes[b]);
    byPage_[block.page] = hashes[b];
    if (added)
      added->push_back(block.page);
    blocks_.emplace(hashes[b], std::move(block));
    parent = hashes[b];
  }
  return Status::ok();
}

Status PrefixCache::release(std::span<const int64_t> pages) {
  std::lock_guard<std::mutex> lock(mutex_);
  // Every page checked (repeats against its references) before any changes:
  // a failed release changes nothing.
  std::unordered_map<uint64_t, int64_t> drops;
  for (int64_t page : pages) {
    auto it = byPage_.find(page);
    if (it == byPage_.end())
      return invalidArgument("prefix cache release: page " + std::to_string(page) +
                             " is not in the cache");
    if (++drops[it->second] > blocks_.at(it->second).refs)
      return invalidArgument("prefix cache release: page " + std::to_string(page) +
                             " has no reference");
  }
  for (const auto &[hash, n] : drops)
    blocks_.at(hash).refs -= n;
  return Status::ok();
}

std::vector<int64_t> PrefixCache::evict(int64_t pages) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<int64_t> freed;
  while (int64_t(freed.size()) < pages) {
    // The least recently used unreferenced leaf: a block goes only after
    // every block below it, so nothing held (a holder holds the chain) and
    // no shared prefix goes before its tails.
    const Block *best = nullptr;
    uint64_t bestHash = 0;
    for (const auto &[hash, block] : blocks_)
      if (block.refs == 0 && block.children.empty() &&
          (!best || block.lastUse < best->lastUse ||
           (block.lastUse == best->lastUse && hash < bestHash))) {
        best = &block;
        bestHash = hash;
      }
    if (!best)
      break;
    freed.push_back(best->page);
    byPage_.erase(best->page);
    if (best->parent)
      std::erase(blocks_.at(best->parent).children, bestHash);
    blocks_.erase(bestHash);
  }
  return freed;
}

int64_t PrefixCache::cachedBlocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int64_t(blocks_.size());
}

int64_t PrefixCache::referencedBlocks() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return int64_t(std::count_if(blocks_.begin(), blocks_.end(),
                               [](const auto &kv) { return kv.second.refs > 0; }));
}

} // namespace dsc::runtime
