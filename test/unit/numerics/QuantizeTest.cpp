//===- QuantizeTest.cpp - Block quantisers vs hand calculation and numpy --===//
//
// Hand cases are worked out in the comments. The numpy reference rounds by
// nearest-table-entry search with ties to the even code and computes
// power-of-two scales with log2/ceil in float64 -- a different algorithm
// from the bit manipulation under test. Weight dequantisation is checked
// against numpy decoding the golden checkpoint bytes directly.
//===----------------------------------------------------------------------===//
#include "dsc/numerics/Quantize.h"
#include "dsc/runtime/Safetensors.h"
#include "test/unit/numerics/NumpyRunner.h"
#include "test/unit/support/SharedDir.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

using namespace dsc::numerics;

namespace {
float p2(int k) { return std::ldexp(1.0f, k); }
uint32_t bits(float x) { return floatBits(x); }
} // namespace

TEST(NumericsQuantizeFp8, HandBlock) {
  // amax 100: t = 100/448 = 0.223 -> s = 0.25 (UE8M0 125).
  //  0.5/0.25 = 2 -> 0x40; -1.75/0.25 = -7 -> 0xce; 3.3/0.25 = 13.2 -> 13
  //  (0x55) -> 3.25; 100/0.25 = 400: tie 384 | 416 -> 384 (0x7c) -> 96.
  const float x[4] = {0.5f, -1.75f, 3.3f, 100.0f};
  uint8_t q[4] = {};
  EXPECT_EQ(quantizeFp8Block(x, 4, q), 125);
  EXPECT_EQ(q[0], 0x40);
  EXPECT_EQ(q[1], 0xce);
  EXPECT_EQ(q[2], 0x55);
  EXPECT_EQ(q[3], 0x7c);
  float y[4];
  qdqFp8Block(x, 4, y);
  EXPECT_EQ(y[0], 0.5f);
  EXPECT_EQ(y[1], -1.75f);
  EXPECT_EQ(y[2], 3.25f);
  EXPECT_EQ(y[3], 96.0f);
  float d[4];
  dequantizeFp8Block(q, 125, 4, d);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(bits(d[i]), bits(y[i]));
}

TEST(NumericsQuantizeFp8, AmaxPowerOfTwoAndTiny) {
  // amax = 1 (a power of two): s = 2^-8, so 1 -> 256 (0x78), and 2^-17 -> 2^-9
  // (code 0x01), 2^-18 -> tie 0 | 2^-9 -> 0 (keeps the sign).
  const float x[4] = {1.0f, p2(-17), -p2(-18), -1.0f};
  uint8_t q[4] = {};
  EXPECT_EQ(quantizeFp8Block(x, 4, q), 127 - 8);
  EXPECT_EQ(q[0], 0x78);
  EXPECT_EQ(q[1], 0x01);
  EXPECT_EQ(q[2], 0x80);
  EXPECT_EQ(q[3], 0xf8);
  // All values below the 1e-4 floor: s = 2^-22; 5e-5/2^-22 = 209.7 -> 208.
  const float t[2] = {5e-5f, 0.0f};
  float y[2];
  qdqFp8Block(t, 2, y);
  EXPECT_EQ(y[0], 208.0f * p2(-22));
  EXPECT_EQ(bits(y[1]), 0u);
}

TEST(NumericsQuantizeFp4E8M0, HandBlock) {
  // amax 2.9: 2.9/6 = 0.483 -> s = 0.5 (UE8M0 126). 0.3/0.5 = 0.6 -> 0.5
  // (code 1); -0.1/0.5 = -0.2 -> -0 (code 8); 2.9/0.5 = 5.8 -> 6 (7);
  // 1.2/0.5 = 2.4 -> 2 (4). Bytes: 0x81, 0x47 (even element low nibble).
  const float x[4] = {0.3f, -0.1f, 2.9f, 1.2f};
  uint8_t packed[2] = {};
  EXPECT_EQ(quantizeFp4E8M0Block(x, 4, packed), 126);
  EXPECT_EQ(packed[0], 0x81);
  EXPECT_EQ(packed[1], 0x47);
  float y[4];
  qdqFp4E8M0Block(x, 4, y);
  EXPECT_EQ(y[0], 0.25f);
  EXPECT_EQ(bits(y[1]), 0x80000000u);
  EXPECT_EQ(y[2], 3.0f);
  EXPECT_EQ(y[3], 1.0f);
  float d[4];
  dequantizeFp4E8M0Block(packed, 126, 4, d);
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(bits(d[i]), bits(y[i]));
  EXPECT_EQ(fp4CodeAt(packed, 0), 0x1);
  EXPECT_EQ(fp4CodeAt(packed, 1), 0x8);
  EXPECT_EQ(fp4CodeAt(packed, 2), 0x7);
  EXPECT_EQ(fp4CodeAt(packed, 3), 0x4);
}

TEST(NumericsQuantizeFp4E4M3, HandBlock) {
  // amax 1: 1/6 -> E4M3 0.171875 (0x23). 1/s = 5.818 -> 6 -> 1.03125;
  // -0.7/s = -4.07 -> -4 -> -0.6875; 0.1/s = 0.58 -> 0.5 -> 0.0859375.
  float x[16] = {1.0f, -0.7f, 0.1f};
  uint8_t packed[8] = {};
  EXPECT_EQ(quantizeFp4E4M3Block(x, 16, packed), 0x23);
  EXPECT_EQ(packed[0], 0xe7);
  EXPECT_EQ(packed[1], 0x01);
  for (int i = 2; i < 8; ++i)
    EXPECT_EQ(packed[i], 0);
  float y[16];
  qdqFp4E4M3Block(x, 16, y);
  EXPECT_EQ(y[0], 1.03125f);
  EXPECT_EQ(y[1], -0.6875f);
  EXPECT_EQ(y[2], 0.0859375f);
  EXPECT_EQ(y[3], 0.0f);
}

TEST(NumericsQuantizeFp4E4M3, BelowFloorAndNaN) {
  // amax 1e-3 < 6*2^-9: s = 2^-9; 1e-3/2^-9 = 0.512 -> 0.5 -> 2^-10.
  float x[16];
  for (float &v : x)
    v = 1e-3f;
  float y[16];
  qdqFp4E4M3Block(x, 16, y);
  EXPECT_EQ(y[0], p2(-10));
  uint8_t packed[8];
  EXPECT_EQ(quantizeFp4E4M3Block(x, 16, packed), 0x01);
  // A NaN anywhere makes the scale NaN (peers §0.1).
  x[5] = NAN;
  EXPECT_EQ(quantizeFp4E4M3Block(x, 16, packed), 0x7f);
  qdqFp4E4M3Block(x, 16, y);
  EXPECT_TRUE(std::isnan(y[0]));
}

TEST(NumericsQuantizeFp4E8M0, BelowFloor) {
  // All zero: s = 2^-126; codes 0; QDQ 0.
  float x[32] = {};
  x[3] = -0.0f;
  uint8_t packed[16];
  EXPECT_EQ(quantizeFp4E8M0Block(x, 32, packed), 1);
  float y[32];
  qdqFp4E8M0Block(x, 32, y);
  EXPECT_EQ(bits(y[0]), 0u);
  EXPECT_EQ(bits(y[3]), 0x80000000u);
}

TEST(NumericsQuantizeWeights, BlockScaledDotOrder) {
  // Two K blocks: sum_k a*b per block, then * aScale * bScale, in K order.
  std::vector<float> a(64, 1.0f), b(64, 2.0f);
  const float as[2] = {0.5f, 4.0f}, bs[2] = {2.0f, 0.25f};
  EXPECT_EQ(blockScaledDot(a.data(), as, b.data(), bs, 64), 64.0f * 1.0f + 64.0f * 1.0f);
}

// numpy reference for QDQ of random blocks (all three quantisers).
namespace {
const char *kQdqScript = R"PY(
import sys, numpy as np
x = np.fromfile(sys.argv[1], dtype=np.float32)
mode = sys.argv[3]
block = {'fp8': 32, 'e8m0': 32, 'e4m3': 16}[mode]
x = x.reshape(-1, block)
def e4m3_table():
    v = []
    for c in range(0x7f):
        e, m = c >> 3, c & 7
        v.append(m * 2.0**-9 if e == 0 else (1 + m / 8) * 2.0**(e - 7))
    return np.array(v)
E4M3 = e4m3_table()
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6])
def nearest(mag, table):
    # index of the nearest entry, ties to the even index (= even code)
    i = np.clip(np.searchsorted(table, mag), 1, len(table) - 1)
    lo, hi = table[i - 1], table[i]
    up = (hi - mag < mag - lo) | ((hi - mag == mag - lo) & (i % 2 == 0))
    c = np.where(up, i, i - 1)
    return np.where(mag >= table[-1], len(table) - 1, c)
def quant(v, table):
    v64 = v.astype(np.float64)
    return np.where(np.signbit(v), -1.0, 1.0) * table[nearest(np.abs(v64), table)]
def pow2_ceil(t):
    return np.float32(2.0) ** np.ceil(np.log2(t.astype(np.float64))).astype(np.float32)
amax = np.abs(x).max(axis=1)
if mode == 'fp8':
    s = pow2_ceil(np.maximum(amax, np.float32(1e-4)) * np.float32(1 / 448))
    table = E4M3
elif mode == 'e8m0':
    s = pow2_ceil(np.maximum(amax, np.float32(6 * 2.0**-126)) * np.float32(1 / 6))
    table = E2M1
else:
    a = np.maximum(amax, np.float32(6 * 2.0**-9)) / np.float32(6)
    s = E4M3[nearest(a.astype(np.float64), E4M3)].astype(np.float32)
    table = E2M1
s = s.astype(np.float32)[:, None]
v = x / s                                   # fp32 true division
y = (quant(v, table).astype(np.float32) * s).astype(np.float32)
u = y.view(np.uint32).astype(np.uint64)
u = ((u + 0x7fff + ((u >> 16) & 1)) >> 16) << 16   # bf16 RNE (no NaN here)
u.astype(np.uint32).tofile(sys.argv[2])
)PY";

/// Random blocks with a wide exponent range, exact ties, zeros, tiny blocks.
std::vector<float> randomBlocks(int blocks, int block, uint32_t seed, float tieUnit) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::uniform_int_distribution<int> expo(-30, 12), pick(0, 9);
  std::vector<float> x;
  for (int b = 0; b < blocks; ++b) {
    const float scale = std::ldexp(1.0f, expo(rng));
    const int kind = pick(rng);
    for (int i = 0; i < block; ++i) {
      float v = normal(rng) * scale;
      if (kind == 0)
        v = 0.0f;
      else if (kind == 1) // exact grid midpoints times a power of two
        v = static_cast<float>(static_cast<int>(rng() % 24) - 12) * tieUnit * scale;
      else if (kind == 2)
        v = normal(rng) * 1e-6f; // below the FP8 and FP4/E4M3 floors
      x.push_back(v);
    }
  }
  return x;
}

void compareWithNumpy(const char *mode, int block, void (*qdq)(const float *, int, float *),
                      float tieUnit) {
  DSC_REQUIRE_NUMPY(python);
  dsc::test::ScratchDir dir(mode);
  const std::vector<float> x = randomBlocks(4000, block, 1234, tieUnit);
  dsc::test::writeRaw(dir.file("x.bin"), x);
  ASSERT_EQ(dsc::test::runPython(python, dir, kQdqScript,
                                 dir.file("x.bin") + " " + dir.file("y.bin") + " " + mode),
            0);
  const std::vector<uint32_t> expected = dsc::test::readRaw<uint32_t>(dir.file("y.bin"));
  ASSERT_EQ(expected.size(), x.size());
  std::vector<float> y(x.size());
  for (size_t b = 0; b < x.size(); b += block)
    qdq(x.data() + b, block, y.data() + b);
  int mismatches = 0;
  for (size_t i = 0; i < x.size(); ++i)
    if (bits(y[i]) != expected[i] && ++mismatches <= 10)
      ADD_FAILURE() << mode << " element " << i << " x=" << x[i] << ": dsc " << y[i]
                    << " numpy " << floatFromBits(expected[i]);
  EXPECT_EQ(mismatches, 0);
}
} // namespace

TEST(NumericsQuantizeVsNumpy, Fp8Act) { compareWithNumpy("fp8", 32, qdqFp8Block, 0.5f); }
TEST(NumericsQuantizeVsNumpy, Fp4E8M0) { compareWithNumpy("e8m0", 32, qdqFp4E8M0Block, 0.25f); }
TEST(NumericsQuantizeVsNumpy, Fp4E4M3) { compareWithNumpy("e4m3", 16, qdqFp4E4M3Block, 0.25f); }

TEST(NumericsQuantizeVsNumpy, GoldenWeightsDequantise) {
  DSC_REQUIRE_NUMPY(python);
  const std::string model = dsc::test::sharedPath("golden/tiny6/model.safetensors");
  auto file = dsc::runtime::SafetensorsFile::open(model);
  ASSERT_TRUE(file.hasValue()) << file.status().message();
  const char *fp8 = "layers.0.attn.wq_a", *fp4 = "layers.0.ffn.experts.0.w1";
  const auto *w8 = file->find(std::string(fp8) + ".weight");
  const auto *s8 = file->find(std::string(fp8) + ".scale");
  const auto *w4 = file->find(std::string(fp4) + ".weight");
  const auto *s4 = file->find(std::string(fp4) + ".scale");
  ASSERT_TRUE(w8 && s8 && w4 && s4);

  const char *script = R"PY(
import sys, json, struct, numpy as np
path, out8, out4, n8, n4 = sys.argv[1:6]
f = open(path, 'rb'); n = struct.unpack('<Q', f.read(8))[0]
h = json.loads(f.read(n)); data = f.read()
def get(name, dt):
    e = h[name]; b, t = e['data_offsets']
    return np.frombuffer(data[b:t], dtype=dt).reshape(e['shape'])
def e4m3(c):
    c = c.astype(np.int64); s = np.where(c & 0x80, -1.0, 1.0); e = (c >> 3) & 15; m = c & 7
    return s * np.where(e == 0, m * 2.0**-9, (1 + m / 8) * 2.0**(e - 7))
def e8m0(c): return 2.0 ** (c.astype(np.float64) - 127)
E2M1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6])
w = get(n8 + '.weight', np.uint8); s = get(n8 + '.scale', np.uint8)
S = np.repeat(np.repeat(e8m0(s), 32, 0), 32, 1)[:w.shape[0], :w.shape[1]]
(e4m3(w) * S).astype(np.float32).tofile(out8)
w = get(n4 + '.weight', np.uint8); s = get(n4 + '.scale', np.uint8)
v = np.stack([E2M1[w & 15], E2M1[w >> 4]], -1).reshape(w.shape[0], -1)
(v * np.repeat(e8m0(s), 32, 1)).astype(np.float32).tofile(out4)
)PY";
  dsc::test::ScratchDir dir("weights");
  ASSERT_EQ(dsc::test::runPython(python, dir, script,
                                 model + " " + dir.file("w8.bin") + " " + dir.file("w4.bin") +
                                     " " + fp8 + " " + fp4),
            0);
  const auto e8 = dsc::test::readRaw<uint32_t>(dir.file("w8.bin"));
  const auto e4 = dsc::test::readRaw<uint32_t>(dir.file("w4.bin"));

  const int64_t N8 = w8->shape[0], K8 = w8->shape[1];
  std::vector<float> d8(static_cast<size_t>(N8 * K8));
  dequantizeFp8Weight(reinterpret_cast<const uint8_t *>(w8->bytes.data()),
                      reinterpret_cast<const uint8_t *>(s8->bytes.data()), N8, K8, d8.data());
  ASSERT_EQ(e8.size(), d8.size());
  for (size_t i = 0; i < d8.size(); ++i)
    ASSERT_EQ(bits(d8[i]), e8[i]) << "fp8 weight element " << i;

  const int64_t N4 = w4->shape[0], K4 = w4->shape[1] * 2;
  std::vector<float> d4(static_cast<size_t>(N4 * K4));
  dequantizeFp4Weight(reinterpret_cast<const uint8_t *>(w4->bytes.data()),
                      reinterpret_cast<const uint8_t *>(s4->bytes.data()), N4, K4, d4.data());
  ASSERT_EQ(e4.size(), d4.size());
  for (size_t i = 0; i < d4.size(); ++i)
    ASSERT_EQ(bits(d4[i]), e4[i]) << "fp4 weight element " << i;
  // Non-trivial data: some nonzero values of both signs.
  EXPECT_GT(*std::max_element(d4.begin(), d4.end()), 0.0f);
  EXPECT_LT(*std::min_element(d8.begin(), d8.end()), 0.0f);
}
