//===- EngramHasher.h - Stateful per-sequence Engram n-gram hasher (host) -===//
//
// reference-spec §5 step 2 and §7.4: for every forward (prefill at position 0,
// then one decode token at a time, or any chunk at its start position) the
// token ids become compressed ids (DEAD = -1 where the text mask is false,
// i.e. image tokens), are written into the sequence's cache at
// [start, start+S), and every position is hashed from the cache with
// engramHashPosition (EngramHash.h). The cache carries state across calls.
// Output layout: [S, numLayers, (maxNgram-1)*numHeads] int64, row-major.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_ENGRAMHASHER_H
#define DSC_NUMERICS_ENGRAMHASHER_H

#include "dsc/numerics/EngramHash.h"
#include "dsc/numerics/EngramLayout.h"

#include <cstdint>
#include <span>
#include <vector>

namespace dsc::numerics {

class EngramHasher {
public:
  /// `tokenLookup`: token id -> compressed id (EngramTokenMap::lookup);
  /// `engramPadTokenId`: the config's engram_pad_id (a token id; the hasher
  /// pads with its compressed id). Throws std::invalid_argument if the pad id
  /// is outside the lookup or the layout is inconsistent.
  EngramHasher(EngramLayout layout, std::vector<int64_t> tokenLookup,
               int64_t engramPadTokenId);

  const EngramLayout &layout() const { return layout_; }
  int64_t numLayers() const { return layout_.numLayers(); }
  int64_t numColumns() const { return layout_.numColumns(); }
  /// Compressed pad id used for blocked look-backs.
  int64_t padId() const { return padId_; }
  /// Number of cached positions (the next start position).
  int64_t position() const { return int64_t(cache_.size()); }
  /// Cached compressed ids (kEngramDead for masked positions).
  const std::vector<int64_t> &cache() const { return cache_; }

  /// Forgets the sequence.
  void reset() { cache_.clear(); }

  /// Hashes `ids` at positions startPos..startPos+S-1; startPos <= position()
  /// (a smaller start rewinds, the reference overwriting its cache there).
  /// `textMask` empty = all text; else one entry per id, 0 = masked (DEAD).
  /// Throws std::invalid_argument for an id outside the lookup or a bad
  /// start/mask. Returns [S, numLayers, numColumns].
  std::vector<int64_t> forward(std::span<const int64_t> ids, int64_t startPos,
                               std::span<const uint8_t> textMask = {});
  std::vector<int64_t> forward(std::span<const int32_t> ids, int64_t startPos,
                               std::span<const uint8_t> textMask = {});

  /// reset() then forward(ids, 0, textMask).
  std::vector<int64_t> prefill(std::span<const int64_t> ids,
                               std::span<const uint8_t> textMask = {});
  std::vector<int64_t> prefill(std::span<const int32_t> ids,
                               std::span<const uint8_t> textMask = {});
  /// One token at position(): [1, numLayers, numColumns].
  std::vector<int64_t> decode(int64_t id, bool isText = true);

private:
  EngramLayout layout_;
  std::vector<int64_t> lookup_;
  int64_t padId_ = 0;
  std::vector<int64_t> cache_;
};

} // namespace dsc::numerics

#endif // DSC_NUMERICS_ENGRAMHASHER_H
