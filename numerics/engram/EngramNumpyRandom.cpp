//===- EngramNumpyRandom.cpp - numpy's default_rng, bit for bit -----------===//
//
// Written from the description of numpy's algorithms (docs/engram.md): all
// uint32 arithmetic in SeedSequence wraps modulo 2^32, PCG64 state arithmetic
// wraps modulo 2^128.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/EngramNumpyRandom.h"

#include <cassert>
#include <limits>
#include <stdexcept>

namespace dsc::numerics::numpy_random {
namespace {

// SeedSequence constants (numpy bit_generator: INIT_A, MULT_A, INIT_B,
// MULT_B, MIX_MULT_L, MIX_MULT_R; XSHIFT = half the word width).
constexpr uint32_t kInitA = 0x43b0d7e5u;
constexpr uint32_t kMultA = 0x931e8875u;
constexpr uint32_t kInitB = 0x8b51f9ddu;
constexpr uint32_t kMultB = 0x58f38dedu;
constexpr uint32_t kMixMultL = 0xca01f9ddu;
constexpr uint32_t kMixMultR = 0x4973f715u;
constexpr unsigned kXShift = 16;
constexpr size_t kPoolSize = 4;

// The hash constant evolves across calls: it is carried by reference.
uint32_t hashMix(uint32_t value, uint32_t &hashConst) {
  value ^= hashConst;
  hashConst *= kMultA;
  value *= hashConst;
  value ^= value >> kXShift;
  return value;
}

uint32_t mixWords(uint32_t x, uint32_t y) {
  uint32_t r = kMixMultL * x - kMixMultR * y;
  r ^= r >> kXShift;
  return r;
}

std::vector<uint32_t> wordsOf(uint64_t n) {
  std::vector<uint32_t> w;
  if (n == 0)
    w.push_back(0);
  while (n > 0) {
    w.push_back(uint32_t(n & 0xffffffffu));
    n >>= 32;
  }
  return w;
}

// PCG64 default multiplier (128 bits, high and low halves).
constexpr uint64_t kPcgMultHi = 2549297995355413924ULL;
constexpr uint64_t kPcgMultLo = 4865540595714422341ULL;

using u128 = unsigned __int128;

u128 make128(uint64_t hi, uint64_t lo) { return (u128(hi) << 64) | lo; }

// Lemire's method on 64 bits for the closed range [0, rng], rng < 2^64-1.
uint64_t lemire64(Pcg64 &gen, uint64_t rng) {
  const uint64_t rngExcl = rng + 1;
  u128 m = u128(gen.next64()) * rngExcl;
  uint64_t leftover = uint64_t(m);
  if (leftover < rngExcl) {
    const uint64_t threshold = (std::numeric_limits<uint64_t>::max() - rng) % rngExcl;
    while (leftover < threshold) {
      m = u128(gen.next64()) * rngExcl;
      leftover = uint64_t(m);
    }
  }
  return uint64_t(m >> 64);
}

// Lemire's method on 32 bits for the closed range [0, rng], rng < 2^32-1.
uint32_t lemire32(Pcg64 &gen, uint32_t rng) {
  const uint32_t rngExcl = rng + 1;
  uint64_t m = uint64_t(gen.next32()) * rngExcl;
  uint32_t leftover = uint32_t(m);
  if (leftover < rngExcl) {
    const uint32_t threshold = (std::numeric_limits<uint32_t>::max() - rng) % rngExcl;
    while (leftover < threshold) {
      m = uint64_t(gen.next32()) * rngExcl;
      leftover = uint32_t(m);
    }
  }
  return uint32_t(m >> 32);
}

} // namespace

SeedSequence::SeedSequence(uint64_t entropy) : SeedSequence(wordsOf(entropy)) {}

SeedSequence::SeedSequence(const std::vector<uint32_t> &entropy) {
  uint32_t hc = kInitA;
  // Fill the pool from the entropy, running the hash on zeros past its end.
  for (size_t i = 0; i < kPoolSize; ++i)
    pool_[i] = hashMix(i < entropy.size() ? entropy[i] : 0u, hc);
  // Every pool word influences every other one.
  for (size_t src = 0; src < kPoolSize; ++src)
    for (size_t dst = 0; dst < kPoolSize; ++dst)
      if (src != dst)
        pool_[dst] = mixWords(pool_[dst], hashMix(pool_[src], hc));
  // Entropy words beyond the pool are mixed into every pool word.
  for (size_t src = kPoolSize; src < entropy.size(); ++src)
    for (size_t dst = 0; dst < kPoolSize; ++dst)
      pool_[dst] = mixWords(pool_[dst], hashMix(entropy[src], hc));
}

std::vector<uint32_t> SeedSequence::generateState32(size_t nWords) const {
  std::vector<uint32_t> out(nWords);
  uint32_t hc = kInitB;
  for (size_t i = 0; i < nWords; ++i) {
    uint32_t v = pool_[i % kPoolSize];
    v ^= hc;
    hc *= kMultB;
    v *= hc;
    v ^= v >> kXShift;
    out[i] = v;
  }
  return out;
}

std::vector<uint64_t> SeedSequence::generateState64(size_t nWords) const {
  std::vector<uint32_t> w = generateState32(2 * nWords);
  std::vector<uint64_t> out(nWords);
  for (size_t i = 0; i < nWords; ++i) // little-endian pairing
    out[i] = uint64_t(w[2 * i]) | (uint64_t(w[2 * i + 1]) << 32);
  return out;
}

Pcg64::Pcg64(uint64_t seedHi, uint64_t seedLo, uint64_t incHi, uint64_t incLo) {
  seed(seedHi, seedLo, incHi, incLo);
}

Pcg64::Pcg64(const SeedSequence &seq) {
  const std::vector<uint64_t> w = seq.generateState64(4);
  seed(w[0], w[1], w[2], w[3]);
}

void Pcg64::seed(uint64_t seedHi, uint64_t seedLo, uint64_t incHi, uint64_t incLo) {
  const u128 initState = make128(seedHi, seedLo);
  const u128 initSeq = make128(incHi, incLo);
  state_ = 0;
  inc_ = (initSeq << 1) | 1u;
  step();
  state_ += initState;
  step();
  hasUint32_ = false;
  uinteger_ = 0;
}

void Pcg64::step() { state_ = state_ * make128(kPcgMultHi, kPcgMultLo) + inc_; }

uint64_t Pcg64::next64() {
  step();
  const uint64_t hi = uint64_t(state_ >> 64);
  const uint64_t lo = uint64_t(state_);
  const unsigned rot = unsigned(state_ >> 122); // top 6 bits
  const uint64_t x = hi ^ lo;
  return (x >> rot) | (x << ((64u - rot) & 63u));
}

uint32_t Pcg64::next32() {
  if (hasUint32_) {
    hasUint32_ = false;
    return uinteger_;
  }
  const uint64_t v = next64();
  hasUint32_ = true;
  uinteger_ = uint32_t(v >> 32);
  return uint32_t(v & 0xffffffffu);
}

std::vector<int64_t> integersInt64(Pcg64 &gen, int64_t low, int64_t high,
                                   size_t n) {
  if (!(low < high))
    throw std::invalid_argument("integersInt64: need low < high");
  // Closed interval [low, high-1]; the difference fits in uint64.
  const uint64_t rng = uint64_t(high - 1) - uint64_t(low);
  const uint64_t off = uint64_t(low);
  std::vector<int64_t> out(n);
  for (size_t i = 0; i < n; ++i) {
    uint64_t v;
    if (rng == 0)
      v = 0;
    else if (rng <= 0xffffffffULL)
      v = rng == 0xffffffffULL ? uint64_t(gen.next32())
                               : uint64_t(lemire32(gen, uint32_t(rng)));
    else if (rng == std::numeric_limits<uint64_t>::max())
      v = gen.next64();
    else
      v = lemire64(gen, rng);
    out[i] = int64_t(off + v);
  }
  return out;
}

std::vector<int64_t> defaultRngIntegersInt64(uint64_t seed, int64_t low,
                                             int64_t high, size_t n) {
  Pcg64 gen{SeedSequence(seed)};
  return integersInt64(gen, low, high, n);
}

} // namespace dsc::numerics::numpy_random
