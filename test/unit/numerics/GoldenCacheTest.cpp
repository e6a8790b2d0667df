//===- GoldenCacheTest.cpp - Packed records reproduce the golden caches ---===//
//
// The golden caches hold the reference's bf16 QDQ values right after
// prefill (golden/README.md): `prefill.cache.L.window_kv` (SWA ring, FP8 +
// UE8M0/32), `.compress_kv` (FP4 + E4M3/16) and `.index_k` (FP4 +
// UE8M0/32). Quantising those values into packed records with dsc's encoders
// and decoding back must give the stored bits exactly: QDQ of QDQ values is
// a fixed point only if the scale rounding is the reference's, so this is a
// strong check of the scale rules. The README's cache gate ("your packed
// bytes decode exactly to the stored QDQ values") is this test.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/KvLayout.h"
#include "dsc/runtime/Safetensors.h"
#include "test/unit/support/SharedDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace dsc::numerics;
using dsc::runtime::DType;
using dsc::runtime::SafetensorsFile;
using dsc::runtime::TensorView;

namespace {

struct CacheStats {
  int tensors = 0;
  int64_t rows = 0, values = 0, nonzero = 0, mismatches = 0;
};

/// Encodes every row of a bf16 [rows, width] tensor with `format`, decodes,
/// rounds to bf16 and compares with the stored bits.
void checkTensor(const TensorView &t, const KvRecordFormat &format, CacheStats &stats) {
  ASSERT_EQ(t.dtype, DType::BF16) << t.name;
  ASSERT_EQ(t.shape.size(), 2u) << t.name;
  ASSERT_EQ(t.shape[1], format.valuesPerEntry) << t.name;
  ASSERT_TRUE(format.isValid());
  const auto stored = t.as<uint16_t>();
  const int width = format.valuesPerEntry;
  std::vector<float> in(width), out(width);
  std::vector<uint8_t> data(format.dataBytes), scales(format.scaleBytes);
  ++stats.tensors;
  for (int64_t r = 0; r < t.shape[0]; ++r) {
    for (int i = 0; i < width; ++i)
      in[i] = bf16ToFloat(stored[r * width + i]);
    ASSERT_TRUE(encodeKvRecord(format, in.data(), data.data(), scales.data()));
    ASSERT_TRUE(decodeKvRecord(format, data.data(), scales.data(), out.data()));
    ++stats.rows;
    for (int i = 0; i < width; ++i) {
      ++stats.values;
      stats.nonzero += in[i] != 0.0f;
      const uint16_t got = bf16FromFloat(out[i]);
      if (got != stored[r * width + i] && ++stats.mismatches <= 5)
        ADD_FAILURE() << t.name << " row " << r << " col " << i << ": stored 0x" << std::hex
                      << stored[r * width + i] << ", decoded 0x" << got;
    }
  }
}

struct CaseDims {
  const char *name;
  int headDim, indexHeadDim, layers;
};

void checkCase(const CaseDims &c) {
  auto file = SafetensorsFile::open(
      dsc::test::sharedPath(std::string("golden/") + c.name + "/expected.safetensors"));
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  CacheStats window, compressed, index;
  for (int L = 0; L < c.layers; ++L) {
    const std::string prefix = "prefill.cache." + std::to_string(L) + ".";
    const TensorView *w = file->find(prefix + "window_kv");
    ASSERT_NE(w, nullptr) << prefix << "window_kv";
    checkTensor(*w, swaKvFormat(c.headDim), window);
    if (const TensorView *ckv = file->find(prefix + "compress_kv"))
      checkTensor(*ckv, mainKvFormat(c.headDim), compressed);
    if (const TensorView *ik = file->find(prefix + "index_k"))
      checkTensor(*ik, indexKeyFormat(c.indexHeadDim), index);
  }
  for (const CacheStats *s : {&window, &compressed, &index}) {
    EXPECT_EQ(s->mismatches, 0);
    EXPECT_GT(s->nonzero, s->values / 2) << "the caches should hold real data";
  }
  // Every KV source has both caches.
  EXPECT_EQ(compressed.tensors, index.tensors);
  EXPECT_GT(compressed.tensors, 0);
  EXPECT_EQ(window.tensors, c.layers);
}

} // namespace

// tiny40: head_dim 64, index_head_dim 32, 40 backbone layers, KV sources
// 2, 8, 14, 20. tiny6: head_dim 128, index_head_dim 64, 6 layers, sources 1, 3.
TEST(NumericsGoldenCaches, Tiny40PackedRecordsDecodeToStoredQdq) {
  checkCase({"tiny40", 64, 32, 40});
}

TEST(NumericsGoldenCaches, Tiny6PackedRecordsDecodeToStoredQdq) {
  checkCase({"tiny6", 128, 64, 6});
}

TEST(NumericsGoldenCaches, QdqIsAFixedPointOnStoredValues) {
  // The row QDQ functions (the CPU backend's path) agree with the records.
  auto file = SafetensorsFile::open(dsc::test::sharedPath("golden/tiny6/expected.safetensors"));
  ASSERT_TRUE(file.hasValue());
  const TensorView *ckv = file->find("prefill.cache.3.compress_kv");
  const TensorView *ik = file->find("prefill.cache.3.index_k");
  const TensorView *w = file->find("prefill.cache.3.window_kv");
  ASSERT_TRUE(ckv && ik && w);
  auto check = [](const TensorView &t, void (*qdq)(const float *, int, int, float *), int block) {
    const auto s = t.as<uint16_t>();
    std::vector<float> in(s.size()), out(s.size());
    for (size_t i = 0; i < s.size(); ++i)
      in[i] = bf16ToFloat(s[i]);
    const int width = static_cast<int>(t.shape[1]);
    for (int64_t r = 0; r < t.shape[0]; ++r)
      qdq(in.data() + r * width, width, block, out.data() + r * width);
    for (size_t i = 0; i < s.size(); ++i)
      ASSERT_EQ(bf16FromFloat(out[i]), s[i]) << t.name << " element " << i;
  };
  check(*ckv, qdqFp4E4M3Row, kFp4E4M3Block);
  check(*ik, qdqFp4E8M0Row, kFp4E8M0Block);
  check(*w, qdqFp8Row, kFp8ActBlock);
}

TEST(NumericsGoldenCaches, WrongScaleRuleBreaksTheFixedPoint) {
  // Negative control: storing the main KV with power-of-two (UE8M0, ceil)
  // scales instead of RNE E4M3 scales does NOT reproduce the stored values,
  // so the tests above can fail.
  auto file = SafetensorsFile::open(dsc::test::sharedPath("golden/tiny6/expected.safetensors"));
  ASSERT_TRUE(file.hasValue());
  const TensorView *ckv = file->find("prefill.cache.3.compress_kv");
  ASSERT_NE(ckv, nullptr);
  const KvRecordFormat wrong =
      makeKvRecordFormat(128, 16, KvValueType::E2M1, KvScaleType::UE8M0);
  const auto s = ckv->as<uint16_t>();
  std::vector<float> in(128), out(128);
  std::vector<uint8_t> data(wrong.dataBytes), scales(wrong.scaleBytes);
  int64_t mismatches = 0;
  for (int64_t r = 0; r < ckv->shape[0]; ++r) {
    for (int i = 0; i < 128; ++i)
      in[i] = bf16ToFloat(s[r * 128 + i]);
    encodeKvRecord(wrong, in.data(), data.data(), scales.data());
    decodeKvRecord(wrong, data.data(), scales.data(), out.data());
    for (int i = 0; i < 128; ++i)
      mismatches += bf16FromFloat(out[i]) != s[r * 128 + i];
  }
  EXPECT_GT(mismatches, 1000);
}
