//===- SnapshotCache.h - Prompt-prefix snapshots for exact prefix reuse ---===//
//
// What: the first tier of the serving runtime's prefix cache (issue 13):
// SessionSnapshots (Engine.h: every state after a prompt prefix) kept in
// host memory, found by the longest cached prefix of a new prompt, evicted
// least recently used beyond a byte budget. Prefixes are cut at multiples of
// `blockTokens`, so prompts that share their first blocks share a snapshot.
// Why: agentic workloads resend the same long prefix turn after turn; with a
// snapshot the next prompt prefills only its tail (Session::prefillFrom),
// and the result is the cold prefill's, bit for bit.
// Invariants: a snapshot is served only if its tokens equal the prompt's
// first tokens (the block hash only finds the candidate; a collision is a
// miss); lookup leaves at least `tail` tokens for the prompt's last chunk;
// served snapshots are immutable and shared (a later eviction does not free
// one in use); every method is safe to call from many threads.
// Bound: the budget; one snapshot holds every state at the plan's capacity,
// so this tier suits short contexts. The paged, shared KV pool
// (PrefixCache.h) replaces the copies later.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_SNAPSHOTCACHE_H
#define DSC_RUNTIME_SNAPSHOTCACHE_H

#include "dsc/runtime/Engine.h"

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <span>
#include <unordered_map>

namespace dsc::runtime {

class SnapshotCache {
public:
  /// blockTokens > 0: the cut granularity; maxBytes: the budget of the
  /// snapshots' state bytes.
  SnapshotCache(int64_t blockTokens, uint64_t maxBytes);

  int64_t blockTokens() const { return blockTokens_; }

  /// The snapshot of the longest cached prefix of ids that leaves at least
  /// `tail` tokens after it, or null (a miss). Counts in stats().
  std::shared_ptr<const SessionSnapshot> lookup(std::span<const int32_t> ids, int64_t tail);

  /// Where a prompt of `tokens` should be cut to be saved: the largest
  /// multiple of blockTokens that leaves `tail` tokens, or 0 (too short).
  int64_t savePoint(int64_t tokens, int64_t tail) const;

  /// Keeps `snapshot` (its ids a multiple of blockTokens long, else an
  /// InvalidArgument), evicting the least recently used ones beyond the
  /// budget; one larger than the whole budget is not kept. An equal prefix
  /// already cached is kept as it is.
  Status insert(SessionSnapshot snapshot);

  struct Stats {
    int64_t lookups = 0, hits = 0, hitTokens = 0, entries = 0, evictions = 0;
    uint64_t bytes = 0;
  };
  Stats stats() const;

private:
  struct Entry {
    uint64_t key = 0;
    std::shared_ptr<const SessionSnapshot> snapshot;
  };
  const int64_t blockTokens_;
  const uint64_t maxBytes_;
  mutable std::mutex mutex_;
  std::list<Entry> lru_; ///< most recently used first
  std::unordered_map<uint64_t, std::list<Entry>::iterator> byKey_;
  Stats stats_;
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_SNAPSHOTCACHE_H
