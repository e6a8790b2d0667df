//===- MemoryPlan.cpp - Static activation arena with liveness --------------===//
//
// Algorithm and invariant: MemoryPlan.h.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/HostTensor.h"
#include "dsc/runtime/StateLayout.h"

#include <algorithm>
#include <numeric>

#include <unistd.h>

namespace dsc::runtime {

int64_t resolveDim(int64_t dim, int64_t ratio, int64_t startPos, int64_t tokens,
                   int64_t replayTokens) {
  switch (dim) {
  case kTokens:
    return tokens;
  case kReplayTokens:
    return replayTokens > 0 ? std::min(replayTokens, tokens) : tokens;
  case kCompressedTokens:
    return (startPos + tokens) / ratio - startPos / ratio;
  case kCompressedLength:
    return (startPos + tokens) / ratio;
  case kWindowRows:
    // A prefill chunk reads min(W-1, startPos) ring rows before its own
    // (chunks have >= W tokens); decode (one token past 0) the ring's W.
    return startPos == 0 || tokens > 1 ? tokens + std::min(ratio - 1, startPos) : ratio;
  default:
    return dim;
  }
}

int64_t resolveDim(int64_t dim, int64_t ratio, int64_t startPos, int64_t tokens) {
  return resolveDim(dim, ratio, startPos, tokens, 0);
}

namespace {

uint64_t alignUp(uint64_t bytes) {
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

bool conflicts(const ValueMemory &a, const ValueMemory &b) {
  return a.first <= b.last && b.first <= a.last;
}

/// The plan's weight bytes and one sequence's state bytes (memory that is not
/// an activation: it lives as long as the Engine or the Session).
Status fillResidentBytes(const Plan &plan, uint64_t &weightBytes, uint64_t &stateBytes) {
  Expected<uint64_t> weights = planWeightBytes(plan);
  if (!weights)
    return weights.status();
  Expected<uint64_t> states = planStateBytes(plan);
  if (!states)
    return states.status();
  weightBytes = *weights;
  stateBytes = *states;
  return Status::ok();
}

} // namespace

std::vector<std::pair<int64_t, int64_t>> fusionRanges(const Program &program) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (size_t l = 0; l < program.launches.size(); ++l) {
    const int64_t f = program.launches[l].fusion;
    if (f < 0 || size_t(f) >= program.fusions.size())
      continue;
    if (!ranges.empty() && ranges.back().second == int64_t(l) - 1 &&
        program.launches[l - 1].fusion == f)
      ranges.back().second = int64_t(l);
    else
      ranges.push_back({int64_t(l), int64_t(l)});
  }
  return ranges;
}

std::vector<int64_t> rowTiledValues(const Program &program) {
  const size_t n = program.values.size();
  std::vector<int64_t> tile(n, 0);
  // -1: not yet seen; -2: touched outside one tiled fusion; else the fusion.
  std::vector<int64_t> owner(n, -1);
  auto touch = [&](int64_t v, const Launch &launch) {
    if (v < 0 || size_t(v) >= n)
      return;
    const bool tiled = launch.fusion >= 0 && size_t(launch.fusion) < program.fusions.size() &&
                       program.fusions[size_t(launch.fusion)].tileRows > 0;
    int64_t &o = owner[size_t(v)];
    if (!tiled || (o >= 0 && o != launch.fusion))
      o = -2;
    else if (o == -1)
      o = launch.fusion;
  };
  for (const Launch &launch : program.launches) {
    for (int64_t v : launch.inputs)
      touch(v, launch);
    for (int64_t v : launch.outputs)
      touch(v, launch);
  }
  for (int64_t v : program.outputs)
    if (v >= 0 && size_t(v) < n)
      owner[size_t(v)] = -2;
  for (const LayerBoundary &b : program.boundaries)
    for (int64_t v : {b.stream, b.mix})
      if (v >= 0 && size_t(v) < n)
        owner[size_t(v)] = -2;
  for (size_t v = 0; v < n; ++v) {
    const ValueSlot &slot = program.values[v];
    if (owner[v] >= 0 && slot.kind == ValueKind::Activation && !slot.shape.empty() &&
        (slot.shape[0] == kTokens || slot.shape[0] == kReplayTokens))
      tile[v] = program.fusions[size_t(owner[v])].tileRows;
  }
  return tile;
}

bool sizeDependsOnStart(const ValueSlot &slot) {
  if (slot.kind != ValueKind::Input && slot.kind != ValueKind::Activation)
    return false;
  for (int64_t d : slot.shape)
    if (d == kCompressedTokens || d == kCompressedLength || d == kWindowRows)
      return true;
  return false;
}

Expected<ValueMemory> sizeValue(const Plan &plan, const Program &program, size_t i,
                                int64_t tokens, int64_t startPos, bool capacity,
                                int64_t tileRows) {
  const ValueSlot &slot = program.values[i];
  ValueMemory v;
  if (slot.kind != ValueKind::Input && slot.kind != ValueKind::Activation)
    return v;
  v.planned = true;
  auto where = [&] { // built only for an error (this runs on every call)
    return program.name + ": value slot " + std::to_string(i) + " ('" + slot.name + "'): ";
  };
  // Same checks and messages as HostTensor::resetChecked.
  v.shape = slot.shape;
  for (int64_t &d : v.shape) {
    if ((d == kCompressedTokens || d == kCompressedLength) && slot.ratio <= 0)
      return invalidArgument(where() + "compressed dimension with ratio " +
                             std::to_string(slot.ratio) + ", expected a positive ratio");
    if (capacity && d == kCompressedTokens)
      d = compressedTokensCapacity(tokens, slot.ratio);
    else if (capacity && d == kCompressedLength)
      d = std::max<int64_t>(plan.model.maxSeqLen, startPos + tokens) / slot.ratio;
    else
      d = resolveDim(d, slot.ratio, startPos, tokens, plan.model.cedReplayTokens);
  }
  if (tileRows > 0) // one row tile of a row-tiled fusion
    v.shape[0] = std::min(v.shape[0], tileRows);
  std::optional<uint64_t> bytes = HostTensor::checkedByteSize(slot.dtype, v.shape);
  if (!bytes || *bytes > HostTensor::kMaxBytes)
    return invalidArgument(
        where() + "tensor shape " + HostTensor::shapeString(v.shape) + " of " + dtypeName(slot.dtype) +
        (bytes ? " needs " + std::to_string(*bytes) + " bytes, more than the limit of " +
                     std::to_string(HostTensor::kMaxBytes)
               : std::string(" has a negative dimension or overflows")));
  v.bytes = *bytes;
  v.alignedBytes = alignUp(*bytes);
  v.first = v.last = -2; // untouched so far
  return v;
}

Expected<std::vector<ValueMemory>> sizeValues(const Plan &plan, const Program &program,
                                              int64_t tokens, int64_t startPos, bool capacity,
                                              bool rowTiles) {
  const std::vector<int64_t> tiles =
      rowTiles ? rowTiledValues(program) : std::vector<int64_t>(program.values.size(), 0);
  std::vector<ValueMemory> values;
  values.reserve(program.values.size());
  for (size_t i = 0; i < program.values.size(); ++i) {
    Expected<ValueMemory> v = sizeValue(plan, program, i, tokens, startPos, capacity, tiles[i]);
    if (!v)
      return v.status();
    values.push_back(std::move(v.value()));
  }
  return values;
}

Expected<MemoryPlan> planMemory(const Plan &plan, const Program &program, int64_t tokens,
                                int64_t startPos, bool capacity, bool rowTiles, bool reuse) {
  Expected<std::vector<ValueMemory>> sized =
      sizeValues(plan, program, tokens, startPos, capacity, rowTiles);
  if (!sized)
    return sized.status();
  MemoryPlan result;
  result.program = program.name;
  result.tokens = tokens;
  result.startPos = startPos;
  result.launches = int64_t(program.launches.size());
  const int64_t n = int64_t(program.values.size());
  result.values = std::move(sized.value());

  // Live ranges.
  auto inRange = [&](int64_t v) { return v >= 0 && v < n && result.values[v].planned; };
  for (int64_t v : program.inputs)
    if (inRange(v))
      result.values[v].first = result.values[v].last = -1;
  for (int64_t l = 0; l < result.launches; ++l) {
    const Launch &launch = program.launches[l];
    for (int64_t v : launch.outputs)
      if (inRange(v)) {
        ValueMemory &m = result.values[v];
        if (m.first == -2)
          m.first = l;
        m.last = l;
      }
    for (int64_t v : launch.inputs)
      if (inRange(v)) {
        ValueMemory &m = result.values[v];
        if (m.first == -2) // read before any write: treat as live from the start
          m.first = -1;
        m.last = l;
      }
  }
  for (int64_t v : program.outputs)
    if (inRange(v)) {
      ValueMemory &m = result.values[v];
      if (m.first == -2)
        m.first = -1;
      m.last = result.launches;
    }
  for (const LayerBoundary &b : program.boundaries)
    for (int64_t v : {b.stream, b.mix})
      if (inRange(v)) {
        ValueMemory &m = result.values[v];
        if (m.first == -2)
          m.first = -1;
        m.last = std::max(m.last, b.afterLaunch);
      }
  for (ValueMemory &m : result.values)
    if (m.planned && m.first == -2)
      m.first = m.last = -1; // no launch touches it
  // A fused kernel is one launch: a native one reads its inputs and writes
  // its outputs at any time during it, a row-tiled one reruns its steps per
  // tile. Every value a fusion's steps touch is live over the whole fusion.
  for (const auto &[first, last] : fusionRanges(program))
      for (int64_t l = first; l <= last; ++l) {
        const Launch &launch = program.launches[size_t(l)];
        for (const std::vector<int64_t> *values : {&launch.inputs, &launch.outputs})
          for (int64_t v : *values)
            if (inRange(v)) {
              ValueMemory &m = result.values[size_t(v)];
              m.first = std::min(m.first, first);
              m.last = std::max(m.last, last);
            }
      }

  // Lower bound: aligned bytes live at each point (sweep over range ends).
  {
    // index t + 1 for launch t in [-1, launches]
    std::vector<uint64_t> add(size_t(result.launches) + 3, 0), sub(add.size(), 0);
    for (const ValueMemory &m : result.values)
      if (m.planned) {
        add[size_t(m.first + 1)] += m.alignedBytes;
        sub[size_t(m.last + 2)] += m.alignedBytes;
      }
    uint64_t live = 0;
    for (size_t t = 0; t + 1 < add.size(); ++t) {
      live = live + add[t] - sub[t];
      result.liveBound = std::max(result.liveBound, live);
    }
  }

  // Placement: greedy best fit, largest first.
  std::vector<int64_t> order;
  for (int64_t i = 0; i < n; ++i)
    if (result.values[i].planned) {
      result.sumBytes += result.values[i].alignedBytes;
      if (result.sumBytes > HostTensor::kMaxBytes * 64) // far beyond anything allocatable
        return invalidArgument(program.name + ": activations exceed " +
                               std::to_string(HostTensor::kMaxBytes * 64) + " bytes");
      if (result.values[i].alignedBytes)
        order.push_back(i);
    }
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const ValueMemory &x = result.values[a], &y = result.values[b];
    if (x.alignedBytes != y.alignedBytes)
      return x.alignedBytes > y.alignedBytes;
    if (x.first != y.first)
      return x.first < y.first;
    return a < b;
  });
  std::vector<int64_t> placed;
  std::vector<std::pair<uint64_t, uint64_t>> busy; // [offset, end) of conflicting values
  for (int64_t i : order) {
    ValueMemory &m = result.values[i];
    busy.clear();
    for (int64_t j : placed) // without reuse every placed value is in the way
      if (!reuse || conflicts(m, result.values[j]))
        busy.push_back({result.values[j].offset, result.values[j].offset + result.values[j].alignedBytes});
    std::sort(busy.begin(), busy.end());
    uint64_t best = UINT64_MAX, bestGap = UINT64_MAX, cursor = 0;
    for (const auto &[begin, end] : busy) {
      if (begin > cursor) {
        uint64_t gap = begin - cursor;
        if (gap >= m.alignedBytes && gap < bestGap) {
          best = cursor;
          bestGap = gap;
        }
      }
      cursor = std::max(cursor, end);
    }
    m.offset = best != UINT64_MAX ? best : cursor;
    result.peakBytes = std::max(result.peakBytes, m.offset + m.alignedBytes);
    placed.push_back(i);
  }
  if (result.peakBytes > HostTensor::kMaxBytes)
    return invalidArgument(program.name + ": the activation arena needs " +
                           std::to_string(result.peakBytes) + " bytes, more than the limit of " +
                           std::to_string(HostTensor::kMaxBytes));

  if (Status s = fillResidentBytes(plan, result.weightBytes, result.stateBytes); !s)
    return s;
  return result;
}

Expected<MemoryPlan> planDeviceMemory(const Plan &plan, const Program &program, int64_t tokens,
                                      int64_t startPos, uint64_t privateBytes) {
  // The sizes decide (planMemory's sumBytes), so place only once.
  Expected<std::vector<ValueMemory>> sized =
      sizeValues(plan, program, tokens, startPos, /*capacity=*/true, /*rowTiles=*/false);
  if (!sized)
    return sized.status();
  uint64_t sum = 0; // saturates above privateBytes
  for (const ValueMemory &m : *sized)
    if (m.planned && sum <= privateBytes)
      sum = m.alignedBytes > privateBytes - sum ? privateBytes + 1 : sum + m.alignedBytes;
  return planMemory(plan, program, tokens, startPos, /*capacity=*/true, /*rowTiles=*/false,
                    /*reuse=*/privateBytes == 0 || sum > privateBytes);
}

Expected<uint64_t> planWeightBytes(const Plan &plan) {
  uint64_t total = 0;
  for (const TensorBinding &t : plan.tensors) {
    std::optional<uint64_t> bytes = HostTensor::checkedByteSize(t.dtype, t.shape);
    if (!bytes || __builtin_add_overflow(total, *bytes, &total))
      return invalidArgument("tensor '" + t.name + "': shape " + HostTensor::shapeString(t.shape) +
                             " overflows");
  }
  return total;
}

namespace {
/// One sequence's states: every state at its capacity (contextTokens < 0),
/// or paged to `contextTokens` tokens (pagedStateBytes).
Expected<uint64_t> sequenceStateBytes(const Plan &plan, int64_t contextTokens) {
  uint64_t total = 0;
  for (size_t i = 0; i < plan.states.size(); ++i) {
    const StateBuffer &s = plan.states[i];
    uint64_t bytes = 0;
    switch (s.kind) {
    case StateKind::WindowRing:
    case StateKind::DSparkRing:
    case StateKind::MainKv:
    case StateKind::IndexKeys: {
      StateBuffer sized = s;
      const bool perToken = s.kind == StateKind::MainKv || s.kind == StateKind::IndexKeys;
      // Paged per-token records shrink to the context's whole pages; an
      // unpaged state is one allocation of its capacity whatever the context.
      if (contextTokens >= 0 && perToken && s.ratio > 0 && s.layout.tokensPerPage > 0) {
        const int64_t entries = contextTokens / s.ratio + (contextTokens % s.ratio != 0);
        sized.capacity = entries < s.capacity ? entries : s.capacity;
      }
      Expected<int64_t> b = stateBytes(sized);
      if (!b)
        return b.status();
      bytes = uint64_t(*b);
      break;
    }
    case StateKind::CompressorState: {
      int64_t dim = s.dim;
      if (dim <= 0) // as Session::reset: plans from before StateBuffer::dim
        for (const Program &p : plan.programs)
          for (const ValueSlot &v : p.values)
            if (v.state == int64_t(i) && v.shape.size() == 3)
              dim = v.shape[2];
      std::optional<uint64_t> b = HostTensor::checkedByteSize(DType::F32, {2, s.ratio, dim});
      if (!b)
        return invalidArgument("state '" + s.name + "': size overflows");
      bytes = *b;
      break;
    }
    case StateKind::EngramHistory: {
      const int64_t ids =
          contextTokens >= 0 && contextTokens < s.capacity ? contextTokens : s.capacity;
      std::optional<uint64_t> b = HostTensor::checkedByteSize(DType::I64, {ids});
      if (!b)
        return invalidArgument("state '" + s.name + "': size overflows");
      bytes = *b;
      break;
    }
    }
    if (__builtin_add_overflow(total, bytes, &total))
      return invalidArgument("state bytes overflow");
  }
  return total;
}
} // namespace

Expected<uint64_t> planStateBytes(const Plan &plan) { return sequenceStateBytes(plan, -1); }

Expected<uint64_t> pagedStateBytes(const Plan &plan, int64_t contextTokens) {
  if (contextTokens < 0 || contextTokens > plan.model.maxSeqLen)
    return invalidArgument("a context of " + std::to_string(contextTokens) +
                           " tokens: the plan holds 0 to max_seq_len " +
                           std::to_string(plan.model.maxSeqLen));
  return sequenceStateBytes(plan, contextTokens);
}

std::vector<PrefillChunk> prefillChunks(int64_t promptTokens, int64_t chunk) {
  if (chunk <= 0 || promptTokens <= chunk)
    return {{0, promptTokens}};
  const int64_t n = (promptTokens + chunk - 1) / chunk;
  std::vector<PrefillChunk> chunks;
  chunks.reserve(size_t(n));
  for (int64_t i = 0; i < n; ++i) {
    // floor(i·S/n) without overflow for any S below 2^62 / n.
    const int64_t begin = i * (promptTokens / n) + (i * (promptTokens % n)) / n;
    const int64_t end = (i + 1) * (promptTokens / n) + ((i + 1) * (promptTokens % n)) / n;
    chunks.push_back({begin, end - begin});
  }
  return chunks;
}

Expected<PlanMemorySummary> summarizePlanMemory(const Plan &plan, int64_t prefillTokens,
                                                int64_t decodePosition, bool rowTiles) {
  PlanMemorySummary summary;
  if (Status s = fillResidentBytes(plan, summary.weightBytes, summary.stateBytes); !s)
    return s;
  int64_t maxLen = std::max<int64_t>(plan.model.maxSeqLen, 1);
  int64_t s = prefillTokens > 0 ? prefillTokens : maxLen;
  int64_t pos = decodePosition >= 0 ? decodePosition : std::max<int64_t>(maxLen - 1, 1);
  if (const Program *prefill = plan.program("prefill")) {
    PhaseMemory phase{"prefill", "prefill", 0, 0, 0, 0, s, 0};
    for (const PrefillChunk &chunk : prefillChunks(s, plan.model.prefillChunk)) {
      Expected<MemoryPlan> m =
          planMemory(plan, *prefill, chunk.tokens, chunk.startPos, false, rowTiles);
      if (!m)
        return m.status();
      ++phase.chunks;
      if (m->peakBytes >= phase.peakBytes) {
        phase.tokens = chunk.tokens;
        phase.startPos = chunk.startPos;
        phase.peakBytes = m->peakBytes;
        phase.sumBytes = m->sumBytes;
      }
    }
    summary.phases.push_back(phase);
  }
  if (const Program *decode = plan.program("decode")) {
    Expected<MemoryPlan> m = planMemory(plan, *decode, 1, pos, false, rowTiles);
    if (!m)
      return m.status();
    summary.phases.push_back({"decode", "decode", 1, pos, m->peakBytes, m->sumBytes, 1, 1});
  }
  return summary;
}

Status checkSessionMemory(const Plan &plan, uint64_t limit) {
  Expected<uint64_t> states = planStateBytes(plan);
  if (!states)
    return states.status();
  uint64_t peak = 0;
  for (const Program &p : plan.programs)
    peak = std::max({peak, p.peakBytes, p.peakBytesUntiled});
  // The peaks the plan records are its writer's word; what the backends will
  // allocate follows from the values' shapes, so those are planned here too
  // (the longest prompt in the plan's chunks, decode at the last position):
  // a value's shape edited to 2^31 rows once passed with the recorded peak
  // and made the CPU backend ask for tens of GiB (dsc-plan-mutants).
  Expected<PlanMemorySummary> computed = summarizePlanMemory(plan, -1, -1, /*rowTiles=*/false);
  if (!computed)
    return computed.status();
  for (const PhaseMemory &phase : computed->phases)
    peak = std::max(peak, phase.peakBytes);
  if (limit == 0) {
    const long pages = sysconf(_SC_PHYS_PAGES), pageSize = sysconf(_SC_PAGE_SIZE);
    limit = pages > 0 && pageSize > 0 ? uint64_t(pages) * uint64_t(pageSize) : UINT64_MAX;
  }
  if (*states > limit || peak > limit - *states)
    return invalidArgument(
        "plan: one session needs " + std::to_string(*states) + " bytes of states (every state at "
        "its capacity, max_seq_len " + std::to_string(plan.model.maxSeqLen) + ") and " +
        std::to_string(peak) + " bytes of activations, more than the " + std::to_string(limit) +
        " bytes allowed (EngineOptions::sessionMemoryLimit; default: this machine's memory); "
        "compile with a smaller --max-seq-len");
  return Status::ok();
}

} // namespace dsc::runtime
