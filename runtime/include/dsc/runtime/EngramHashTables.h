//===- EngramHashTables.h - An engram_hash launch's tables, checked --------===//
//
// What: the constants of an engram_hash kernel (layers, multipliers, primes,
// offsets: abi::EngramHashParams arrays in KernelSpec::constants) as vectors,
// with the pad token mapped through the plan's Engram token map.
// Why: both backends hash with the same tables (numerics/EngramHash.h); the
// one reader checks their sizes against layers x max_ngram x heads.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_ENGRAMHASHTABLES_H
#define DSC_RUNTIME_ENGRAMHASHTABLES_H

#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Status.h"

#include <vector>

namespace dsc::runtime {

/// The constants of an engram_hash launch, checked against the plan's token
/// map (shared by the CPU and CUDA adapters).
struct EngramHashTables {
  std::vector<int64_t> layers, multipliers, primes, offsets;
  int64_t maxNgram = 0, heads = 0;
  int64_t padId = 0; ///< the pad token's compressed id
};
inline Expected<EngramHashTables>
readEngramHashTables(const KernelSpec &kernel, const PlanFacts &model) {
  const abi::EngramHashParams *p = kernel.as<abi::EngramHashParams>();
  if (!p)
    return internalError("engram_hash: parameters of another kernel");
  auto list = [&](const abi::KernelArray &a) {
    std::span<const int64_t> v = kernel.array(a);
    return std::vector<int64_t>(v.begin(), v.end());
  };
  EngramHashTables e;
  e.layers = list(p->layers);
  e.multipliers = list(p->multipliers);
  e.primes = list(p->primes);
  e.offsets = list(p->offsets);
  e.maxNgram = p->max_ngram;
  e.heads = p->heads;
  int64_t padToken = p->pad_id;
  const std::vector<int64_t> &map = model.engramTokenMap;
  if (map.empty())
    return failedPrecondition("engram_hash: the plan carries no Engram token map");
  if (padToken < 0 || padToken >= int64_t(map.size()))
    return invalidArgument("engram_hash: pad token " + std::to_string(padToken) +
                                    " is outside the token map");
  int64_t nLayers = int64_t(e.layers.size()), cols = (e.maxNgram - 1) * e.heads;
  if (e.maxNgram < 1 || e.heads < 1 || int64_t(e.multipliers.size()) != nLayers * e.maxNgram ||
      int64_t(e.primes.size()) != nLayers * cols || int64_t(e.offsets.size()) != nLayers * cols)
    return invalidArgument("engram_hash: multipliers/primes/offsets do not match "
                                    "layers x max_ngram x heads");
  e.padId = map[padToken];
  return e;
}

} // namespace dsc::runtime

#endif // DSC_RUNTIME_ENGRAMHASHTABLES_H
