//===- Portability.h - Host/device portability for the numerics headers ---===//
//
// What: the few macros and helpers that let every numerics header compile
// unchanged with g++ on the host, with nvcc, and under NVRTC.
// Why: the rounding rules and byte layouts have exactly one definition, used
// by the compiler, the CPU backend and the kernels (design principle "one
// definition of every number").
// Invariants:
//   - no CUDA header, no MLIR, no <cmath>: NVRTC has no standard headers
//     (toolchain.md §2), so under __CUDACC_RTC__ the fixed-width integer
//     types are declared here and everything else is bit manipulation;
//   - DSC_HD marks every function that must run on both sides;
//   - bitCast is __builtin_bit_cast (g++ >= 11, clang, nvcc and NVRTC all
//     provide it), so conversions stay constexpr.
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_PORTABILITY_H
#define DSC_NUMERICS_PORTABILITY_H

#if defined(__CUDACC__) || defined(__CUDACC_RTC__)
#define DSC_HD __host__ __device__
#else
#define DSC_HD
#endif

#if defined(__CUDACC_RTC__)
// NVRTC ships no <cstdint>. These match the LP64 host definitions.
typedef signed char int8_t;
typedef unsigned char uint8_t;
typedef short int16_t;
typedef unsigned short uint16_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef long long int64_t;
typedef unsigned long long uint64_t;
#else
#include <cstdint>
#endif

namespace dsc::numerics {

/// std::bit_cast without <bit>.
template <typename To, typename From>
DSC_HD constexpr To bitCast(const From &from) {
  static_assert(sizeof(To) == sizeof(From), "bitCast needs equal sizes");
  return __builtin_bit_cast(To, from);
}

DSC_HD constexpr uint32_t floatBits(float x) { return bitCast<uint32_t>(x); }
DSC_HD constexpr float floatFromBits(uint32_t bits) { return bitCast<float>(bits); }

/// IEEE predicates on the bit pattern (no <cmath>).
DSC_HD constexpr bool isNaN(float x) {
  return (floatBits(x) & 0x7fffffffu) > 0x7f800000u;
}
DSC_HD constexpr bool isInf(float x) {
  return (floatBits(x) & 0x7fffffffu) == 0x7f800000u;
}
DSC_HD constexpr bool signBit(float x) { return (floatBits(x) >> 31) != 0; }
DSC_HD constexpr float absF(float x) {
  return floatFromBits(floatBits(x) & 0x7fffffffu);
}

inline constexpr float kPosInf = bitCast<float>(0x7f800000u);
inline constexpr float kNegInf = bitCast<float>(0xff800000u);
inline constexpr float kQuietNaN = bitCast<float>(0x7fc00000u);

} // namespace dsc::numerics

#endif // DSC_NUMERICS_PORTABILITY_H
