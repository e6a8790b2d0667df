//===- EngramNumpyRandom.h - numpy's default_rng, bit for bit -------------===//
//
// The pieces of numpy.random that `default_rng(seed).integers(low, high,
// size, dtype=int64)` runs, re-implemented from numpy's algorithm
// descriptions (docs/engram.md "numpy chain"):
//   - SeedSequence(entropy): entropy integer -> little-endian uint32 words,
//     mixed into a 4-word pool with hashmix/mix; generate_state(n, uint64)
//     draws 2n uint32 words from the cycled pool and pairs them little-endian;
//   - PCG64 seeded from generate_state(4, uint64) = (s_hi, s_lo, i_hi, i_lo):
//     128-bit LCG (default multiplier), XSL-RR 64-bit output, next32 buffering
//     the high half of a 64-bit draw;
//   - Generator.integers with endpoint=False: closed range rng = high-1-low,
//     Lemire's nearly-divisionless rejection (never the masked method) on
//     64 bits, on 32 bits (via next32) when rng fits in 32 bits.
// Host only.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_ENGRAMNUMPYRANDOM_H
#define DSC_NUMERICS_ENGRAMNUMPYRANDOM_H

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace dsc::numerics::numpy_random {

/// numpy.random.SeedSequence for a non-negative integer entropy, no spawn key,
/// pool size 4.
class SeedSequence {
public:
  explicit SeedSequence(uint64_t entropy);
  /// Entropy given as uint32 words, lowest first.
  explicit SeedSequence(const std::vector<uint32_t> &entropyWords);

  const std::array<uint32_t, 4> &pool() const { return pool_; }
  /// generate_state(n, dtype=uint32).
  std::vector<uint32_t> generateState32(std::size_t nWords) const;
  /// generate_state(n, dtype=uint64).
  std::vector<uint64_t> generateState64(std::size_t nWords) const;

private:
  std::array<uint32_t, 4> pool_{};
};

/// numpy.random.PCG64 (the default bit generator of default_rng).
class Pcg64 {
public:
  /// Seeded as numpy does from a SeedSequence.
  explicit Pcg64(const SeedSequence &seq);
  /// Raw seeding: state/inc words as numpy's pcg64_set_seed receives them.
  Pcg64(uint64_t seedHi, uint64_t seedLo, uint64_t incHi, uint64_t incLo);

  uint64_t next64();
  uint32_t next32();

  unsigned __int128 state() const { return state_; }
  unsigned __int128 increment() const { return inc_; }

private:
  void seed(uint64_t seedHi, uint64_t seedLo, uint64_t incHi, uint64_t incLo);
  void step();
  unsigned __int128 state_ = 0;
  unsigned __int128 inc_ = 0;
  bool hasUint32_ = false;
  uint32_t uinteger_ = 0;
};

/// Generator.integers(low, high, size=n, dtype=int64) (endpoint=False).
/// Requires low < high.
std::vector<int64_t> integersInt64(Pcg64 &gen, int64_t low, int64_t high,
                                   std::size_t n);

/// default_rng(seed).integers(low, high, size=n, dtype=int64).
std::vector<int64_t> defaultRngIntegersInt64(uint64_t seed, int64_t low,
                                             int64_t high, std::size_t n);

} // namespace dsc::numerics::numpy_random

#endif // DSC_NUMERICS_ENGRAMNUMPYRANDOM_H
