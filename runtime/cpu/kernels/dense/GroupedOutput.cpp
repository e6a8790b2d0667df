//===- GroupedOutput.cpp - CPU reference grouped output projection --------===//
#include "runtime/cpu/kernels/dense/GroupedOutput.h"

#include "runtime/cpu/kernels/dense/Linear.h"

#include <cstring>
#include <vector>

namespace dsc::cpu {

void groupedWoA(const uint16_t *o, int64_t S, int64_t G, int64_t Din, const uint16_t *woA,
                int64_t R, uint16_t *z) {
  std::vector<uint16_t> og(static_cast<size_t>(S * Din)), zg(static_cast<size_t>(S * R));
  for (int64_t g = 0; g < G; ++g) {
    for (int64_t s = 0; s < S; ++s)
      std::memcpy(og.data() + s * Din, o + s * G * Din + g * Din,
                  static_cast<size_t>(Din) * sizeof(uint16_t));
    linearBf16(og.data(), S, Din, woA + g * R * Din, R, zg.data());
    for (int64_t s = 0; s < S; ++s)
      std::memcpy(z + s * G * R + g * R, zg.data() + s * R,
                  static_cast<size_t>(R) * sizeof(uint16_t));
  }
}

void groupedOutputProjection(const uint16_t *o, int64_t S, int64_t G, int64_t Din,
                             const uint16_t *woA, int64_t R, const uint8_t *woB,
                             const uint8_t *woBScale, int64_t D, uint16_t *y) {
  std::vector<uint16_t> z(static_cast<size_t>(S * G * R));
  groupedWoA(o, S, G, Din, woA, R, z.data());
  linearFp8(z.data(), S, G * R, woB, woBScale, D, y);
}

} // namespace dsc::cpu
