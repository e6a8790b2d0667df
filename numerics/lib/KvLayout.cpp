//===- KvLayout.cpp - Host-side page conversion for packed KV -------------===//
//
// Converting a pool between token-interleaved and page-planar layouts (or
// between page sizes) is a byte permutation of whole records; the per-token
// copy is the device-ready copyKvToken from KvLayout.h.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/KvLayout.h"

#include <string>

namespace dsc::numerics {

int64_t kvPagesFor(const KvPageLayout &layout, int64_t numTokens) {
  if (layout.tokensPerPage <= 0 || numTokens <= 0)
    return 0;
  return (numTokens + layout.tokensPerPage - 1) / layout.tokensPerPage;
}

static const char *valueName(KvValueType t) {
  return t == KvValueType::E2M1 ? "E2M1" : "E4M3";
}
static const char *scaleName(KvScaleType t) {
  return t == KvScaleType::E4M3 ? "E4M3" : "UE8M0";
}

std::string describe(const KvPageLayout &layout) {
  const KvRecordFormat &f = layout.format;
  return std::string(valueName(f.valueType)) + "/" + scaleName(f.scaleType) + "x" +
         std::to_string(f.valuesPerTile) + " " + std::to_string(f.entryBytes) + " B (" +
         std::to_string(f.dataBytes) + "+" + std::to_string(f.scaleBytes) + ") x " +
         std::to_string(layout.tokensPerPage) + " tokens, " +
         (layout.order == KvPageOrder::TokenInterleaved ? "interleaved" : "planar");
}

std::string convertKvPages(const KvPageLayout &src, const uint8_t *srcPool,
                           const int32_t *srcPageTable, const KvPageLayout &dst,
                           uint8_t *dstPool, const int32_t *dstPageTable, int64_t numTokens) {
  if (!src.isValid())
    return "source layout is invalid: " + describe(src);
  if (!dst.isValid())
    return "destination layout is invalid: " + describe(dst);
  if (!(src.format == dst.format))
    return "record formats differ: " + describe(src) + " vs " + describe(dst);
  if (numTokens < 0)
    return "negative token count";
  if (numTokens > 0 && (!srcPool || !dstPool))
    return "null page pool";
  for (int64_t t = 0; t < numTokens; ++t)
    copyKvToken(src, srcPool, srcPageTable, t, dst, dstPool, dstPageTable, t);
  return {};
}

} // namespace dsc::numerics
