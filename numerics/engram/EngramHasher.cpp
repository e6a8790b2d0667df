//===- EngramHasher.cpp - Stateful per-sequence Engram n-gram hasher ------===//
#include "dsc/numerics/EngramHasher.h"

#include <stdexcept>
#include <string>

namespace dsc::numerics {

EngramHasher::EngramHasher(EngramLayout layout, std::vector<int64_t> tokenLookup,
                           int64_t engramPadTokenId)
    : layout_(std::move(layout)), lookup_(std::move(tokenLookup)) {
  if (engramPadTokenId < 0 || engramPadTokenId >= int64_t(lookup_.size()))
    throw std::invalid_argument("EngramHasher: engram_pad_id " +
                                std::to_string(engramPadTokenId) +
                                " is outside the token map (" +
                                std::to_string(lookup_.size()) + " tokens)");
  padId_ = lookup_[size_t(engramPadTokenId)];
  const size_t L = size_t(layout_.numLayers());
  const size_t C = size_t(layout_.numColumns());
  if (layout_.maxNgram < 1 || layout_.multipliers.size() != L ||
      layout_.primes.size() != L || layout_.offsets.size() != L)
    throw std::invalid_argument("EngramHasher: inconsistent layout");
  for (size_t l = 0; l < L; ++l)
    if (layout_.multipliers[l].size() != size_t(layout_.maxNgram) ||
        layout_.primes[l].size() != C || layout_.offsets[l].size() != C)
      throw std::invalid_argument("EngramHasher: inconsistent layout sizes");
}

namespace {
template <typename Id>
std::vector<int64_t> forwardImpl(std::vector<int64_t> &cache,
                                 const std::vector<int64_t> &lookup,
                                 const EngramLayout &layout, int64_t padId,
                                 std::span<const Id> ids, int64_t startPos,
                                 std::span<const uint8_t> textMask) {
  if (startPos < 0 || startPos > int64_t(cache.size()))
    throw std::invalid_argument("EngramHasher: start position " +
                                std::to_string(startPos) + " beyond the " +
                                std::to_string(cache.size()) + " cached positions");
  if (!textMask.empty() && textMask.size() != ids.size())
    throw std::invalid_argument("EngramHasher: text mask has " +
                                std::to_string(textMask.size()) + " entries for " +
                                std::to_string(ids.size()) + " ids");
  // Validate first so a bad id leaves the state untouched.
  for (size_t i = 0; i < ids.size(); ++i)
    if (int64_t(ids[i]) < 0 || int64_t(ids[i]) >= int64_t(lookup.size()))
      throw std::invalid_argument("EngramHasher: token id " +
                                  std::to_string(int64_t(ids[i])) + " outside the " +
                                  std::to_string(lookup.size()) + "-token map");
  cache.resize(size_t(startPos));
  for (size_t i = 0; i < ids.size(); ++i) {
    const bool text = textMask.empty() || textMask[i] != 0;
    cache.push_back(text ? lookup[size_t(ids[i])] : kEngramDead);
  }
  const int64_t L = layout.numLayers(), C = layout.numColumns();
  const int maxNgram = int(layout.maxNgram), heads = int(layout.numHeads);
  std::vector<int64_t> out(ids.size() * size_t(L * C));
  for (size_t i = 0; i < ids.size(); ++i) {
    const int64_t pos = startPos + int64_t(i);
    for (int64_t l = 0; l < L; ++l)
      engramHashFromCache(cache.data(), pos, padId, layout.multipliers[size_t(l)].data(),
                          maxNgram, layout.primes[size_t(l)].data(),
                          layout.offsets[size_t(l)].data(), heads,
                          out.data() + (int64_t(i) * L + l) * C);
  }
  return out;
}
} // namespace

std::vector<int64_t> EngramHasher::forward(std::span<const int64_t> ids,
                                           int64_t startPos,
                                           std::span<const uint8_t> textMask) {
  return forwardImpl(cache_, lookup_, layout_, padId_, ids, startPos, textMask);
}

std::vector<int64_t> EngramHasher::forward(std::span<const int32_t> ids,
                                           int64_t startPos,
                                           std::span<const uint8_t> textMask) {
  return forwardImpl(cache_, lookup_, layout_, padId_, ids, startPos, textMask);
}

std::vector<int64_t> EngramHasher::prefill(std::span<const int64_t> ids,
                                           std::span<const uint8_t> textMask) {
  reset();
  return forward(ids, 0, textMask);
}

std::vector<int64_t> EngramHasher::prefill(std::span<const int32_t> ids,
                                           std::span<const uint8_t> textMask) {
  reset();
  return forward(ids, 0, textMask);
}

std::vector<int64_t> EngramHasher::decode(int64_t id, bool isText) {
  const uint8_t m = isText ? 1 : 0;
  return forward(std::span<const int64_t>(&id, 1), position(),
                 std::span<const uint8_t>(&m, 1));
}

} // namespace dsc::numerics
