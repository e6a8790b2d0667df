//===- SparseSelect.cpp - Indexer visibility, candidates, top-k -----------===//
#include "dsc/numerics/SparseSelect.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace dsc::numerics {

namespace {

/// Strict "ranks before": NaN highest, then by value, then lower index.
bool ranksBefore(float a, int64_t ia, float b, int64_t ib) {
  const bool na = std::isnan(a), nb = std::isnan(b);
  if (na != nb)
    return na;
  if (!na && a != b)
    return a > b;
  return ia < ib;
}

} // namespace

void maskInvisible(float *scores, int64_t width, int64_t compressLen) {
  for (int64_t j = std::max<int64_t>(compressLen, 0); j < width; ++j)
    scores[j] = -std::numeric_limits<float>::infinity();
}

void maskNonCandidates(float *scores, const uint8_t *candidates, int64_t width) {
  for (int64_t j = 0; j < width; ++j)
    if (!candidates[j])
      scores[j] = -std::numeric_limits<float>::infinity();
}

std::vector<int64_t> topKIndices(const float *scores, int64_t width, int64_t k) {
  k = std::clamp<int64_t>(k, 0, std::max<int64_t>(width, 0));
  std::vector<int64_t> idx(static_cast<size_t>(std::max<int64_t>(width, 0)));
  std::iota(idx.begin(), idx.end(), int64_t{0});
  auto before = [&](int64_t a, int64_t b) { return ranksBefore(scores[a], a, scores[b], b); };
  std::partial_sort(idx.begin(), idx.begin() + k, idx.end(), before);
  idx.resize(static_cast<size_t>(k));
  return idx;
}

std::vector<int32_t> selectCandidateBlockIds(const float *scores, int64_t width,
                                             int64_t compressLen, int64_t topkBlocks,
                                             int64_t blockSize) {
  const float negInf = -std::numeric_limits<float>::infinity();
  std::vector<int32_t> ids(static_cast<size_t>(std::max<int64_t>(topkBlocks, 0)), -1);
  if (width <= 0 || blockSize <= 0)
    return ids;
  const int64_t nblocks = (width + blockSize - 1) / blockSize;
  std::vector<float> block(static_cast<size_t>(nblocks), negInf);
  for (int64_t j = 0; j < width; ++j) {
    float &b = block[static_cast<size_t>(j / blockSize)];
    // amax propagates NaN.
    if (std::isnan(scores[j]) || scores[j] > b)
      b = std::isnan(b) ? b : scores[j];
  }
  // Python floor division: (compressLen-1)//blockSize is -1 for compressLen 0,
  // which matches no block.
  if (compressLen > 0) {
    const int64_t last = (compressLen - 1) / blockSize;
    if (last < nblocks)
      block[static_cast<size_t>(last)] = std::numeric_limits<float>::infinity();
  }
  std::vector<int32_t> picked;
  for (int64_t b : topKIndices(block.data(), nblocks, std::min(topkBlocks, nblocks)))
    if (block[static_cast<size_t>(b)] > negInf)
      picked.push_back(static_cast<int32_t>(b));
  std::sort(picked.begin(), picked.end());
  std::copy(picked.begin(), picked.end(), ids.begin());
  return ids;
}

std::vector<uint8_t> candidateMaskFromBlocks(const int32_t *ids, int64_t count, int64_t blockSize,
                                             int64_t width) {
  std::vector<uint8_t> mask(static_cast<size_t>(std::max<int64_t>(width, 0)), 0);
  for (int64_t i = 0; i < count && blockSize > 0; ++i) {
    if (ids[i] < 0)
      continue;
    for (int64_t j = ids[i] * blockSize; j < std::min(width, (ids[i] + 1) * blockSize); ++j)
      mask[static_cast<size_t>(j)] = 1;
  }
  return mask;
}

std::vector<uint8_t> selectCandidateBlocks(const float *scores, int64_t width,
                                           int64_t compressLen, int64_t topkBlocks,
                                           int64_t blockSize) {
  const std::vector<int32_t> ids =
      selectCandidateBlockIds(scores, width, compressLen, topkBlocks, blockSize);
  return candidateMaskFromBlocks(ids.data(), int64_t(ids.size()), blockSize, width);
}

std::vector<int32_t> indexerTopK(const float *scores, int64_t width, int64_t compressLen,
                                 int64_t indexTopk, int64_t offset) {
  std::vector<int64_t> picks = topKIndices(scores, width, std::min(indexTopk, width));
  std::sort(picks.begin(), picks.end());
  std::vector<int32_t> out;
  out.reserve(picks.size());
  for (int64_t j : picks)
    out.push_back(j < compressLen ? static_cast<int32_t>(j + offset) : -1);
  return out;
}

} // namespace dsc::numerics
