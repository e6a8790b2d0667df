//===- HyperConnection.cpp - mHC mix split and Sinkhorn -------------------===//
#include "dsc/numerics/HyperConnection.h"

#include <cmath>

namespace dsc::numerics {

static float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }

void hcSplitSinkhorn(const float *mixes, const float *scale, const float *base, int hc,
                     int iters, float eps, float *pre, float *post, float *comb) {
  for (int c = 0; c < hc; ++c) {
    pre[c] = sigmoid(mixes[c] * scale[0] + base[c]) + eps;
    post[c] = 2.0f * sigmoid(mixes[hc + c] * scale[1] + base[hc + c]);
  }
  const float *m = mixes + 2 * hc;
  const float *b = base + 2 * hc;
  for (int i = 0; i < hc; ++i) {
    float *row = comb + i * hc;
    float mx = -INFINITY;
    for (int j = 0; j < hc; ++j) {
      row[j] = m[i * hc + j] * scale[2] + b[i * hc + j];
      mx = row[j] > mx ? row[j] : mx;
    }
    for (int j = 0; j < hc; ++j)
      row[j] = std::exp(row[j] - mx);
    float sum = 0.0f;
    for (int j = 0; j < hc; ++j)
      sum += row[j];
    for (int j = 0; j < hc; ++j)
      row[j] = row[j] / sum + eps;
  }
  auto normaliseColumns = [&] {
    for (int j = 0; j < hc; ++j) {
      float sum = 0.0f;
      for (int i = 0; i < hc; ++i)
        sum += comb[i * hc + j];
      const float d = sum + eps;
      for (int i = 0; i < hc; ++i)
        comb[i * hc + j] = comb[i * hc + j] / d;
    }
  };
  auto normaliseRows = [&] {
    for (int i = 0; i < hc; ++i) {
      float sum = 0.0f;
      for (int j = 0; j < hc; ++j)
        sum += comb[i * hc + j];
      const float d = sum + eps;
      for (int j = 0; j < hc; ++j)
        comb[i * hc + j] = comb[i * hc + j] / d;
    }
  };
  normaliseColumns();
  for (int it = 1; it < iters; ++it) {
    normaliseRows();
    normaliseColumns();
  }
}

} // namespace dsc::numerics
