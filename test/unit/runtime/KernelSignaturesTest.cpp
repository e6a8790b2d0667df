//===- KernelSignaturesTest.cpp - verifyPlan's per-kernel checks ----------===//
//
// Loads the tiny6 CPU plan compiled at build time (test/unit/support/
// Tiny6Plan.h; this test is built only where that plan is), mutates the
// Plan in memory and checks that verifyPlan rejects each class of bad launch with a message
// naming program, launch, kernel, operand or parameter and the expected value.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/KernelSignatures.h"
#include "dsc/runtime/PlanFile.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <functional>

using namespace dsc::runtime;
using ::testing::HasSubstr;

namespace {

const Plan &fixture() {
  static const Plan plan = [] {
    Expected<Plan> p =
        readPlanFile(dsc::test::tiny6CpuPlan());
    EXPECT_TRUE(bool(p)) << p.status().message();
    return bool(p) ? *p : Plan();
  }();
  return plan;
}

/// Index of the first launch of `program` running `kernel`.
size_t launchOf(const Plan &plan, const Program &p, const std::string &kernel,
                size_t nth = 0) {
  for (size_t i = 0; i < p.launches.size(); ++i)
    if (plan.kernels[size_t(p.launches[i].kernel)].name == kernel && nth-- == 0)
      return i;
  ADD_FAILURE() << "no launch of " << kernel;
  return 0;
}

std::string rejects(const std::function<void(Plan &)> &mutate) {
  Plan plan = fixture();
  mutate(plan);
  Status s = verifyPlan(plan);
  EXPECT_FALSE(s.isOk());
  // The serialised plan is rejected by the loader too, never crashes it.
  std::vector<uint8_t> bytes = serializePlan(plan);
  EXPECT_FALSE(bool(parsePlan(bytes, "mutated")));
  return s.isOk() ? std::string() : s.message();
}

/// The kernel spec of a launch, made private to it (specs are shared).
KernelSpec &ownKernel(Plan &plan, Program &p, size_t launch) {
  plan.kernels.push_back(plan.kernels[size_t(p.launches[launch].kernel)]);
  p.launches[launch].kernel = int64_t(plan.kernels.size()) - 1;
  return plan.kernels.back();
}

/// Edits a kernel's typed parameters of kernel T.
template <typename T, typename F> void edit(KernelSpec &k, F &&change) {
  ASSERT_NE(k.as<T>(), nullptr) << k.name;
  change(std::get<T>(k.params));
}

TEST(KernelSignatures, FixturePasses) {
  ASSERT_FALSE(fixture().programs.empty());
  EXPECT_TRUE(verifyPlan(fixture()).isOk()) << verifyPlan(fixture()).message();
}

TEST(KernelSignatures, EveryKernelOfTheFixtureHasASignature) {
  for (const KernelSpec &k : fixture().kernels)
    EXPECT_NE(findKernelSignature(k.name), nullptr) << k.name;
}

TEST(KernelSignatures, UnknownKernelIsLeftToTheBackend) {
  EXPECT_EQ(findKernelSignature("no_such_kernel"), nullptr);
}

TEST(KernelSignatures, InputCount) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    p.launches[launchOf(plan, p, "sparse_attention")].inputs.pop_back();
  });
  EXPECT_THAT(m, HasSubstr("(sparse_attention): has 3 inputs, expected 4 or 6"));
}

TEST(KernelSignatures, OutputDType) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    p.values[size_t(p.launches[launchOf(plan, p, "head")].outputs[0])].dtype = DType::BF16;
  });
  EXPECT_THAT(m, HasSubstr("program 'prefill' launch 160 (head): output 0 (logits, value "
                           "'head') is BF16, expected F32"));
}

TEST(KernelSignatures, Rank) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    p.values[size_t(p.launches[launchOf(plan, p, "hc_expand")].outputs[0])].shape = {kTokens};
  });
  EXPECT_THAT(m, HasSubstr("launch 2 (hc_expand): output 0 (stream, value 'hc_expand') has rank "
                           "1, expected 3"));
}

TEST(KernelSignatures, StateKind) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    // compress_kv writing the layer's index keys instead of its main KV.
    size_t ck = launchOf(plan, p, "compress_kv"), ik = launchOf(plan, p, "index_keys");
    p.launches[ck].outputs[0] = p.launches[ik].outputs[0];
  });
  EXPECT_THAT(m, HasSubstr("(compress_kv): output 0 (main KV, value 'layers.1.index_keys') is "
                           "state 'layers.1.index_keys' of kind IndexKeys, expected MainKv"));
}

TEST(KernelSignatures, ShapeRelation) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    p.values[size_t(p.launches[launchOf(plan, p, "embed")].outputs[0])].shape = {kTokens,
                                                                                 int64_t(1) << 30};
  });
  EXPECT_THAT(m, HasSubstr("launch 1 (embed): output 0 dim 1 is 1073741824, expected "
                           "256 (input 1 dim 1)"));
}

// dsc-plan-mutants findings (issue 15): a fixed row count beside kTokens in
// prefill (linear took 1,000,002 rows from its input and wrote them into a
// kTokens-row output), and a width turned into kTokens (rms_norm overflowed).
TEST(KernelSignatures, FixedRowsBesideTokensInPrefill) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    ASSERT_EQ(p.name, "prefill");
    p.values[size_t(p.launches[launchOf(plan, p, "rms_norm")].outputs[0])].shape[0] = 1000002;
  });
  EXPECT_THAT(m, HasSubstr("is 1000002 where"));
  EXPECT_THAT(m, HasSubstr("is kTokens (the call's rows): both must be kTokens"));
}

// Every decode call has one row: there kTokens and 1 are the same rows.
TEST(KernelSignatures, DecodeTakesOneForTokens) {
  Plan plan = fixture();
  Program &p = plan.programs[1];
  ASSERT_EQ(p.name, "decode");
  ValueSlot &v = p.values[size_t(p.launches[launchOf(plan, p, "hc_pre")].outputs[0])];
  ASSERT_EQ(v.shape[0], 1);
  v.shape[0] = kTokens;
  Status s = verifyPlan(plan);
  EXPECT_TRUE(s.isOk()) << s.message();
}

TEST(KernelSignatures, SymbolicWidthIsRejected) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    p.values[size_t(p.launches[launchOf(plan, p, "rope")].outputs[0])].shape[1] = kTokens;
  });
  EXPECT_THAT(m, HasSubstr("has symbolic dimension -1 at axis 1; symbolic dimensions are row "
                           "counts and lead the shape"));
}

// Issue 15's first example: a weight slot re-pointed at a tensor of
// another shape and dtype (found again by dsc-plan-mutants).
TEST(KernelSignatures, WeightSlotIsItsTensor) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[1];
    const Launch &l = p.launches[launchOf(plan, p, "linear")];
    ValueSlot &w = p.values[size_t(l.inputs[1])];
    ASSERT_EQ(w.kind, ValueKind::Weight);
    for (size_t t = 0; t < plan.tensors.size(); ++t)
      if (plan.tensors[t].shape != w.shape) {
        w.tensor = int64_t(t);
        break;
      }
  });
  EXPECT_THAT(m, HasSubstr("(a Weight value is its tensor)"));
  EXPECT_THAT(m, HasSubstr("but its tensor"));
}

// dsc-plan-mutants: a decode indexer_score output of [1, 2^31] allocated
// 8 GB before its adapter refused the width.
TEST(KernelSignatures, IndexerScoreWidthWithinTheKeys) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[1];
    p.values[size_t(p.launches[launchOf(plan, p, "indexer_score")].outputs[0])].shape[1] =
        kMaxDim;
  });
  EXPECT_THAT(m, HasSubstr("(indexer_score): output 0 dim 1 is 2147483648, more than the"));
}

// dsc-plan-mutants: a decode top-k edited to kCompressedTokens rows (0 at
// that position) crashed the attention that read its one row.
TEST(KernelSignatures, OtherSymbolsAreNotFixedRows) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[1];
    ValueSlot &v = p.values[size_t(p.launches[launchOf(plan, p, "indexer_topk")].outputs[0])];
    v.shape[0] = kCompressedTokens;
    v.ratio = 4;
  });
  EXPECT_THAT(m, HasSubstr("(set by each call): they must be equal"));
}

TEST(KernelSignatures, GroupsZero) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::GroupedOutputParams>(ownKernel(plan, p, launchOf(plan, p, "grouped_output")),
                                   [](auto &g) { g.groups = 0; });
  });
  EXPECT_THAT(m, HasSubstr("launch 20 (grouped_output): parameter 'groups' is 0, expected >= 1"));
}

// Issue 15: a count parameter set to INT64_MAX overflowed SparseSelect's
// arithmetic; every count without a tighter bound is capped at 2^24, so any
// product of two fits int64.
TEST(KernelSignatures, CountParametersAreCapped) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::IndexerTopKParams>(ownKernel(plan, p, launchOf(plan, p, "indexer_topk")),
                                      [](auto &t) { t.ratio = INT64_MAX; });
  });
  EXPECT_THAT(m, HasSubstr("(indexer_topk): parameter 'ratio' is 9223372036854775807, expected "
                           "at most 16777216 (the limit of a count parameter)"));
  m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::GroupedOutputParams>(ownKernel(plan, p, launchOf(plan, p, "grouped_output")),
                                        [](auto &g) { g.groups = (int64_t(1) << 24) + 1; });
  });
  EXPECT_THAT(m, HasSubstr("parameter 'groups' is 16777217, expected at most 16777216"));
}

TEST(KernelSignatures, GroupsNotDividingHeads) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::GroupedOutputParams>(ownKernel(plan, p, launchOf(plan, p, "grouped_output")),
                                   [](auto &g) { g.groups = 3; });
  });
  EXPECT_THAT(m, HasSubstr("parameter 'groups' is 3, expected a divisor of the 8 heads"));
}

TEST(KernelSignatures, LinearQuant) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::LinearParams>(ownKernel(plan, p, launchOf(plan, p, "linear")),
                            [](auto &l) { l.quant = dsc::abi::LinearQuant::fp32; });
  });
  EXPECT_THAT(m, HasSubstr("(linear): parameter 'quant' is fp32, expected fp8, fp4 or bf16"));
}

TEST(KernelSignatures, LinearWeightDTypeForQuant) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::LinearParams>(ownKernel(plan, p, launchOf(plan, p, "linear")),
                            [](auto &l) { l.quant = dsc::abi::LinearQuant::bf16; });
  });
  EXPECT_THAT(m, HasSubstr("input 1 (weight) is F8_E4M3, expected BF16 for quant 'bf16'"));
}

TEST(KernelSignatures, LinearScaleShape) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    size_t l = launchOf(plan, p, "linear");
    ValueSlot scale = p.values[size_t(p.launches[l].inputs[2])];
    scale.shape[0] += 1;
    scale.kind = ValueKind::Activation;
    scale.tensor = -1;
    // An input value with the wrong scale shape.
    scale.kind = ValueKind::Input;
    p.values.push_back(scale);
    p.inputs.push_back(int64_t(p.values.size()) - 1);
    p.launches[l].inputs[2] = int64_t(p.values.size()) - 1;
  });
  EXPECT_THAT(m, HasSubstr("(linear): input 2 dim 0 is 41, expected 40 (ceil(N / 32) scale rows)"));
}

TEST(KernelSignatures, RopeDim) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::RopeParams>(ownKernel(plan, p, launchOf(plan, p, "rope")),
                          [](auto &r) { r.rope.dim = 31; });
  });
  EXPECT_THAT(m, HasSubstr("(rope): parameter 'rope.dim' is 31, expected even"));
}

TEST(KernelSignatures, CompressKvRatio) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::CompressKvParams>(ownKernel(plan, p, launchOf(plan, p, "compress_kv")),
                                [](auto &c) { c.ratio = 4; });
  });
  EXPECT_THAT(m, HasSubstr("(compress_kv): parameter 'ratio' is 4, expected 2 (the ratio of "
                           "state 'layers.1.main_kv')"));
}

TEST(KernelSignatures, RecordWidth) {
  std::string m = rejects([](Plan &plan) {
    for (StateBuffer &s : plan.states)
      if (s.name == "layers.1.index_keys") {
        // A valid E2M1 layout of 32 values: the keys are 64 wide.
        s.layout.valuesPerEntry = 32;
        s.layout.dataBytes = 16;
        s.layout.scaleBytes = 1;
        s.layout.entryBytes = 17;
      }
    for (Program &p : plan.programs)
      for (ValueSlot &v : p.values)
        if (v.name == "layers.1.index_keys")
          v.shape[1] = 17;
  });
  EXPECT_THAT(m, HasSubstr("(index_keys): state 'layers.1.index_keys' records hold 32 values per "
                           "entry, expected 64"));
}

TEST(KernelSignatures, WindowBeyondRing) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    edit<dsc::abi::WindowKvParams>(ownKernel(plan, p, launchOf(plan, p, "window_kv")),
                              [](auto &w) { w.window = 32; });
  });
  EXPECT_THAT(m, HasSubstr("(window_kv): parameter 'window' is 32, expected at most 16 (the "
                           "capacity of ring 'layers.0.window')"));
}

TEST(KernelSignatures, MoeStackedShapes) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    size_t l = launchOf(plan, p, "moe_experts");
    std::swap(p.launches[l].inputs[3], p.launches[l].inputs[7]); // w1 <-> w2
  });
  EXPECT_THAT(m, HasSubstr("(moe_experts): input 3 dim 2 is 64, expected 128 (stacked routed expert weights)"));
}

TEST(KernelSignatures, EngramHashArrays) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    KernelSpec &k = ownKernel(plan, p, launchOf(plan, p, "engram_hash"));
    edit<dsc::abi::EngramHashParams>(k, [&](auto &e) {
      e.primes = dsc::abi::KernelArray{int64_t(k.constants.size()), 2};
    });
    k.constants.insert(k.constants.end(), {211, 223});
  });
  EXPECT_THAT(m, HasSubstr("(engram_hash): parameter 'primes' has 2 values, expected 16"));
}

TEST(KernelSignatures, SparseAttentionMainKvState) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[0];
    size_t sa = 0;
    for (size_t n = 0;; ++n) {
      sa = launchOf(plan, p, "sparse_attention", n);
      if (p.launches[sa].inputs.size() == 6)
        break;
    }
    p.launches[sa].inputs[2] = p.launches[sa].inputs[1]; // the ring instead of the main KV
  });
  EXPECT_THAT(m, HasSubstr("(sparse_attention): input 2 (main KV, value 'layers.1.window_kv') is "
                           "state 'layers.1.window' of kind WindowRing, expected MainKv"));
}

TEST(KernelSignatures, CompressorStateSlot) {
  std::string m = rejects([](Plan &plan) {
    for (Program &p : plan.programs)
      for (ValueSlot &v : p.values)
        if (v.name == "layers.1.compressor_state")
          v.shape = {2, 2, 1};
  });
  EXPECT_THAT(m, HasSubstr("value 117 'layers.1.compressor_state': is F32 [2, 2, 1], expected F32 "
                           "[2, 2, 128]"));
}

TEST(KernelSignatures, CompressorStateDimRoundTrips) {
  std::vector<uint8_t> bytes = serializePlan(fixture());
  Expected<Plan> back = parsePlan(bytes, "round trip");
  ASSERT_TRUE(bool(back)) << back.status().message();
  bool seen = false;
  for (const StateBuffer &s : back->states)
    if (s.kind == StateKind::CompressorState) {
      EXPECT_EQ(s.dim, 128) << s.name;
      seen = true;
    }
  EXPECT_TRUE(seen);
}

TEST(KernelSignatures, RecordStateSlot) {
  std::string m = rejects([](Plan &plan) {
    for (Program &p : plan.programs)
      for (ValueSlot &v : p.values)
        if (v.name == "layers.0.window_kv")
          v.dtype = DType::I8;
  });
  EXPECT_THAT(m, HasSubstr("'layers.0.window_kv': is I8, expected U8 (the records of a "
                           "WindowRing state)"));
}

TEST(KernelSignatures, HeadRows) {
  std::string m = rejects([](Plan &plan) {
    Program &p = plan.programs[1]; // decode: input rows are 1
    p.values[size_t(p.launches[launchOf(plan, p, "head")].outputs[0])].shape[0] = 2;
  });
  EXPECT_THAT(m, HasSubstr("program 'decode' launch 160 (head): output 0 dim 0 is 2, expected at "
                           "most 1"));
}

} // namespace
