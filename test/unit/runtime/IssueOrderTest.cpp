//===- IssueOrderTest.cpp - A Session issues steps in the backend's order --===//
//
// Backend::issueOrder: the CPU backend wrapped so that every call's steps
// are issued in the order a 4-stream schedule of the call would capture
// them (StreamSchedule::order over scheduleSteps of the call's launch graph
// on its host memory plan): the tiny6 prefill and decode logits are the
// same bytes as in program order (the order keeps every dependency,
// including the arena's reuse), and the order really differs from program
// order somewhere (a row-tiled step counts as one node). An order that is no permutation of the steps is the
// call's error, naming it.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/LaunchGraph.h"
#include "dsc/runtime/PlanFile.h"
#include "dsc/runtime/StreamSchedule.h"
#include "test/unit/support/Tiny6Plan.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

using namespace dsc::runtime;

/// The CPU backend issuing each call's steps in a schedule's capture order
/// (or, with `broken`, in a sequence that is no permutation).
/// What the backend saw: calls issued out of program order, and per call
/// the steps in the order their launches arrived (against the order given).
struct Trace {
  int reordered = 0;
  std::vector<int64_t> given, issued;
};

class OrderingBackend final : public Backend {
public:
  OrderingBackend(Trace &trace, bool broken)
      : cpu_(createCpuBackend(1)), trace_(trace), broken_(broken) {}
  const char *name() const override { return "cpu"; }
  Status check(const Plan &plan) const override { return cpu_->check(plan); }
  Status launch(LaunchContext &c) override {
    const int64_t k = int64_t(&c.launch - c.program.launches.data());
    int64_t step = -1;
    for (size_t i = 0; i < steps_.size() && step < 0; ++i)
      if (size_t(k) >= steps_[i].first && size_t(k) < steps_[i].end)
        step = int64_t(i);
    if (trace_.issued.empty() || trace_.issued.back() != step) // a tiled step: once
      trace_.issued.push_back(step);
    return cpu_->launch(c);
  }
  Expected<bool> beginLaunches(BackendSession &, const Plan &, const CallPlan &callPlan,
                               const CallInfo &, const Program &program,
                               std::span<HostTensor *const>, bool) override {
    // A row-tiled step (the indexer) keeps a schedule on one stream; as one
    // node it is as good as a launch here (it runs whole either way).
    std::vector<CallStep> nodes = callPlan.steps;
    for (CallStep &node : nodes)
      if (node.kind == CallStep::Kind::RowTiles)
        node.kind = CallStep::Kind::Launch;
    order_ = scheduleSteps(launchGraph(program, callPlan.host), nodes, 4).schedule.order;
    for (size_t i = 0; i < order_.size(); ++i)
      if (order_[i] != int64_t(i)) {
        ++trace_.reordered;
        break;
      }
    if (broken_ && !order_.empty())
      order_.back() = order_.front();
    steps_ = callPlan.steps;
    trace_.given = order_;
    trace_.issued.clear();
    return false;
  }
  std::span<const int64_t> issueOrder(const BackendSession &) const override { return order_; }

private:
  std::unique_ptr<Backend> cpu_;
  Trace &trace_;
  bool broken_;
  std::vector<int64_t> order_;
  std::vector<CallStep> steps_;
};

std::unique_ptr<Engine> engineWith(std::unique_ptr<Backend> backend) {
  Expected<Plan> plan = readPlanFile(dsc::test::tiny6CpuPlan());
  EXPECT_TRUE(plan) << plan.status().message();
  if (!plan)
    return nullptr;
  SyntheticWeightOptions synthetic;
  synthetic.threads = 1;
  Expected<std::unique_ptr<Engine>> engine =
      Engine::createSynthetic(std::move(plan.value()), synthetic, std::move(backend));
  EXPECT_TRUE(engine) << engine.status().message();
  return engine ? std::move(engine.value()) : nullptr;
}

bool sameBytes(const HostTensor &a, const HostTensor &b) {
  return a.byteSize() == b.byteSize() && std::memcmp(a.bytes(), b.bytes(), a.byteSize()) == 0;
}

TEST(IssueOrder, AScheduleOrderComputesProgramOrdersBytes) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Trace trace;
  std::unique_ptr<Engine> plain = engineWith(createCpuBackend(1));
  std::unique_ptr<Engine> ordered = engineWith(std::make_unique<OrderingBackend>(trace, false));
  ASSERT_TRUE(plain && ordered);
  std::unique_ptr<Session> a = plain->newSession(), b = ordered->newSession();
  const std::vector<int32_t> prompt{5, 17, 3, 99, 42, 7};
  Expected<HostTensor> pa = a->prefill(prompt), pb = b->prefill(prompt);
  ASSERT_TRUE(pa) << pa.status().message();
  ASSERT_TRUE(pb) << pb.status().message();
  EXPECT_TRUE(sameBytes(*pa, *pb)) << "prefill logits";
  EXPECT_EQ(trace.issued, trace.given) << "prefill's steps not issued in the backend's order";
  for (int32_t id : {11, 250, 8}) {
    Expected<HostTensor> da = a->decode(id), db = b->decode(id);
    ASSERT_TRUE(da) << da.status().message();
    ASSERT_TRUE(db) << db.status().message();
    EXPECT_TRUE(sameBytes(*da, *db)) << "decode logits after token " << id;
    EXPECT_EQ(trace.issued, trace.given) << "decode's steps not issued in the backend's order";
  }
  EXPECT_GT(trace.reordered, 0) << "no call was issued out of program order: the test proves nothing";
}

TEST(IssueOrder, AnOrderThatIsNoPermutationIsTheCallsError) {
  DSC_SKIP_WITHOUT_TINY6_PLAN();
  Trace trace;
  std::unique_ptr<Engine> engine = engineWith(std::make_unique<OrderingBackend>(trace, true));
  ASSERT_TRUE(engine);
  std::unique_ptr<Session> s = engine->newSession();
  Expected<HostTensor> logits = s->prefill(std::vector<int32_t>{1, 2, 3});
  ASSERT_FALSE(logits);
  EXPECT_NE(logits.status().message().find("issue order is no permutation"), std::string::npos)
      << logits.status().message();
}

} // namespace
