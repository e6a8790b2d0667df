//===- SparseSelect.h - Indexer visibility, candidates, top-k (host) ------===//
//
// What: the selection steps of the reference indexer on one query row:
// visibility masking (reference-spec §9.5 step 4, §15.11), candidate-block
// selection (§9.6) and the index top-k (§9.5 step 6), returning index sets.
// Why: the CPU backend and the tests need exactly the reference's sets; the
// GPU kernels must produce the same sets outside exact ties.
// Rules:
//   - visibility: compressed position j is visible iff j < compressLen, with
//     compressLen = (t+1)//ratio in prefill and (start_pos+1)//ratio in
//     decode; invisible scores are -inf.
//   - candidates (level one): pad scores to a multiple of blockSize with
//     -inf, block score = max of its positions, pin block (compressLen-1) //
//     blockSize to +inf (floor division: no pin when compressLen == 0), take
//     the top min(topkBlocks, nblocks) blocks, keep picks whose value > -inf:
//     the candidate blocks, held as their ids in ascending order padded with
//     -1 to topkBlocks entries (a [rows, topkBlocks] list instead of a
//     [rows, width] mask: what makes a long prompt's candidates small), or
//     expanded to a per-position mask of the original width.
//   - level two: scores outside the candidate mask become -inf.
//   - top-k: k = min(indexTopk, width); the k best of the row, then sorted
//     ascending; index j maps to j + offset if j < compressLen, else -1.
//     offset = the window part's width (S in prefill, window in decode).
// Tie rule (the reference's topk order at ties is implementation-defined,
// §15.2): larger score first; among equal scores the LOWER index wins. NaN
// ranks above everything (as in torch.topk). -inf entries rank by index too.
// Host-only.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_SPARSESELECT_H
#define DSC_NUMERICS_SPARSESELECT_H

#if defined(__CUDACC_RTC__)
#error "SparseSelect.h is host-only"
#endif

#include <cstdint>
#include <vector>

namespace dsc::numerics {

/// Sets scores[j] = -inf for j >= compressLen (j < width).
void maskInvisible(float *scores, int64_t width, int64_t compressLen);

/// Sets scores[j] = -inf where candidates[j] == 0.
void maskNonCandidates(float *scores, const uint8_t *candidates, int64_t width);

/// Indices of the k best scores under the tie rule above, in rank order
/// (best first). k is clamped to [0, width].
std::vector<int64_t> topKIndices(const float *scores, int64_t width, int64_t k);

/// Level-one candidate blocks: topkBlocks ids, the picked ones ascending,
/// then -1.
std::vector<int32_t> selectCandidateBlockIds(const float *scores, int64_t width,
                                             int64_t compressLen, int64_t topkBlocks,
                                             int64_t blockSize);

/// The per-position mask (1 = candidate) of `width` positions that block ids
/// (-1 entries ignored) cover.
std::vector<uint8_t> candidateMaskFromBlocks(const int32_t *ids, int64_t count, int64_t blockSize,
                                             int64_t width);

/// Level-one candidate mask (1 = candidate) of `width` positions.
std::vector<uint8_t> selectCandidateBlocks(const float *scores, int64_t width,
                                           int64_t compressLen, int64_t topkBlocks,
                                           int64_t blockSize);

/// The indexer's top-k for one query row of already-masked scores: sorted
/// ascending, mapped to j + offset (visible) or -1; min(indexTopk, width)
/// entries.
std::vector<int32_t> indexerTopK(const float *scores, int64_t width, int64_t compressLen,
                                 int64_t indexTopk, int64_t offset);

} // namespace dsc::numerics

#endif // DSC_NUMERICS_SPARSESELECT_H
