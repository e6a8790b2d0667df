//===- Rope.cpp - RoPE inverse frequencies with YaRN ----------------------===//
#include "dsc/numerics/Rope.h"

#include <algorithm>
#include <cmath>

namespace dsc::numerics {

YarnRange yarnCorrectionRange(int d, double base, int64_t originalSeqLen, double betaFast,
                              double betaSlow) {
  const double pi = 3.141592653589793;
  auto corr = [&](double rotations) {
    return d * std::log(static_cast<double>(originalSeqLen) / (rotations * 2 * pi)) /
           (2 * std::log(base));
  };
  YarnRange r;
  r.low = std::max(static_cast<int>(std::floor(corr(betaFast))), 0);
  r.high = std::min(static_cast<int>(std::ceil(corr(betaSlow))), d - 1);
  return r;
}

std::vector<float> ropeInvFreq(int d, double base, int64_t originalSeqLen, double factor,
                               double betaFast, double betaSlow) {
  const int half = d / 2;
  const float baseF = static_cast<float>(base);
  std::vector<float> inv(half);
  for (int k = 0; k < half; ++k) {
    const float exponent = static_cast<float>(2 * k) / static_cast<float>(d);
    // fp32 pow, correctly rounded (evaluated in double, rounded once), then
    // the fp32 reciprocal.
    const float p = static_cast<float>(std::pow(static_cast<double>(baseF),
                                                static_cast<double>(exponent)));
    inv[k] = 1.0f / p;
  }
  if (originalSeqLen <= 0)
    return inv;
  const YarnRange r = yarnCorrectionRange(d, base, originalSeqLen, betaFast, betaSlow);
  // max(high - low, 1e-3): an int when high > low, else the fp32 1e-3.
  const float denom = r.high - r.low > 0 ? static_cast<float>(r.high - r.low) : 1e-3f;
  const float factorF = static_cast<float>(factor);
  for (int k = 0; k < half; ++k) {
    float ramp = (static_cast<float>(k) - static_cast<float>(r.low)) / denom;
    ramp = std::clamp(ramp, 0.0f, 1.0f);
    const float smooth = 1.0f - ramp;
    inv[k] = inv[k] / factorF * (1.0f - smooth) + inv[k] * smooth;
  }
  return inv;
}

} // namespace dsc::numerics
