//===- SnapshotCache.cpp - Prompt-prefix snapshots (SnapshotCache.h) ------===//
#include "dsc/runtime/SnapshotCache.h"

#include "dsc/runtime/PrefixCache.h"

#include <algorithm>

namespace dsc::runtime {

SnapshotCache::SnapshotCache(int64_t blockTokens, uint64_t maxBytes)
    : blockTokens_(blockTokens > 0 ? blockTokens : 1), maxBytes_(maxBytes) {}

int64_t SnapshotCache::savePoint(int64_t tokens, int64_t tail) const {
  const int64_t room = tokens - std::max<int64_t>(tail, 0);
  return room > 0 ? room / blockTokens_ * blockTokens_ : 0;
}

std::shared_ptr<const SessionSnapshot> SnapshotCache::lookup(std::span<const int32_t> ids,
                                                             int64_t tail) {
  const std::vector<uint64_t> hashes = prefixBlockHashes(ids, blockTokens_);
  const int64_t blocks = savePoint(int64_t(ids.size()), tail) / blockTokens_;
  std::lock_guard<std::mutex> lock(mutex_);
  ++stats_.lookups;
  for (int64_t b = std::min<int64_t>(blocks, int64_t(hashes.size())); b >= 1; --b) {
    auto it = byKey_.find(hashes[size_t(b - 1)]);
    if (it == byKey_.end())
      continue;
    const std::vector<int32_t> &held = it->second->snapshot->ids;
    if (int64_t(held.size()) != b * blockTokens_ ||
        !std::equal(held.begin(), held.end(), ids.begin()))
      continue; // a hash collision: a miss, never a wrong snapshot
    lru_.splice(lru_.begin(), lru_, it->second);
    ++stats_.hits;
    stats_.hitTokens += int64_t(held.size());
    return it->second->snapshot;
  }
  return nullptr;
}

Status SnapshotCache::insert(SessionSnapshot snapshot) {
  const int64_t n = int64_t(snapshot.ids.size());
  if (n == 0 || n % blockTokens_ != 0)
    return invalidArgument("SnapshotCache::insert: a prefix of " + std::to_string(n) +
                           " tokens is not a positive multiple of the cache's " +
                           std::to_string(blockTokens_) + "-token blocks");
  const uint64_t bytes = snapshot.bytes();
  const uint64_t key = prefixBlockHashes(snapshot.ids, blockTokens_).back();
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > maxBytes_ || byKey_.count(key))
    return Status::ok(); // too large for the budget, or a prefix (or collision) already held
  while (!lru_.empty() && stats_.bytes + bytes > maxBytes_) {
    const Entry &victim = lru_.back();
    stats_.bytes -= victim.snapshot->bytes();
    byKey_.erase(victim.key);
    lru_.pop_back();
    ++stats_.evictions;
  }
  lru_.push_front(Entry{key, std::make_shared<const SessionSnapshot>(std::move(snapshot))});
  byKey_[key] = lru_.begin();
  stats_.bytes += bytes;
  return Status::ok();
}

SnapshotCache::Stats SnapshotCache::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  Stats s = stats_;
  s.entries = int64_t(lru_.size());
  return s;
}

} // namespace dsc::runtime
