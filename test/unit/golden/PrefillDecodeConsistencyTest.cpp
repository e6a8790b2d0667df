//===- PrefillDecodeConsistencyTest.cpp - prefill(N)+decode vs prefill(N+1) -===//
//
// The property of issue 4: for a prompt of N+1 tokens, prefill of N tokens
// followed by one decode step must agree with a prefill of all N+1 tokens at
// the last position, block by block. Boundaries are forced from the
// prefill-(N+1) run (its rows 0..N-1 in the short prefill, row N in the
// decode step), so every block sees the same inputs and its own state; the
// gates are the golden README's CPU gates (block ≤ 5e-3), plus identical
// top-k sets. The two paths do not perform the same operations in the same
// order (window lists and softmax blocks differ), so bit-equality is not
// asserted. N covers odd lengths (partial compressor groups) and lengths
// below the window.
//===----------------------------------------------------------------------===//
#include "GoldenHarness.h"

#include "dsc/numerics/ScalarCodecs.h"

#include "../support/SharedDir.h"

#include <gtest/gtest.h>

#include <cstring>
#include <map>

using namespace dsc;
using namespace dsc::test;
using runtime::HostTensor;

namespace {

/// Records every block's stream and mix, and every top-k, of one call.
class Recorder : public runtime::SessionObserver {
public:
  std::map<int64_t, HostTensor> stream, mix;
  std::map<int64_t, std::vector<int32_t>> topk; ///< rows × k, per index source
  std::map<int64_t, int64_t> topkWidth;

  void afterLaunch(const runtime::CallInfo &, const runtime::Program &,
                   const runtime::Launch &launch, const runtime::KernelSpec &kernel,
                   std::span<const HostTensor *const> outputs) override {
    if (kernel.name != "indexer_topk")
      return;
    const HostTensor &t = *outputs[0];
    topk[launch.layer].assign(t.data<int32_t>(), t.data<int32_t>() + t.numElements());
    topkWidth[launch.layer] = t.dim(1);
  }
  runtime::Status atBoundary(const runtime::CallInfo &, int64_t layer, HostTensor &s,
                             HostTensor &m) override {
    stream[layer] = copy(s);
    mix[layer] = copy(m);
    return runtime::Status::ok();
  }
  static HostTensor copy(const HostTensor &t) {
    HostTensor out(t.dtype(), t.shape());
    std::memcpy(out.bytes(), t.bytes(), t.byteSize());
    return out;
  }
};

/// Forces rows [first, first + S) of a recorded run and compares the block's
/// own output row by row with the recording before forcing.
class RowForcer : public runtime::SessionObserver {
public:
  RowForcer(const Recorder &reference, int64_t first) : ref_(reference), first_(first) {}
  std::map<int64_t, double> errors; ///< block error of this call's rows
  Recorder seen;

  void afterLaunch(const runtime::CallInfo &c, const runtime::Program &p, const runtime::Launch &l,
                   const runtime::KernelSpec &k, std::span<const HostTensor *const> o) override {
    seen.afterLaunch(c, p, l, k, o);
  }
  runtime::Status atBoundary(const runtime::CallInfo &, int64_t layer, HostTensor &s,
                             HostTensor &m) override {
    const HostTensor &rs = ref_.stream.at(layer), &rm = ref_.mix.at(layer);
    int64_t rows = s.dim(0), width = s.numElements() / rows, mixWidth = m.numElements() / rows;
    std::vector<float> a(rows * width), b(rows * width);
    for (int64_t i = 0; i < rows * width; ++i) {
      a[i] = numerics::bf16ToFloat(s.data<uint16_t>()[i]);
      b[i] = numerics::bf16ToFloat(rs.data<uint16_t>()[first_ * width + i]);
    }
    errors[layer] = relativeError(a, b, width);
    std::memcpy(s.bytes(), rs.bytes() + first_ * width * 2, rows * width * 2);
    std::memcpy(m.bytes(), rm.bytes() + first_ * mixWidth * 4, rows * mixWidth * 4);
    return runtime::Status::ok();
  }

private:
  const Recorder &ref_;
  int64_t first_;
};

struct Case {
  std::string name;
  std::vector<int64_t> lengths; ///< N of each check
};

class PrefillDecodeConsistency : public testing::TestWithParam<Case> {};

TEST_P(PrefillDecodeConsistency, DecodeStepMatchesLongerPrefill) {
  std::string dir = sharedPath("golden/" + GetParam().name);
  std::string error;
  CompiledCase compiled = compileGoldenPlan(dir, error);
  ASSERT_EQ(error, "");
  auto engine = runtime::Engine::create(compiled.plan, dir + "/model.safetensors");
  ASSERT_TRUE(engine.hasValue()) << engine.status().message();
  auto golden = runtime::SafetensorsFile::open(dir + "/expected.safetensors");
  ASSERT_TRUE(golden.hasValue());
  std::vector<int32_t> ids;
  for (int64_t v : goldenInts(*golden->find("input_ids")))
    ids.push_back(int32_t(v));

  for (int64_t n : GetParam().lengths) {
    SCOPED_TRACE("N = " + std::to_string(n));
    ASSERT_LT(n, int64_t(ids.size()));
    // Reference: prefill of N+1 tokens, free-running.
    auto longSession = (*engine)->newSession();
    Recorder full;
    longSession->setObserver(&full);
    ASSERT_TRUE(longSession->prefill(std::span<const int32_t>(ids.data(), n + 1)).hasValue());

    // Prefill N (forced to the reference's rows 0..N-1), then decode token N
    // (forced to row N), comparing the decode step's blocks with row N.
    auto session = (*engine)->newSession();
    RowForcer prefillForcer(full, 0);
    session->setObserver(&prefillForcer);
    ASSERT_TRUE(session->prefill(std::span<const int32_t>(ids.data(), n)).hasValue());
    RowForcer decodeForcer(full, n);
    session->setObserver(&decodeForcer);
    ASSERT_TRUE(session->decode(ids[n]).hasValue());

    ASSERT_EQ(decodeForcer.errors.size(), size_t(compiled.spec.nLayers));
    for (auto [layer, e] : decodeForcer.errors)
      EXPECT_LE(e, 5e-3) << "layer " << layer;
    for (auto &[layer, list] : decodeForcer.seen.topk) {
      int64_t k = decodeForcer.seen.topkWidth[layer], kFull = full.topkWidth[layer];
      std::set<int32_t> a, b;
      for (int64_t j = 0; j < k; ++j)
        if (list[j] >= 0)
          a.insert(list[j] - int32_t(compiled.spec.windowSize)); // decode offset: W
      for (int64_t j = 0; j < kFull; ++j)
        if (int32_t v = full.topk[layer][n * kFull + j]; v >= 0)
          b.insert(v - int32_t(n + 1)); // prefill offset: S
      EXPECT_EQ(a, b) << "top-k set of layer " << layer;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Goldens, PrefillDecodeConsistency,
                         testing::Values(Case{"tiny6", {1, 5, 15, 16, 17, 40, 77}},
                                         Case{"tiny40", {3, 8, 9, 30}}),
                         [](const testing::TestParamInfo<Case> &info) { return info.param.name; });

} // namespace
