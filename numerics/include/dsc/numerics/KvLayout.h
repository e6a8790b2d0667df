//===- KvLayout.h - Packed KV record formats and page layouts as data -----===//
//
// What: descriptors for the packed per-token KV records and for how records
// are laid out in pages, plus encode/decode of one token's record.
// Why: the reference keeps bf16 QDQ caches (reference-spec §1, §14); dsc
// stores the packed bytes peers use (peers §0.1). Which page layout the
// released kernels use is not pinned (peers §0.1, §5.1), so the layout is a
// value a plan carries, never a compile-time assumption.
// Record formats (released sizes; the tiny configs scale `values`):
//   - main (compressed) KV: 512 values E2M1 (256 B) + 32 E4M3 scales, one per
//     16 values = 288 B (reference-spec §3.3 E4M3 path, §3.5; peers §0.1);
//   - index keys: 128 values E2M1 (64 B) + 4 UE8M0 scales, one per 32 =
//     68 B (§3.3 E8M0 path);
//   - SWA window KV: 512 values E4M3 (512 B) + 16 UE8M0 scales, one per 32 =
//     528 B (§3.2, §15.6: all 512 dims incl. the rope tail).
// Page layouts (tokensPerPage is a parameter; peers use 64 and 256):
//   - TokenInterleaved: token t of a page at t*entryBytes as [data | scales]
//     (FlashMLA kv_cache_format.h style);
//   - PagePlanar: all data rows of the page, then all scale rows: data of t
//     at t*dataBytes, scales at tokensPerPage*dataBytes + t*scaleBytes
//     (vLLM V4.1 / TRT-LLM page-footer style).
//   Both give pageBytes = tokensPerPage * entryBytes.
// Invariants: entryBytes == dataBytes + scaleBytes; values % tile == 0; E2M1
// data holds two values per byte (even element in the low nibble). Decoding
// an encoded record gives exactly the reference's QDQ values (as fp32 that
// are bf16 values).
//===----------------------------------------------------------------------===//
#ifndef DSC_NUMERICS_KVLAYOUT_H
#define DSC_NUMERICS_KVLAYOUT_H

#include "dsc/numerics/Quantize.h"

namespace dsc::numerics {

enum class KvValueType : uint8_t { E2M1 = 0, E4M3 = 1 };
enum class KvScaleType : uint8_t { E4M3 = 0, UE8M0 = 1 };
enum class KvPageOrder : uint8_t { TokenInterleaved = 0, PagePlanar = 1 };

/// One token's packed record. All sizes are stored (layout as data) and
/// checked by isValid().
struct KvRecordFormat {
  int32_t valuesPerEntry = 0; ///< values of one token (head dim)
  int32_t valuesPerTile = 0;  ///< values per scale
  KvValueType valueType = KvValueType::E2M1;
  KvScaleType scaleType = KvScaleType::E4M3;
  int32_t dataBytes = 0;  ///< packed values
  int32_t scaleBytes = 0; ///< one byte per tile
  int32_t entryBytes = 0; ///< dataBytes + scaleBytes

  DSC_HD constexpr int32_t tiles() const {
    return valuesPerTile > 0 ? valuesPerEntry / valuesPerTile : 0;
  }
  /// Sizes consistent, a supported (value, scale) pair, tiles whole and
  /// byte-aligned.
  DSC_HD constexpr bool isValid() const {
    if (valuesPerEntry <= 0 || valuesPerTile <= 0 || valuesPerEntry % valuesPerTile != 0)
      return false;
    const bool fp4 = valueType == KvValueType::E2M1;
    if (fp4 && valuesPerTile % 2 != 0)
      return false;
    if (valueType == KvValueType::E4M3 && scaleType != KvScaleType::UE8M0)
      return false; // no quantiser for E4M3 values with E4M3 scales
    return dataBytes == (fp4 ? valuesPerEntry / 2 : valuesPerEntry) &&
           scaleBytes == valuesPerEntry / valuesPerTile &&
           entryBytes == dataBytes + scaleBytes;
  }
  DSC_HD constexpr bool operator==(const KvRecordFormat &o) const {
    return valuesPerEntry == o.valuesPerEntry && valuesPerTile == o.valuesPerTile &&
           valueType == o.valueType && scaleType == o.scaleType &&
           dataBytes == o.dataBytes && scaleBytes == o.scaleBytes &&
           entryBytes == o.entryBytes;
  }
};

/// Fills in the derived sizes.
DSC_HD constexpr KvRecordFormat makeKvRecordFormat(int32_t values, int32_t tile,
                                                   KvValueType vt, KvScaleType st) {
  KvRecordFormat f;
  f.valuesPerEntry = values;
  f.valuesPerTile = tile;
  f.valueType = vt;
  f.scaleType = st;
  f.dataBytes = vt == KvValueType::E2M1 ? values / 2 : values;
  f.scaleBytes = tile > 0 ? values / tile : 0;
  f.entryBytes = f.dataBytes + f.scaleBytes;
  return f;
}

/// Released head_dim and index_head_dim (reference-spec §2.1).
inline constexpr int32_t kReleasedHeadDim = 512;
inline constexpr int32_t kReleasedIndexHeadDim = 128;

/// Main (compressed) KV record for head dim `headDim`: E2M1 + E4M3 per 16.
DSC_HD constexpr KvRecordFormat mainKvFormat(int32_t headDim = kReleasedHeadDim) {
  return makeKvRecordFormat(headDim, kFp4E4M3Block, KvValueType::E2M1, KvScaleType::E4M3);
}
/// Index-key record for `indexHeadDim`: E2M1 + UE8M0 per 32.
DSC_HD constexpr KvRecordFormat indexKeyFormat(int32_t indexHeadDim = kReleasedIndexHeadDim) {
  return makeKvRecordFormat(indexHeadDim, kFp4E8M0Block, KvValueType::E2M1,
                            KvScaleType::UE8M0);
}
/// SWA window KV record for `headDim`: E4M3 + UE8M0 per 32.
DSC_HD constexpr KvRecordFormat swaKvFormat(int32_t headDim = kReleasedHeadDim) {
  return makeKvRecordFormat(headDim, kFp8ActBlock, KvValueType::E4M3, KvScaleType::UE8M0);
}

/// The released records as host constants. Device code cannot ODR-use a
/// namespace-scope object of class type: it calls mainKvFormat() etc.
inline constexpr KvRecordFormat kMainKvRecord = mainKvFormat();
inline constexpr KvRecordFormat kIndexKeyRecord = indexKeyFormat();
inline constexpr KvRecordFormat kSwaKvRecord = swaKvFormat();
static_assert(kMainKvRecord.entryBytes == 288 && kMainKvRecord.dataBytes == 256 &&
                  kMainKvRecord.scaleBytes == 32 && kMainKvRecord.isValid(),
              "main KV: 256 B E2M1 + 32 B E4M3 (reference-spec §3.5)");
static_assert(kIndexKeyRecord.entryBytes == 68 && kIndexKeyRecord.dataBytes == 64 &&
                  kIndexKeyRecord.scaleBytes == 4 && kIndexKeyRecord.isValid(),
              "index keys: 64 B E2M1 + 4 B UE8M0 (reference-spec §3.5)");
static_assert(kSwaKvRecord.entryBytes == 528 && kSwaKvRecord.dataBytes == 512 &&
                  kSwaKvRecord.scaleBytes == 16 && kSwaKvRecord.isValid(),
              "SWA KV: 512 B E4M3 + 16 B UE8M0 (peers §0.1)");

/// A record format placed in pages.
struct KvPageLayout {
  KvRecordFormat format;
  int32_t tokensPerPage = 0;
  KvPageOrder order = KvPageOrder::TokenInterleaved;

  DSC_HD constexpr bool isValid() const { return format.isValid() && tokensPerPage > 0; }
  DSC_HD constexpr int64_t pageBytes() const {
    return static_cast<int64_t>(tokensPerPage) * format.entryBytes;
  }
  /// Byte offset of slot `slot`'s packed values inside its page.
  DSC_HD constexpr int64_t dataOffset(int32_t slot) const {
    return order == KvPageOrder::TokenInterleaved
               ? static_cast<int64_t>(slot) * format.entryBytes
               : static_cast<int64_t>(slot) * format.dataBytes;
  }
  /// Byte offset of slot `slot`'s scale bytes inside its page.
  DSC_HD constexpr int64_t scaleOffset(int32_t slot) const {
    return order == KvPageOrder::TokenInterleaved
               ? static_cast<int64_t>(slot) * format.entryBytes + format.dataBytes
               : static_cast<int64_t>(tokensPerPage) * format.dataBytes +
                     static_cast<int64_t>(slot) * format.scaleBytes;
  }
  /// Byte offsets of token `token` in a pool of pages. `pageTable` maps the
  /// logical page token/tokensPerPage to a physical page index; null means
  /// the identity (pages stored in order).
  DSC_HD constexpr int64_t tokenDataOffset(int64_t token, const int32_t *pageTable = nullptr) const {
    const int64_t logical = token / tokensPerPage;
    const int64_t page = pageTable ? pageTable[logical] : logical;
    return page * pageBytes() + dataOffset(static_cast<int32_t>(token % tokensPerPage));
  }
  DSC_HD constexpr int64_t tokenScaleOffset(int64_t token, const int32_t *pageTable = nullptr) const {
    const int64_t logical = token / tokensPerPage;
    const int64_t page = pageTable ? pageTable[logical] : logical;
    return page * pageBytes() + scaleOffset(static_cast<int32_t>(token % tokensPerPage));
  }
};

/// Quantises one token's `format.valuesPerEntry` values into its packed
/// values (`data`, dataBytes) and scale bytes (`scales`, scaleBytes).
/// Returns false for an invalid format.
DSC_HD constexpr bool encodeKvRecord(const KvRecordFormat &format, const float *values,
                                     uint8_t *data, uint8_t *scales) {
  if (!format.isValid())
    return false;
  const int tile = format.valuesPerTile;
  for (int t = 0; t < format.tiles(); ++t) {
    const float *x = values + t * tile;
    if (format.valueType == KvValueType::E4M3) {
      scales[t] = quantizeFp8Block(x, tile, data + t * tile);
    } else if (format.scaleType == KvScaleType::UE8M0) {
      scales[t] = quantizeFp4E8M0Block(x, tile, data + t * tile / 2);
    } else {
      scales[t] = quantizeFp4E4M3Block(x, tile, data + t * tile / 2);
    }
  }
  return true;
}

/// Decodes one token's record into `values` (valuesPerEntry floats, each
/// the exact product code*scale). Returns false for an invalid format.
DSC_HD constexpr bool decodeKvRecord(const KvRecordFormat &format, const uint8_t *data,
                                     const uint8_t *scales, float *values) {
  if (!format.isValid())
    return false;
  const int tile = format.valuesPerTile;
  for (int t = 0; t < format.tiles(); ++t) {
    float *y = values + t * tile;
    const float s = format.scaleType == KvScaleType::UE8M0 ? ue8m0ToFloat(scales[t])
                                                           : e4m3ToFloat(scales[t]);
    if (format.valueType == KvValueType::E4M3)
      dequantizeFp8Block(data + t * tile, scales[t], tile, y);
    else
      dequantizeFp4Block(data + t * tile / 2, s, tile, y);
  }
  return true;
}

/// Copies one token's record between two page pools (same record format).
DSC_HD constexpr void copyKvToken(const KvPageLayout &src, const uint8_t *srcPool,
                                  const int32_t *srcPageTable, int64_t srcToken,
                                  const KvPageLayout &dst, uint8_t *dstPool,
                                  const int32_t *dstPageTable, int64_t dstToken) {
  const uint8_t *sd = srcPool + src.tokenDataOffset(srcToken, srcPageTable);
  const uint8_t *ss = srcPool + src.tokenScaleOffset(srcToken, srcPageTable);
  uint8_t *dd = dstPool + dst.tokenDataOffset(dstToken, dstPageTable);
  uint8_t *ds = dstPool + dst.tokenScaleOffset(dstToken, dstPageTable);
  for (int32_t i = 0; i < src.format.dataBytes; ++i)
    dd[i] = sd[i];
  for (int32_t i = 0; i < src.format.scaleBytes; ++i)
    ds[i] = ss[i];
}

} // namespace dsc::numerics

#if !defined(__CUDACC_RTC__)
#include <string>

namespace dsc::numerics {

/// Host: converts tokens [0, numTokens) of a page pool from one layout to
/// another (interleaved <-> planar and/or a different tokensPerPage). The
/// record formats must be equal. Page tables may be null (identity); the
/// destination pool must hold every page the tokens map to. Bytes of the
/// destination that no token owns are left untouched. Returns an empty
/// string on success, else what is wrong.
std::string convertKvPages(const KvPageLayout &src, const uint8_t *srcPool,
                           const int32_t *srcPageTable, const KvPageLayout &dst,
                           uint8_t *dstPool, const int32_t *dstPageTable, int64_t numTokens);

/// Host: number of pages that hold `numTokens` tokens.
int64_t kvPagesFor(const KvPageLayout &layout, int64_t numTokens);

/// Host: a one-line description, e.g. "E2M1/E4M3x16 288 B x 64 tokens, interleaved".
std::string describe(const KvPageLayout &layout);

} // namespace dsc::numerics
#endif

#endif // DSC_NUMERICS_KVLAYOUT_H
