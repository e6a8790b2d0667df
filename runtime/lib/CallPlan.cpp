//===- CallPlan.cpp - One call of a program, planned once ------------------===//
//
// What the plan holds, the cache key and the invariants: CallPlan.h. The
// steps reproduce the Session's former launch loop: a replayed launch of a
// call that does not replay is skipped; a row-tiled fusion runs tile by tile
// when the backend runs tiles; otherwise a fusion the backend runs natively
// (only without an observer) is one step; every other launch is its own.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/CallPlan.h"
#include "dsc/runtime/Backend.h"

#include <algorithm>

namespace dsc::runtime {

CallGeometry callGeometry(const PlanFacts &model, int64_t startPos, int64_t tokens,
                          bool prefillLike) {
  CallGeometry g;
  g.startPos = startPos;
  g.tokens = tokens;
  g.prefillLike = prefillLike;
  g.ringRows = prefillLike ? std::min(std::max<int64_t>(model.windowSize - 1, 0), startPos) : 0;
  g.windowRows = prefillLike ? g.ringRows + tokens : model.windowSize;
  return g;
}

CallGeometry replayGeometry(const CallGeometry &call, int64_t rows) {
  CallGeometry g;
  g.startPos = call.startPos + call.tokens - rows;
  g.tokens = rows;
  g.prefillLike = true;
  g.ringRows = 0; // the replay's window starts at its first row
  g.windowRows = rows;
  return g;
}

CallGeometry tileGeometry(const CallGeometry &call, const RowTile &tile) {
  CallGeometry g = call;
  g.startPos = call.startPos + tile.offset;
  g.tokens = tile.rows;
  return g; // prefillLike, ringRows and windowRows stay the call's
}

bool sameCallClass(const CallShape &a, const CallShape &b) {
  return a.tokens == b.tokens && (a.startPos == 0) == (b.startPos == 0) &&
         a.prefillLike == b.prefillLike && a.runReplay == b.runReplay && a.observed == b.observed;
}

BackendTraits traitsOf(const Backend &backend) {
  BackendTraits traits;
  traits.rowTiles = backend.runsRowTiles();
  traits.deviceResident = backend.deviceResident();
  traits.privateArenaBytes = backend.privateArenaBytes();
  traits.runsFusion = [&backend](const Plan &plan, const Program &program, size_t first,
                                 size_t count) {
    return backend.runsFusion(plan, program, first, count);
  };
  return traits;
}

namespace {

/// The program's own checks: what the Session used to check per call.
Status checkProgram(const Plan &plan, const Program &program) {
  const std::string &name = program.name;
  const size_t n = program.values.size();
  if (program.outputs.empty())
    return internalError(name + ": the program has no outputs");
  const int64_t outputSlot = program.outputs.front();
  if (outputSlot < 0 || size_t(outputSlot) >= n)
    return internalError(name + ": output 0 is value " + std::to_string(outputSlot) +
                         ", outside the program's " + std::to_string(n) + " values");
  const ValueSlot &out = program.values[size_t(outputSlot)];
  if (out.dtype != DType::F32 || out.shape.size() != 2)
    return failedPrecondition(name + ": output 0 (value " + std::to_string(outputSlot) + " '" +
                              out.name + "') is " + dtypeName(out.dtype) + " of rank " +
                              std::to_string(out.shape.size()) +
                              ", expected F32 of rank 2 (the logits)");
  if (program.inputs.empty())
    return internalError(name + ": the program takes no token ids");
  for (int64_t v : program.inputs)
    if (v < 0 || size_t(v) >= n)
      return internalError(name + ": input value " + std::to_string(v) + " does not exist");
  for (int64_t v : program.outputs)
    if (v < 0 || size_t(v) >= n)
      return internalError(name + ": output value " + std::to_string(v) + " does not exist");
  for (size_t l = 0; l < program.launches.size(); ++l) {
    const Launch &launch = program.launches[l];
    if (launch.kernel < 0 || size_t(launch.kernel) >= plan.kernels.size())
      return internalError(name + " launch " + std::to_string(l) + ": kernel " +
                           std::to_string(launch.kernel) + " does not exist");
    for (const std::vector<int64_t> *vs : {&launch.inputs, &launch.outputs})
      for (int64_t v : *vs)
        if (v < 0 || size_t(v) >= n)
          return internalError(name + " launch " + std::to_string(l) + ": value " +
                               std::to_string(v) + " does not exist");
  }
  for (const LayerBoundary &b : program.boundaries)
    for (int64_t v : {b.stream, b.mix})
      if (v < 0 || size_t(v) >= n)
        return internalError(name + ": the boundary of layer " + std::to_string(b.layer) +
                             " names value " + std::to_string(v) + ", which does not exist");
  for (size_t i = 0; i < n; ++i) {
    const ValueSlot &slot = program.values[i];
    auto where = [&] {
      return name + ": value slot " + std::to_string(i) + " ('" + slot.name + "'): ";
    };
    if (slot.kind == ValueKind::Weight &&
        (slot.tensor < 0 || size_t(slot.tensor) >= plan.tensors.size()))
      return internalError(where() + "weight " + std::to_string(slot.tensor) + " does not exist");
    if (slot.kind == ValueKind::State &&
        (slot.state < 0 || size_t(slot.state) >= plan.states.size()))
      return internalError(where() + "state " + std::to_string(slot.state) + " does not exist");
  }
  return Status::ok();
}

bool isActivation(const Program &program, int64_t v) {
  return program.values[size_t(v)].kind == ValueKind::Input ||
         program.values[size_t(v)].kind == ValueKind::Activation;
}

/// The end of the fusion launch `l` starts (launches are contiguous per
/// fusion, verifyPlan), or l + 1 when it is in none.
size_t fusionEnd(const Program &program, size_t l) {
  const int64_t f = program.launches[l].fusion;
  size_t end = l + 1;
  if (f < 0 || size_t(f) >= program.fusions.size())
    return end;
  while (end < program.launches.size() && program.launches[end].fusion == f)
    ++end;
  return end;
}

/// The position-independent steps.
Expected<std::vector<CallStep>> planSteps(const Plan &plan, const Program &program,
                                          const CallShape &shape, const BackendTraits &traits,
                                          int64_t replayRows) {
  const PlanFacts &model = plan.model;
  std::vector<CallStep> steps;
  const size_t n = program.launches.size();
  for (size_t l = 0; l < n;) {
    const Launch &launch = program.launches[l];
    const size_t fEnd = fusionEnd(program, l);
    for (size_t k = l + 1; k < fEnd; ++k)
      if (program.launches[k].replay != launch.replay)
        return internalError(program.name + " launch " + std::to_string(k) + ": fusion " +
                             std::to_string(launch.fusion) +
                             " mixes replayed and full-prompt launches");
    // An earlier chunk of a chunked CED prefill: the replay is the last
    // chunk's (its slots stay zero and unread).
    if (launch.replay && !shape.runReplay) {
      steps.push_back({CallStep::Kind::SkipReplay, l, l + 1, true, {}});
      ++l;
      continue;
    }
    if (launch.replay && (model.cedReplayTokens <= 0 || !shape.prefillLike))
      return internalError(program.name + " launch " + std::to_string(l) +
                           ": a replayed launch outside a CED prefill");
    const bool inFusion = launch.fusion >= 0 && size_t(launch.fusion) < program.fusions.size();
    if (inFusion && program.fusions[size_t(launch.fusion)].tileRows > 0 && traits.rowTiles) {
      // Row-tiled fusions (Fusion::tileRows, the indexer) run all their
      // steps on one tile of rows at a time.
      const int64_t tileRows = program.fusions[size_t(launch.fusion)].tileRows;
      const int64_t rows = launch.replay ? replayRows : shape.tokens;
      CallStep step{CallStep::Kind::RowTiles, l, fEnd, launch.replay, {}};
      for (int64_t r0 = 0; r0 < rows; r0 += tileRows)
        step.tiles.push_back({r0, std::min(tileRows, rows - r0)});
      steps.push_back(std::move(step));
      l = fEnd;
      continue;
    }
    // A fused kernel the backend runs as one kernel (Backend::runsFusion);
    // with an observer attached, steps run one by one.
    if (inFusion && !shape.observed && traits.runsFusion &&
        traits.runsFusion(plan, program, l, fEnd - l)) {
      steps.push_back({CallStep::Kind::NativeFusion, l, fEnd, launch.replay, {}});
      l = fEnd;
      continue;
    }
    for (size_t k = l; k < fEnd; ++k) // a fusion run step by step, or one launch
      steps.push_back({CallStep::Kind::Launch, k, k + 1, program.launches[k].replay, {}});
    l = fEnd;
  }
  return steps;
}

/// Last uses (independent of the planner's ranges): the last launch reading
/// or writing a slot, to the end of its fusion, to its boundary when an
/// observer sees boundaries, past the end for outputs.
void planLastUses(const Plan &plan, const Program &program, const CallShape &shape,
                  CallPlan &out) {
  const size_t n = program.launches.size();
  out.lastUse.assign(program.values.size(), -1);
  for (size_t k = 0; k < n; ++k) {
    for (int64_t v : program.launches[k].inputs)
      out.lastUse[size_t(v)] = int64_t(k);
    for (int64_t v : program.launches[k].outputs)
      out.lastUse[size_t(v)] = int64_t(k);
  }
  if (shape.observed && plan.model.layerBoundaries)
    for (const LayerBoundary &b : program.boundaries)
      for (int64_t v : {b.stream, b.mix})
        out.lastUse[size_t(v)] = std::max(out.lastUse[size_t(v)], b.afterLaunch);
  // A fusion is one launch (native, or its steps rerun per row tile): what
  // its steps touch lives to its end, as the planner assumes.
  for (const auto &[first, last] : fusionRanges(program))
    for (int64_t k = first; k <= last; ++k)
      for (const std::vector<int64_t> *vs :
           {&program.launches[size_t(k)].inputs, &program.launches[size_t(k)].outputs})
        for (int64_t v : *vs)
          out.lastUse[size_t(v)] = std::max(out.lastUse[size_t(v)], last);
  for (int64_t v : program.outputs)
    out.lastUse[size_t(v)] = int64_t(n);
  out.dieAfter.assign(n, {});
  for (size_t v = 0; v < program.values.size(); ++v)
    if (out.lastUse[v] >= 0 && size_t(out.lastUse[v]) < n && isActivation(program, int64_t(v)))
      out.dieAfter[size_t(out.lastUse[v])].push_back(int64_t(v));
}

} // namespace

std::vector<int64_t> zeroingLaunches(const Program &program) {
  std::vector<int64_t> at(program.values.size(), -1);
  for (size_t k = program.launches.size(); k-- > 0;)
    for (int64_t v : program.launches[k].outputs)
      if (v >= 0 && size_t(v) < at.size())
        at[size_t(v)] = int64_t(k);
  return at;
}

namespace {

/// The zeroing schedule: each planned slot right before its first writing
/// launch (position independent).
void planZeroing(const Program &program, CallPlan &out) {
  out.zeroAtStart.clear();
  out.zeroBefore.assign(program.launches.size(), {});
  const std::vector<int64_t> at = zeroingLaunches(program);
  for (size_t i = 0; i < out.host.values.size(); ++i) {
    const ValueMemory &m = out.host.values[i];
    if (!m.planned)
      continue;
    if (m.first < 0 || i >= at.size() || at[i] < 0) // an input, or nothing writes it
      out.zeroAtStart.push_back(int64_t(i));
    else
      out.zeroBefore[size_t(at[i])].push_back(int64_t(i));
  }
}

/// Boundaries in program order, each after the launch it names (the former
/// cursor: boundaries are sorted by afterLaunch).
void planBoundaries(const Program &program, CallPlan &out) {
  out.boundariesAfter.assign(program.launches.size(), {});
  size_t next = 0;
  for (size_t l = 0; l < program.launches.size(); ++l)
    while (next < program.boundaries.size() && program.boundaries[next].afterLaunch == int64_t(l))
      out.boundariesAfter[l].push_back(next++);
}

} // namespace

Expected<CallPlan> planCall(const Plan &plan, const Program &program, const CallShape &shape,
                            const BackendTraits &traits) {
  if (Status s = checkProgram(plan, program); !s)
    return s;
  if (shape.tokens <= 0)
    return invalidArgument(program.name + ": no tokens");
  if (shape.startPos < 0)
    return invalidArgument(program.name + ": start position " + std::to_string(shape.startPos) +
                           " is negative");
  CallPlan out;
  out.shape = shape;
  out.tokenInput = size_t(program.inputs.front());
  out.logitsOutput = size_t(program.outputs.front());
  const PlanFacts &model = plan.model;
  out.call = callGeometry(model, shape.startPos, shape.tokens, shape.prefillLike);
  if (model.cedReplayTokens > 0) {
    out.replayRows = std::min(model.cedReplayTokens, shape.tokens);
    out.replay = replayGeometry(out.call, out.replayRows);
  }
  Expected<MemoryPlan> host = planMemory(plan, program, shape.tokens, shape.startPos,
                                         /*capacity=*/false, traits.rowTiles);
  if (!host)
    return host.status();
  out.host = std::move(host.value());
  out.hostPlacements = 1;
  {
    const ValueSlot &input = program.values[out.tokenInput];
    const ValueMemory &m = out.host.values[out.tokenInput];
    int64_t elements = 1;
    for (int64_t d : m.shape)
      elements *= d;
    if (!m.planned || input.dtype != DType::I32 || elements != shape.tokens)
      return internalError(program.name + ": token input slot does not match the call");
  }
  // The device layout: kCompressed* dims at capacity, planned at position 0
  // for a first call and at the last position (max_seq_len - S) otherwise,
  // so one layout serves every decode call and a captured graph keeps its
  // addresses; a small call's values (a decode step's) get bytes of their
  // own, so no launch of its graph waits for another only for the bytes.
  if (traits.deviceResident) {
    const int64_t deviceStart = shape.startPos == 0 ? 0 : model.maxSeqLen - shape.tokens;
    Expected<MemoryPlan> device =
        planDeviceMemory(plan, program, shape.tokens, deviceStart, traits.privateArenaBytes);
    if (!device)
      return device.status().withContext(program.name + ": device arena: ");
    out.device = std::move(device.value());
    out.hasDevicePlan = true;
  }
  out.tileRows = traits.rowTiles ? rowTiledValues(program)
                                 : std::vector<int64_t>(program.values.size(), 0);
  for (size_t i = 0; i < program.values.size(); ++i)
    if (sizeDependsOnStart(program.values[i]))
      out.startSlots.push_back(i);
  planZeroing(program, out);
  planLastUses(plan, program, shape, out);
  planBoundaries(program, out);
  Expected<std::vector<CallStep>> steps = planSteps(plan, program, shape, traits, out.replayRows);
  if (!steps)
    return steps.status();
  out.steps = std::move(steps.value());
  return out;
}

Status resolveStart(CallPlan &callPlan, const Plan &plan, const Program &program,
                    int64_t startPos, const BackendTraits &traits) {
  CallShape shape = callPlan.shape;
  shape.startPos = startPos;
  if (startPos < 0 || !sameCallClass(callPlan.shape, shape))
    return internalError(program.name + ": a call plan for start " +
                         std::to_string(callPlan.shape.startPos) + " cannot serve start " +
                         std::to_string(startPos));
  if (startPos == callPlan.shape.startPos)
    return Status::ok();
  // Only the slots with a start-dependent dim change size (startSlots).
  std::vector<ValueMemory> sized;
  sized.reserve(callPlan.startSlots.size());
  for (size_t i : callPlan.startSlots) {
    Expected<ValueMemory> v = sizeValue(plan, program, i, shape.tokens, startPos,
                                        /*capacity=*/false, callPlan.tileRows[i]);
    if (!v)
      return v.status();
    sized.push_back(std::move(v.value()));
  }
  // planMemory's offsets follow from the aligned sizes and the program's
  // live ranges only: a layout with the same aligned sizes is the one
  // planMemory would make here, up to the exact shapes.
  auto placesAlike = [&](const MemoryPlan &m) {
    for (size_t k = 0; k < sized.size(); ++k)
      if (sized[k].alignedBytes != m.values[callPlan.startSlots[k]].alignedBytes)
        return false;
    return true;
  };
  if (!placesAlike(callPlan.host)) {
    std::vector<MemoryPlan> &known = callPlan.otherLayouts;
    auto it = std::find_if(known.begin(), known.end(), placesAlike);
    MemoryPlan next;
    if (it != known.end()) {
      next = std::move(*it);
      known.erase(it);
    } else {
      Expected<MemoryPlan> host =
          planMemory(plan, program, shape.tokens, startPos, /*capacity=*/false, traits.rowTiles);
      if (!host)
        return host.status();
      next = std::move(host.value());
      ++callPlan.hostPlacements;
    }
    known.insert(known.begin(), std::move(callPlan.host));
    if (known.size() > kOtherHostLayouts)
      known.pop_back();
    callPlan.host = std::move(next);
  }
  for (size_t k = 0; k < sized.size(); ++k) {
    ValueMemory &m = callPlan.host.values[callPlan.startSlots[k]];
    m.shape = std::move(sized[k].shape);
    m.bytes = sized[k].bytes;
  }
  callPlan.host.startPos = startPos;
  callPlan.shape = shape;
  callPlan.call = callGeometry(plan.model, startPos, shape.tokens, shape.prefillLike);
  if (callPlan.replayRows > 0)
    callPlan.replay = replayGeometry(callPlan.call, callPlan.replayRows);
  return Status::ok();
}

} // namespace dsc::runtime
