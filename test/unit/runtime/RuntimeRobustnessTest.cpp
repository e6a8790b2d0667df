//===- RuntimeRobustnessTest.cpp - Review fixes: HostTensor, Session, Npy ---===//
//
// HostTensor (moves, checked sizes, no throwing dim), StateLayout (unpaged
// states, checked products), Session (weight outputs copied, output checks,
// per-slot size errors, failed sessions, CompressorState sizing), Npy (header
// and size checks before allocating, error codes, unique temporaries),
// toFloat32 and the C API's last error. Session tests use the tiny6 CPU plan
// compiled at build time (test/unit/support/Tiny6Plan.h) with the tiny6
// golden weights, and skip without it.
//===----------------------------------------------------------------------===//
#include "dsc/dsc.h"
#include "dsc/runtime/Conformance.h"
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/Npy.h"
#include "dsc/runtime/PlanFile.h"
#include "dsc/runtime/StateLayout.h"
#include "test/unit/support/SharedDir.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

using namespace dsc::runtime;
using ::testing::HasSubstr;

namespace {

std::string fixturePlan() { return dsc::test::tiny6CpuPlan(); }
std::string tiny6Weights() { return dsc::test::sharedPath("golden/tiny6/model.safetensors"); }

Plan loadFixture() {
  Expected<Plan> plan = readPlanFile(fixturePlan());
  EXPECT_TRUE(plan) << plan.status().message();
  return plan ? std::move(plan.value()) : Plan();
}

std::unique_ptr<Engine> engineOf(Plan plan) {
  Expected<std::unique_ptr<Engine>> engine = Engine::create(std::move(plan), tiny6Weights());
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

const std::vector<int32_t> kIds = {1, 2, 3};

std::string tempDir() {
  std::string dir = ::testing::TempDir() + "dsc_robustness_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  return dir;
}

void writeBytes(const std::string &path, const std::string &bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

// --- HostTensor --------------------------------------------------------------

TEST(HostTensor, MoveEmptiesTheSource) {
  HostTensor a(DType::F32, {4, 8});
  HostTensor b(std::move(a));
  EXPECT_EQ(a.byteSize(), 0u);
  EXPECT_EQ(a.bytes(), nullptr);
  EXPECT_TRUE(a.shape().empty());
  EXPECT_EQ(b.byteSize(), 128u);
  // A moved-from tensor is reusable: reset must reallocate, not write into
  // storage it no longer owns.
  a.reset(DType::F32, {2});
  ASSERT_NE(a.bytes(), nullptr);
  EXPECT_NE(a.bytes(), b.bytes());
  HostTensor c;
  c = std::move(b);
  EXPECT_EQ(b.byteSize(), 0u);
  EXPECT_EQ(c.byteSize(), 128u);
}

TEST(HostTensor, CopyIsDeep) {
  HostTensor a(DType::I32, {3});
  a.data<int32_t>()[1] = 7;
  HostTensor b(a);
  EXPECT_NE(a.bytes(), b.bytes());
  EXPECT_EQ(b.data<int32_t>()[1], 7);
}

TEST(HostTensor, ResetCheckedRejectsNegativeOverflowingAndHugeShapes) {
  HostTensor t;
  Status negative = t.resetChecked(DType::F32, {-1, 4});
  EXPECT_EQ(negative.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(negative.message(), HasSubstr("[-1, 4]"));
  Status overflow = t.resetChecked(DType::BF16, {8, int64_t(1) << 61});
  EXPECT_EQ(overflow.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(overflow.message(), HasSubstr("[8, 2305843009213693952]"));
  Status huge = t.resetChecked(DType::U8, {(int64_t(1) << 40) + 1});
  EXPECT_EQ(huge.code(), StatusCode::InvalidArgument);
  EXPECT_THAT(huge.message(), HasSubstr("more than the limit"));
  EXPECT_EQ(t.byteSize(), 0u);
  EXPECT_TRUE(t.resetChecked(DType::F32, {2, 3}));
  EXPECT_EQ(t.byteSize(), 24u);
  EXPECT_EQ(HostTensor::checkedByteSize(DType::F32, {int64_t(1) << 62, 2}), std::nullopt);
}

#ifdef NDEBUG
TEST(HostTensor, DimOutOfRangeDoesNotThrow) {
  HostTensor t(DType::F32, {2});
  EXPECT_NO_THROW({ EXPECT_EQ(t.dim(5), 0); });
}
#endif

// --- StateLayout -------------------------------------------------------------

TEST(StateLayout, TokensPerPageZeroIsOnePageOfCapacity) {
  StateBuffer s;
  s.name = "unpaged";
  s.capacity = 10;
  s.layout.entryBytes = 7;
  s.layout.tokensPerPage = 0;
  Expected<int64_t> bytes = stateBytes(s);
  ASSERT_TRUE(bytes) << bytes.status().message();
  EXPECT_EQ(*bytes, 70);
  EXPECT_EQ(pageLayoutOf(s).tokensPerPage, 10);
  s.layout.tokensPerPage = 4; // 3 pages of 4
  EXPECT_EQ(*stateBytes(s), 84);
}

TEST(StateLayout, OverflowIsAnError) {
  StateBuffer s;
  s.name = "big";
  s.capacity = int64_t(1) << 62;
  s.layout.entryBytes = 64;
  s.layout.tokensPerPage = 64;
  Expected<int64_t> bytes = stateBytes(s);
  ASSERT_FALSE(bytes);
  EXPECT_THAT(bytes.status().message(), HasSubstr("state 'big'"));
  EXPECT_THAT(bytes.status().message(), HasSubstr("overflows"));
}

// --- Session -----------------------------------------------------------------

TEST(Session, WeightOutputIsCopiedNotMoved) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Plan plan = loadFixture();
  int64_t slot = -1;
  for (size_t i = 0; i < plan.programs[0].values.size(); ++i) {
    const ValueSlot &v = plan.programs[0].values[i];
    if (v.kind == ValueKind::Weight && v.dtype == DType::F32 && v.shape.size() == 2) {
      slot = int64_t(i);
      break;
    }
  }
  ASSERT_GE(slot, 0);
  int64_t tensor = plan.programs[0].values[slot].tensor;
  plan.programs[0].outputs[0] = slot;
  Expected<std::unique_ptr<Engine>> created = Engine::create(std::move(plan), tiny6Weights());
  if (!created) { // the verifier may reject a weight output first
    EXPECT_THAT(created.status().message(), HasSubstr("output 0"));
    return;
  }
  std::unique_ptr<Engine> engine = std::move(created.value());
  size_t bytes = engine->weights()[tensor].byteSize();
  ASSERT_GT(bytes, 0u);
  std::unique_ptr<Session> session = engine->newSession();
  Expected<HostTensor> out = session->prefill(kIds);
  ASSERT_TRUE(out) << out.status().message();
  EXPECT_EQ(out->byteSize(), bytes);
  EXPECT_EQ(engine->weights()[tensor].byteSize(), bytes) << "the weight was moved out";
  ASSERT_NE(engine->weights()[tensor].bytes(), nullptr);
  EXPECT_EQ(std::memcmp(out->bytes(), engine->weights()[tensor].bytes(), bytes), 0);
}

TEST(Session, OutputZeroMustBeF32RankTwo) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Plan plan = loadFixture();
  int64_t slot = plan.programs[0].outputs[0];
  plan.programs[0].values[slot].dtype = DType::BF16;
  Expected<std::unique_ptr<Engine>> engine = Engine::create(std::move(plan), tiny6Weights());
  if (!engine) { // the verifier may reject it first; then it names the slot
    std::printf("verifier: %s\n", engine.status().message().c_str());
    return;
  }
  std::unique_ptr<Session> session = (*engine)->newSession();
  Expected<HostTensor> out = session->prefill(kIds);
  ASSERT_FALSE(out);
  EXPECT_THAT(out.status().message(), HasSubstr("prefill: output 0"));
  EXPECT_THAT(out.status().message(), HasSubstr("expected F32 of rank 2"));
  EXPECT_EQ(session->position(), 0); // rejected before anything ran
}

TEST(Session, OversizedUnusedSlotNamesProgramAndSlot) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  // A slot no launch uses escapes the kernel signature checks; its size is
  // still checked, when the engine plans a session's memory (before any
  // session exists: the plan's recorded peak is not trusted).
  Plan plan = loadFixture();
  ValueSlot extra;
  extra.kind = ValueKind::Activation;
  extra.dtype = DType::BF16;
  extra.shape = {kTokens, kMaxDim, kMaxDim}; // each dimension verifies, the bytes overflow
  extra.name = "oversized";
  plan.programs[0].values.push_back(extra);
  size_t index = plan.programs[0].values.size() - 1;
  Expected<std::unique_ptr<Engine>> engine = Engine::create(std::move(plan), tiny6Weights());
  ASSERT_FALSE(engine);
  EXPECT_EQ(engine.status().code(), StatusCode::InvalidArgument);
  EXPECT_THAT(engine.status().message(),
              HasSubstr("prefill: value slot " + std::to_string(index) + " ('oversized')"));
  EXPECT_THAT(engine.status().message(), HasSubstr("2147483648, 2147483648]"));
}

TEST(Session, OversizedSlotNamesProgramAndSlot) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Plan plan = loadFixture();
  ValueSlot &embed = plan.programs[0].values[4];
  ASSERT_EQ(embed.name, "embed");
  embed.shape = {kTokens, kMaxDim};
  Expected<std::unique_ptr<Engine>> engine = Engine::create(std::move(plan), tiny6Weights());
  if (!engine) {
    std::printf("verifier: %s\n", engine.status().message().c_str());
    return;
  }
  std::unique_ptr<Session> session = (*engine)->newSession();
  Expected<HostTensor> out = session->prefill(kIds);
  ASSERT_FALSE(out);
  EXPECT_EQ(out.status().code(), StatusCode::InvalidArgument);
  EXPECT_THAT(out.status().message(), HasSubstr("prefill: value slot 4 ('embed')"));
}

class FailAtLayer : public SessionObserver {
public:
  explicit FailAtLayer(int64_t layer) : layer_(layer) {}
  Status atBoundary(const CallInfo &, int64_t layer, HostTensor &, HostTensor &) override {
    if (layer == layer_ && armed)
      return internalError("observer failed at layer " + std::to_string(layer));
    return Status::ok();
  }
  bool armed = true;

private:
  int64_t layer_;
};

TEST(Session, FailedCallLeavesTheSessionFailedUntilReset) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Plan plan = loadFixture();
  ASSERT_GE(plan.programs[0].boundaries.size(), 3u);
  plan.model.layerBoundaries = true; // the fixture has boundaries: observe them
  plan.model.prefillChunk = 0;       // conformance plans run prompts in one call
  std::unique_ptr<Engine> engine = engineOf(std::move(plan));
  ASSERT_TRUE(engine);
  std::unique_ptr<Session> session = engine->newSession();
  FailAtLayer observer(2);
  session->setObserver(&observer);
  Expected<HostTensor> first = session->prefill(kIds);
  ASSERT_FALSE(first);
  EXPECT_THAT(first.status().message(), HasSubstr("observer failed at layer 2"));

  observer.armed = false;
  Expected<HostTensor> again = session->prefill(kIds);
  ASSERT_FALSE(again);
  EXPECT_EQ(again.status().code(), StatusCode::FailedPrecondition);
  EXPECT_THAT(again.status().message(), HasSubstr("the session failed at prefill launch "));
  EXPECT_THAT(again.status().message(), HasSubstr("; call reset()"));
  Expected<HostTensor> decode = session->decode(1);
  ASSERT_FALSE(decode);
  EXPECT_EQ(decode.status().code(), StatusCode::FailedPrecondition);

  session->reset();
  Expected<HostTensor> ok = session->prefill(kIds);
  EXPECT_TRUE(ok) << ok.status().message();
  EXPECT_TRUE(session->decode(4)) << "decode after a clean prefill";
}

TEST(Session, CompressorStateUsesStateDim) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Plan plan = loadFixture();
  int64_t index = -1;
  for (size_t i = 0; i < plan.states.size(); ++i)
    if (plan.states[i].kind == StateKind::CompressorState) {
      index = int64_t(i);
      break;
    }
  ASSERT_GE(index, 0);
  StateBuffer s = plan.states[index];
  ASSERT_GT(s.dim, 0);
  std::unique_ptr<Engine> engine = engineOf(plan);
  ASSERT_TRUE(engine);
  std::unique_ptr<Session> session = engine->newSession();
  const HostTensor &t = session->state(index);
  EXPECT_EQ(t.shape(), (std::vector<int64_t>{2, s.ratio, s.dim}));
  // [2, ratio, dim]: kv rows (zeros) then score rows (-inf).
  EXPECT_EQ(t.data<float>()[0], 0.0f);
  EXPECT_TRUE(std::isinf(t.data<float>()[s.ratio * s.dim]));
}

TEST(Engine, MissingFilesAreNotUnavailable) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Expected<std::unique_ptr<Engine>> plan = Engine::load("/nonexistent/p.dscp", tiny6Weights());
  ASSERT_FALSE(plan);
  EXPECT_EQ(plan.status().code(), StatusCode::NotFound);
  Expected<std::unique_ptr<Engine>> weights = Engine::load(fixturePlan(), "/nonexistent/w");
  ASSERT_FALSE(weights);
  EXPECT_NE(weights.status().code(), StatusCode::Unavailable);
  // A directory where a file is expected is not "backend unavailable".
  Expected<std::unique_ptr<Engine>> dir = Engine::load(tempDir(), tiny6Weights());
  ASSERT_FALSE(dir);
  EXPECT_NE(dir.status().code(), StatusCode::Unavailable) << dir.status().message();
}

// Issue 15: what one session of a plan will allocate (states at capacity
// plus the largest activation peak, computed here independently) is checked
// against EngineOptions::sessionMemoryLimit when the engine is made, before
// any weight is read; exactly that many bytes are allowed.
TEST(Engine, APlanOverTheSessionMemoryLimitIsRefusedBeforeLoading) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Expected<Plan> plan = readPlanFile(fixturePlan());
  ASSERT_TRUE(plan) << plan.status().message();
  Expected<uint64_t> states = planStateBytes(*plan);
  ASSERT_TRUE(states) << states.status().message();
  uint64_t peak = 0;
  for (const Program &p : plan->programs)
    peak = std::max({peak, p.peakBytes, p.peakBytesUntiled});
  ASSERT_GT(*states, 0u);
  EngineOptions options;
  options.sessionMemoryLimit = *states + peak - 1;
  Expected<std::unique_ptr<Engine>> refused =
      Engine::load(fixturePlan(), "/nonexistent/weights", options); // never read
  ASSERT_FALSE(refused);
  EXPECT_EQ(refused.status().code(), StatusCode::InvalidArgument);
  EXPECT_THAT(refused.status().message(),
              HasSubstr("plan: one session needs " + std::to_string(*states) + " bytes of states"));
  EXPECT_THAT(refused.status().message(),
              HasSubstr(std::to_string(peak) + " bytes of activations, more than the " +
                        std::to_string(*states + peak - 1) + " bytes allowed"));
  options.sessionMemoryLimit = *states + peak;
  Expected<std::unique_ptr<Engine>> fits = Engine::load(fixturePlan(), tiny6Weights(), options);
  EXPECT_TRUE(fits) << fits.status().message();
  // The default (0) is this machine's memory: the tiny plan fits.
  EXPECT_TRUE(Engine::load(fixturePlan(), tiny6Weights())) << "default limit";
}

TEST(Engine, UnknownBackendIsReportedBeforeThePlanIsRead) {
  EngineOptions options;
  options.backend = "tpu";
  Expected<std::unique_ptr<Engine>> engine = Engine::load("/nonexistent/p.dscp", tiny6Weights(), options);
  ASSERT_FALSE(engine);
  EXPECT_EQ(engine.status().code(), StatusCode::InvalidArgument);
  EXPECT_THAT(engine.status().message(), HasSubstr("unknown backend 'tpu'"));
}

// --- Npy ---------------------------------------------------------------------

std::string npyPrefix(uint8_t major) { return std::string("\x93NUMPY", 6) + char(major) + '\0'; }

TEST(Npy, TruncatedHeaderLength) {
  std::string path = tempDir() + "/len.npy";
  writeBytes(path, npyPrefix(1) + "\x10");
  Expected<HostTensor> t = readNpy(path);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().code(), StatusCode::DataLoss);
  EXPECT_THAT(t.status().message(), HasSubstr("truncated header length"));
}

TEST(Npy, HeaderOverOneMiB) {
  std::string path = tempDir() + "/hdr.npy";
  writeBytes(path, npyPrefix(2) + std::string("\xff\xff\xff\x7f", 4) + "{}");
  Expected<HostTensor> t = readNpy(path);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().code(), StatusCode::DataLoss);
  EXPECT_THAT(t.status().message(), HasSubstr("exceeds the limit of 1048576"));
}

TEST(Npy, DataSizeCheckedBeforeAllocating) {
  std::string path = tempDir() + "/huge.npy";
  std::string header = "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1024), }\n";
  std::string len(2, '\0');
  len[0] = char(header.size() & 0xff);
  len[1] = char(header.size() >> 8);
  writeBytes(path, npyPrefix(1) + len + header + "abcd");
  Expected<HostTensor> t = readNpy(path);
  ASSERT_FALSE(t);
  EXPECT_EQ(t.status().code(), StatusCode::DataLoss);
  EXPECT_THAT(t.status().message(), HasSubstr("the file has 4"));
}

TEST(Npy, ErrorCodes) {
  Expected<HostTensor> missing = readNpy(tempDir() + "/missing.npy");
  ASSERT_FALSE(missing);
  EXPECT_EQ(missing.status().code(), StatusCode::NotFound);
  Expected<HostTensor> dir = readNpy(tempDir());
  ASSERT_FALSE(dir);
  EXPECT_EQ(dir.status().code(), StatusCode::FailedPrecondition);
  HostTensor t(DType::F32, {2});
  Status noDir = writeNpy(tempDir() + "/no/such/dir/x.npy", t);
  EXPECT_EQ(noDir.code(), StatusCode::NotFound) << noDir.message();
}

TEST(Npy, RoundTripLeavesNoTemporaries) {
  std::string dir = tempDir() + "/rt";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  HostTensor t(DType::I64, {2, 3});
  for (int i = 0; i < 6; ++i)
    t.data<int64_t>()[i] = int64_t(i) * 1000000007;
  ASSERT_TRUE(writeNpy(dir + "/a.npy", t));
  ASSERT_TRUE(writeNpy(dir + "/a.npy", t)); // overwrite
  size_t files = 0;
  for (auto &entry : std::filesystem::directory_iterator(dir)) {
    (void)entry;
    ++files;
  }
  EXPECT_EQ(files, 1u);
  Expected<HostTensor> back = readNpy(dir + "/a.npy");
  ASSERT_TRUE(back) << back.status().message();
  EXPECT_EQ(back->shape(), t.shape());
  EXPECT_EQ(std::memcmp(back->bytes(), t.bytes(), t.byteSize()), 0);
}

// --- toFloat32 ---------------------------------------------------------------

TEST(Conformance, ToFloat32WidensF16E4M3AndI8) {
  HostTensor f16(DType::F16, {2});
  f16.data<uint16_t>()[0] = 0x3c00; // 1.0
  f16.data<uint16_t>()[1] = 0xc100; // -2.5
  Expected<HostTensor> a = toFloat32(f16);
  ASSERT_TRUE(a);
  EXPECT_EQ(a->data<float>()[0], 1.0f);
  EXPECT_EQ(a->data<float>()[1], -2.5f);
  HostTensor e4m3(DType::F8_E4M3, {1});
  e4m3.data<uint8_t>()[0] = 0x38; // 1.0
  EXPECT_EQ(toFloat32(e4m3)->data<float>()[0], 1.0f);
  HostTensor i8(DType::I8, {1});
  i8.data<int8_t>()[0] = -3;
  EXPECT_EQ(toFloat32(i8)->data<float>()[0], -3.0f);
  HostTensor scales(DType::F8_E8M0, {1});
  Expected<HostTensor> bad = toFloat32(scales);
  ASSERT_FALSE(bad);
  EXPECT_THAT(bad.status().message(), HasSubstr("F8_E8M0"));
}

// --- C API -------------------------------------------------------------------

/// `n` token ids (i * mul + add) % vocab of the engine.
std::vector<int32_t> cIds(const dsc_engine *engine, size_t n, size_t mul, size_t add) {
  const size_t vocab = size_t(dsc_engine_vocab_size(engine));
  std::vector<int32_t> ids(n);
  for (size_t i = 0; i < n; ++i)
    ids[i] = int32_t((i * mul + add) % vocab);
  return ids;
}

TEST(CApi, SessionCreateClearsTheLastError) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  dsc_engine *engine = nullptr;
  ASSERT_EQ(dsc_engine_load(fixturePlan().c_str(), tiny6Weights().c_str(), "cpu", &engine), DSC_OK)
      << dsc_last_error();
  dsc_engine *none = nullptr;
  EXPECT_EQ(dsc_engine_load("/nonexistent.dscp", tiny6Weights().c_str(), "cpu", &none),
            DSC_NOT_FOUND);
  EXPECT_STRNE(dsc_last_error(), "");
  dsc_session *session = nullptr;
  ASSERT_EQ(dsc_session_create(engine, &session), DSC_OK);
  EXPECT_STREQ(dsc_last_error(), "");
  dsc_session_reset(session);
  dsc_session_destroy(session);
  dsc_engine_destroy(engine);
}

/// The tiny6 fixture engine through the C API with two sessions and a logits
/// row buffer for each.
class CApiTwoSessions : public ::testing::Test {
protected:
  void SetUp() override {
    DSC_SKIP_WITHOUT_TINY6_PLAN();
    ASSERT_EQ(dsc_engine_load(fixturePlan().c_str(), tiny6Weights().c_str(), "cpu", &engine),
              DSC_OK)
        << dsc_last_error();
    ASSERT_EQ(dsc_session_create(engine, &a), DSC_OK);
    ASSERT_EQ(dsc_session_create(engine, &b), DSC_OK);
    la.resize(size_t(dsc_engine_vocab_size(engine)));
    lb.resize(la.size());
  }
  void TearDown() override {
    dsc_session_destroy(a);
    dsc_session_destroy(b);
    dsc_engine_destroy(engine);
  }
  dsc_engine *engine = nullptr;
  dsc_session *a = nullptr, *b = nullptr;
  std::vector<float> la, lb;
  size_t rows = 0;
};

// A token count beyond the plan's max_seq_len (SIZE_MAX: negative once cast)
// is refused before a token is read, and the session stays usable (issue 15:
// it passed the size check and read past the caller's buffer).
TEST_F(CApiTwoSessions, HugeTokenCountsAreRefusedBeforeAnyRead) {
  std::vector<int32_t> ids(8, 1);
  EXPECT_EQ(dsc_session_prefill(a, ids.data(), SIZE_MAX, la.data(), la.size(), &rows),
            DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("exceed the plan's max_seq_len"));
  ASSERT_EQ(dsc_session_prefill(a, ids.data(), ids.size(), la.data(), la.size(), &rows), DSC_OK)
      << dsc_last_error();
  EXPECT_EQ(dsc_session_extend(a, ids.data(), SIZE_MAX, la.data(), la.size(), &rows),
            DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("extend: "));
  EXPECT_EQ(dsc_session_extend(a, ids.data(), 2, la.data(), la.size(), &rows), DSC_OK)
      << dsc_last_error() << " (the refused call changed nothing)";
}

// A logits buffer too small for one row is refused before the call runs
// (issue 15: it was found only after the token had been consumed): the
// session's position is unchanged, and the same call with room gives the
// logits of a session that never saw the refused calls.
TEST_F(CApiTwoSessions, ATooSmallLogitsBufferIsRefusedBeforeTheCallRuns) {
  std::vector<int32_t> ids(8, 1);
  const size_t small = la.size() - 1;
  EXPECT_EQ(dsc_session_prefill(a, ids.data(), ids.size(), la.data(), small, &rows),
            DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("dsc_session_prefill: logits buffer too small"));
  EXPECT_THAT(dsc_last_error(), HasSubstr("(nothing ran)"));
  EXPECT_EQ(dsc_session_position(a), 0);
  ASSERT_EQ(dsc_session_prefill(a, ids.data(), ids.size(), la.data(), la.size(), &rows), DSC_OK)
      << dsc_last_error();
  EXPECT_EQ(dsc_session_decode(a, 5, la.data(), small, &rows), DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("dsc_session_decode: logits buffer too small"));
  EXPECT_EQ(dsc_session_extend(a, ids.data(), 2, la.data(), 0, &rows), DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("dsc_session_extend: logits buffer too small"));
  EXPECT_EQ(dsc_session_position(a), int64_t(ids.size()));
  ASSERT_EQ(dsc_session_decode(a, 5, la.data(), la.size(), &rows), DSC_OK) << dsc_last_error();
  ASSERT_EQ(dsc_session_prefill(b, ids.data(), ids.size(), lb.data(), lb.size(), &rows), DSC_OK);
  ASSERT_EQ(dsc_session_decode(b, 5, lb.data(), lb.size(), &rows), DSC_OK);
  EXPECT_EQ(rows, 1u);
  EXPECT_EQ(la, lb) << "a refused call consumed a token";
}

// dsc_session_extend continues a prefilled sequence: prefill(20) + extend(3)
// gives the logits bytes of prefill(23) (the tiny6 fixture is --ced=full),
// and an unprefilled session's extend is an error with a message.
TEST_F(CApiTwoSessions, ExtendEqualsOnePrefill) {
  const std::vector<int32_t> ids = cIds(engine, 23, 37, 11);
  EXPECT_EQ(dsc_session_extend(b, ids.data(), 3, lb.data(), lb.size(), &rows),
            DSC_FAILED_PRECONDITION);
  EXPECT_THAT(dsc_last_error(), HasSubstr("call prefill() first"));
  ASSERT_EQ(dsc_session_prefill(a, ids.data(), 23, la.data(), la.size(), &rows), DSC_OK)
      << dsc_last_error();
  ASSERT_EQ(dsc_session_prefill(b, ids.data(), 20, lb.data(), lb.size(), &rows), DSC_OK)
      << dsc_last_error();
  ASSERT_EQ(dsc_session_extend(b, ids.data() + 20, 3, lb.data(), lb.size(), &rows), DSC_OK)
      << dsc_last_error();
  EXPECT_EQ(rows, 1u);
  EXPECT_EQ(dsc_session_position(b), 23);
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0);
}

// dsc_session_prefill_prefix / dsc_session_prefill_from: a prompt of 60
// continued from a snapshot of its first 20 tokens (in another session) gives
// the logits bytes of its cold prefill; a prompt that does not start with the
// snapshot's tokens and null arguments are errors with a message.
TEST_F(CApiTwoSessions, PrefillFromASnapshotEqualsTheColdPrefill) {
  const int32_t vocab = int32_t(la.size());
  const std::vector<int32_t> ids = cIds(engine, 60, 53, 7);
  EXPECT_EQ(dsc_session_min_prefix_tail(b), 32) << "tiny6 --ced=full: 2 x the window of 16";
  ASSERT_EQ(dsc_session_prefill(a, ids.data(), 60, la.data(), la.size(), &rows), DSC_OK)
      << dsc_last_error();
  dsc_snapshot *prefix = nullptr;
  ASSERT_EQ(dsc_session_prefill_prefix(a, ids.data(), 20, &prefix), DSC_OK) << dsc_last_error();
  EXPECT_EQ(dsc_snapshot_tokens(prefix), 20);
  EXPECT_GT(dsc_snapshot_bytes(prefix), 0u);
  EXPECT_EQ(dsc_session_position(a), 0) << "prefill_prefix leaves its session reset";
  ASSERT_EQ(dsc_session_prefill_from(b, prefix, ids.data(), 60, lb.data(), lb.size(), &rows),
            DSC_OK)
      << dsc_last_error();
  EXPECT_EQ(rows, 1u);
  EXPECT_EQ(dsc_session_position(b), 60);
  EXPECT_EQ(std::memcmp(la.data(), lb.data(), la.size() * sizeof(float)), 0);
  std::vector<int32_t> other = ids;
  other[5] = (other[5] + 1) % vocab;
  EXPECT_EQ(dsc_session_prefill_from(b, prefix, other.data(), 60, lb.data(), lb.size(), &rows),
            DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("does not start with the snapshot's 20 tokens"));
  EXPECT_EQ(dsc_session_prefill_from(b, nullptr, ids.data(), 60, lb.data(), lb.size(), &rows),
            DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("dsc_session_prefill_from: null argument"));
  EXPECT_EQ(dsc_session_prefill_prefix(a, ids.data(), 20, nullptr), DSC_INVALID_ARGUMENT);
  dsc_snapshot_destroy(prefix);
}

// The scheduler through the C API: two requests run together, each gets the
// greedy tokens a session of its own gives (the session calls above, written
// out); a cancelled request keeps its tokens; bad calls are refused with
// their reason and change nothing.
TEST_F(CApiTwoSessions, SchedulerRunsRequestsTogether) {
  dsc_scheduler *s = nullptr;
  ASSERT_EQ(dsc_scheduler_create(engine, 2, 0, &s), DSC_OK) << dsc_last_error();
  const std::vector<int32_t> p = cIds(engine, 9, 7, 3), q = cIds(engine, 13, 5, 1);
  auto greedy = [&](dsc_session *session, const std::vector<int32_t> &prompt, int n) {
    std::vector<float> l(la.size());
    std::vector<int32_t> out;
    EXPECT_EQ(dsc_session_prefill(session, prompt.data(), prompt.size(), l.data(), l.size(), &rows),
              DSC_OK);
    for (int i = 0; i < n; ++i) {
      EXPECT_EQ(rows, 1u); // the last prompt token's (or the decoded one's) row
      out.push_back(int32_t(std::max_element(l.begin(), l.end()) - l.begin()));
      if (i + 1 < n)
        EXPECT_EQ(dsc_session_decode(session, out.back(), l.data(), l.size(), &rows), DSC_OK);
    }
    return out;
  };
  uint64_t ip = 0, iq = 0, bad = 0;
  ASSERT_EQ(dsc_scheduler_submit(s, p.data(), p.size(), 4, &ip), DSC_OK) << dsc_last_error();
  ASSERT_EQ(dsc_scheduler_submit(s, q.data(), q.size(), 4, &iq), DSC_OK) << dsc_last_error();
  EXPECT_EQ(dsc_scheduler_submit(s, p.data(), SIZE_MAX, 4, &bad), DSC_INVALID_ARGUMENT);
  EXPECT_THAT(dsc_last_error(), HasSubstr("exceed the plan's max_seq_len"));
  int64_t running = -1, queued = -1;
  ASSERT_EQ(dsc_scheduler_step(s, &running, &queued), DSC_OK) << dsc_last_error();
  EXPECT_EQ(running, 2);
  EXPECT_EQ(queued, 0);
  ASSERT_EQ(dsc_scheduler_cancel(s, iq), DSC_OK);
  for (int i = 0; i < 8 && running > 0; ++i)
    ASSERT_EQ(dsc_scheduler_step(s, &running, &queued), DSC_OK) << dsc_last_error();
  EXPECT_EQ(running, 0);
  dsc_request_state state = DSC_REQUEST_QUEUED;
  std::vector<int32_t> got(8);
  size_t count = 0;
  EXPECT_EQ(dsc_scheduler_result(s, ip, &state, got.data(), 1, &count), DSC_INVALID_ARGUMENT)
      << "four tokens do not fit one";
  ASSERT_EQ(dsc_scheduler_result(s, ip, &state, got.data(), got.size(), &count), DSC_OK);
  EXPECT_EQ(state, DSC_REQUEST_FINISHED);
  got.resize(count);
  EXPECT_EQ(got, greedy(a, p, 4));
  ASSERT_EQ(dsc_scheduler_result(s, iq, &state, nullptr, 0, &count), DSC_OK);
  EXPECT_EQ(state, DSC_REQUEST_CANCELLED);
  EXPECT_EQ(count, 1u) << "the prefill's token, before the cancel";
  EXPECT_EQ(dsc_scheduler_release(s, ip), DSC_OK);
  EXPECT_EQ(dsc_scheduler_release(s, ip), DSC_NOT_FOUND);
  EXPECT_EQ(dsc_scheduler_result(s, ip, &state, nullptr, 0, &count), DSC_NOT_FOUND);
  dsc_scheduler_destroy(s);
  EXPECT_EQ(dsc_scheduler_create(engine, -1, 0, &s), DSC_INVALID_ARGUMENT);
}

} // namespace
