//===- Scheduler.cpp - Continuous batching of generation requests ---------===//
#include "dsc/runtime/Scheduler.h"

#include "dsc/runtime/Backend.h"
#include "dsc/runtime/MemoryPlan.h"

#include <algorithm>
#include <string>

namespace dsc::runtime {

namespace {

bool ended(RequestState s) {
  return s == RequestState::Finished || s == RequestState::Cancelled || s == RequestState::Failed;
}

} // namespace

int32_t greedyToken(const HostTensor &logits) {
  const int64_t vocab = logits.dim(int64_t(logits.shape().size()) - 1);
  const float *row = logits.data<float>() + (logits.numElements() - vocab);
  return int32_t(std::max_element(row, row + vocab) - row);
}

Expected<std::unique_ptr<Scheduler>> Scheduler::create(Engine &engine, SchedulerOptions options) {
  if (options.maxRunning < 0)
    return invalidArgument("scheduler: maxRunning is " + std::to_string(options.maxRunning) +
                           ", must be >= 0 (0: the plan's max_batch)");
  const int64_t maxRunning =
      options.maxRunning > 0 ? options.maxRunning : std::max<int64_t>(1, engine.plan().model.maxBatch);
  Expected<uint64_t> bytes = planStateBytes(engine.plan());
  if (!bytes)
    return bytes.status();
  if (options.memoryLimit != 0 && options.memoryLimit < *bytes)
    return invalidArgument("scheduler: memoryLimit " + std::to_string(options.memoryLimit) +
                           " bytes is below one session's states (" + std::to_string(*bytes) +
                           " bytes): no request could run");
  return std::unique_ptr<Scheduler>(new Scheduler(engine, options, maxRunning, *bytes));
}

Scheduler::Scheduler(Engine &engine, SchedulerOptions options, int64_t maxRunning,
                     uint64_t sessionBytes)
    : engine_(engine), options_(options), maxRunning_(maxRunning), sessionBytes_(sessionBytes) {}

Expected<uint64_t> Scheduler::submit(GenerationRequest request) {
  const PlanFacts &model = engine_.plan().model;
  const int64_t n = int64_t(request.promptIds.size());
  if (n == 0)
    return invalidArgument("request: the prompt has no tokens");
  for (size_t i = 0; i < request.promptIds.size(); ++i)
    if (request.promptIds[i] < 0 || request.promptIds[i] >= model.vocabSize)
      return invalidArgument("request: prompt id [" + std::to_string(i) + "] = " +
                             std::to_string(request.promptIds[i]) +
                             " is outside the vocabulary [0, " + std::to_string(model.vocabSize) +
                             ")");
  if (request.maxNewTokens < 0)
    return invalidArgument("request: maxNewTokens is " + std::to_string(request.maxNewTokens) +
                           ", must be >= 0");
  if (request.cachePrefix < 0 || request.cachePrefix > n)
    return invalidArgument("request: cachePrefix is " + std::to_string(request.cachePrefix) +
                           ", must be in [0, " + std::to_string(n) + "] (the prompt's tokens)");
  if (n > model.maxSeqLen || request.maxNewTokens > model.maxSeqLen - n)
    return invalidArgument("request: " + std::to_string(n) + " prompt + " +
                           std::to_string(request.maxNewTokens) +
                           " new tokens exceed the plan's max_seq_len " +
                           std::to_string(model.maxSeqLen));
  std::lock_guard<std::mutex> lock(mutex_);
  const uint64_t id = nextId_++;
  results_[id] = GenerationResult{};
  queue_.emplace_back(id, std::move(request));
  return id;
}

Status Scheduler::cancel(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = results_.find(id);
  if (it == results_.end())
    return notFound("request " + std::to_string(id) + " is unknown (or its result was taken)");
  if (ended(it->second.state))
    return Status::ok();
  if (it->second.state == RequestState::Queued)
    queue_.erase(std::remove_if(queue_.begin(), queue_.end(),
                                [&](const auto &q) { return q.first == id; }),
                 queue_.end());
  // A running request's session goes back at its next turn in step().
  it->second.state = RequestState::Cancelled;
  return Status::ok();
}

bool Scheduler::idle() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return queue_.empty() && running_.empty();
}

Expected<GenerationResult> Scheduler::result(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = results_.find(id);
  if (it == results_.end())
    return notFound("request " + std::to_string(id) + " is unknown (or its result was taken)");
  return it->second;
}

Expected<GenerationResult> Scheduler::take(uint64_t id) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = results_.find(id);
  if (it == results_.end())
    return notFound("request " + std::to_string(id) + " is unknown (or its result was taken)");
  if (!ended(it->second.state))
    return failedPrecondition("request " + std::to_string(id) + " has not ended");
  GenerationResult r = std::move(it->second);
  results_.erase(it);
  return r;
}

void Scheduler::finish(Active &a, RequestState state, Status error) {
  a.session->reset();
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = results_.find(a.id); // gone when a cancelled request's result was taken
    if (it != results_.end() && it->second.state != RequestState::Cancelled) {
      it->second.state = state; // (a cancel wins over a late end)
      it->second.error = std::move(error);
    }
  }
  pool_.push_back(std::move(a.session));
}

Status Scheduler::prefill(Active &a, GenerationResult &r, int32_t &first) {
  Session &s = *a.session;
  const std::vector<int32_t> &ids = a.request.promptIds;
  SnapshotCache *cache = engine_.backend().runsPrefillChunks() ? options_.prefixCache : nullptr;
  Expected<HostTensor> logits = failedPrecondition("no prefill ran");
  if (cache) {
    const int64_t tail = s.minPrefixTail(), n = int64_t(ids.size());
    std::shared_ptr<const SessionSnapshot> hit = cache->lookup(ids, tail);
    const int64_t held = hit ? int64_t(hit->ids.size()) : 0;
    int64_t cut = cache->savePoint(n, tail);
    if (a.request.cachePrefix > 0)
      cut = std::min(cut, a.request.cachePrefix / cache->blockTokens() * cache->blockTokens());
    r.prefixHitTokens = held;
    if (cut > held) { // serve and save the longer prefix on the way
      SessionSnapshot saved;
      logits = s.prefillSaving(hit.get(), ids, cut, saved);
      if (logits)
        if (Status st = cache->insert(std::move(saved)); !st)
          return st;
    } else if (hit) {
      logits = s.prefillFrom(*hit, ids);
    } else {
      logits = s.prefill(ids);
    }
  } else {
    logits = s.prefill(ids);
  }
  if (!logits)
    return logits.status();
  first = greedyToken(*logits);
  return Status::ok();
}

bool Scheduler::advance(Active &a, StepReport &report) {
  bool cancelled = false;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = results_.find(a.id); // gone: cancelled and taken meanwhile
    cancelled = it == results_.end() || it->second.state == RequestState::Cancelled;
  }
  if (cancelled) {
    finish(a, RequestState::Cancelled);
    return false;
  }
  int32_t token = 0;
  Status st = Status::ok();
  GenerationResult prefillInfo;
  if (!a.prefilled) {
    st = prefill(a, prefillInfo, token);
    ++report.prefilled;
    a.prefilled = true;
  } else {
    Expected<HostTensor> logits = a.session->decode(a.next);
    st = logits ? Status::ok() : logits.status();
    if (logits)
      token = greedyToken(*logits);
    ++report.decoded;
  }
  if (!st) {
    finish(a, RequestState::Failed, st);
    ++report.failed;
    return false;
  }
  bool done = true;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = results_.find(a.id);
    if (it != results_.end()) { // else cancelled and taken during the call
      GenerationResult &r = it->second;
      if (prefillInfo.prefixHitTokens)
        r.prefixHitTokens = prefillInfo.prefixHitTokens;
      if (int64_t(r.outputIds.size()) < a.request.maxNewTokens)
        r.outputIds.push_back(token);
      done = int64_t(r.outputIds.size()) >= a.request.maxNewTokens;
    }
  }
  a.next = token;
  if (done) {
    finish(a, RequestState::Finished);
    ++report.finished;
    return false;
  }
  return true;
}

Expected<Scheduler::StepReport> Scheduler::step() {
  std::lock_guard<std::mutex> stepLock(stepMutex_);
  StepReport report;
  // Admit in FIFO order while the running set stays within its bounds.
  {
    std::lock_guard<std::mutex> lock(mutex_);
    while (!queue_.empty() && int64_t(running_.size()) < maxRunning_ &&
           (options_.memoryLimit == 0 ||
            uint64_t(running_.size() + 1) * sessionBytes_ <= options_.memoryLimit)) {
      Active a;
      a.id = queue_.front().first;
      a.request = std::move(queue_.front().second);
      queue_.pop_front();
      results_.at(a.id).state = RequestState::Running;
      running_.push_back(std::move(a));
      ++report.admitted;
    }
  }
  for (Active &a : running_)
    if (!a.session) {
      if (!pool_.empty()) {
        a.session = std::move(pool_.back());
        pool_.pop_back();
      } else {
        a.session = engine_.newSession();
      }
    }
  std::vector<Active> still;
  still.reserve(running_.size());
  for (Active &a : running_)
    if (advance(a, report))
      still.push_back(std::move(a));
  {
    std::lock_guard<std::mutex> lock(mutex_);
    running_ = std::move(still);
    report.running = int64_t(running_.size());
    report.queued = int64_t(queue_.size());
  }
  return report;
}

} // namespace dsc::runtime
