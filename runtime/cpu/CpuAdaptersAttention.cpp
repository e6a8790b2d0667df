//===- CpuAdaptersAttention.cpp - Launch adapters for CSA2 attention -------===//
//
// rope, window_kv, compressor, compress_kv, index_keys, index_queries,
// indexer_score, candidate_blocks, indexer_topk, sparse_attention. State
// buffers (rings, per-source main KV and index keys) are packed records in
// the plan's layout (StateLayout.h); the math is kernels/attention.
// Conventions between launches (docs/kernels.md): index queries travel as
// bf16 (their QDQ values are bf16-exact); scores as bf16 with -inf for
// invisible positions; top-k as int32 [S, k] offset by the window rows, -1
// for none (columns beyond min(k, T) are -1).
//===----------------------------------------------------------------------===//
#include "runtime/cpu/CpuAdapter.h"

#include "dsc/numerics/ScalarCodecs.h"
#include "dsc/runtime/StateLayout.h"
#include "runtime/cpu/kernels/attention/Compressor.h"
#include "runtime/cpu/kernels/attention/Indexer.h"
#include "runtime/cpu/kernels/attention/KvRecords.h"
#include "runtime/cpu/kernels/attention/Rope.h"
#include "runtime/cpu/kernels/attention/SparseAttention.h"
#include "runtime/cpu/kernels/attention/WindowKv.h"

#include <cstring>
#include <limits>

namespace dsc::cpu {
namespace {

using runtime::StateBuffer;

RopeFreqs ropeOf(const abi::Rope &r) {
  return makeRopeFreqs(r.dim, r.theta, r.original_seq_len, r.factor, r.beta_fast, r.beta_slow);
}

KvRecordPool poolOf(const StateBuffer &state, HostTensor &bytes) {
  KvRecordPool pool;
  pool.layout = runtime::pageLayoutOf(state.layout);
  pool.pool = bytes.data<uint8_t>();
  pool.capacity = state.capacity;
  return pool;
}

Status needState(const StateBuffer *state, const char *kernel) {
  if (!state)
    return runtime::internalError(std::string(kernel) + ": expected a state buffer operand");
  return Status::ok();
}

std::vector<float> widen(const uint16_t *x, int64_t n) {
  std::vector<float> out(n);
  for (int64_t i = 0; i < n; ++i)
    out[i] = numerics::bf16ToFloat(x[i]);
  return out;
}

void narrow(const float *x, int64_t n, uint16_t *y) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = numerics::bf16FromFloat(x[i]);
}

Status rope(LaunchContext &c, const abi::RopeParams &p) {
  RopeFreqs freqs = ropeOf(p.rope);
  int64_t stride = p.position_stride;
  bool inverse = p.inverse != 0;
  const HostTensor &x = *c.inputs[0];
  HostTensor &y = *c.outputs[0];
  std::memcpy(y.bytes(), x.bytes(), x.byteSize());
  int64_t rows = x.dim(0), width = x.shape().back();
  int64_t heads = x.shape().size() == 3 ? x.dim(1) : 1;
  applyRope(y.data<uint16_t>(), rows, heads, width, freqs, c.call.startPos * stride, stride,
            inverse);
  return Status::ok();
}

/// The start position the window helpers (windowKvRows, windowIdxWidth) see:
/// 0 in a chunk call (prefill, CED replay: the window source is the chunk's
/// own rows), the position in decode.
int64_t windowPos(const LaunchContext &c) { return c.call.prefillLike ? 0 : c.call.startPos; }

Status windowKv(LaunchContext &c, const abi::WindowKvParams &p) {
  int64_t window = p.window;
  const StateBuffer *ring = c.outputState(0);
  if (Status s = needState(ring, "window_kv"); !s)
    return s;
  const HostTensor &kv = *c.inputs[0];
  KvRecordPool pool = poolOf(*ring, *c.outputs[0]);
  int64_t dim = kv.shape().back();
  const int64_t ringRows = c.call.ringRows;
  if (window > ring->capacity ||
      c.outputs[1]->dim(0) < windowKvRows(windowPos(c), kv.dim(0), window, ringRows) ||
      ringRows < 0 || ringRows >= window || ringRows > c.call.startPos)
    return runtime::invalidArgument("window_kv: window " + std::to_string(window) + ", ring of " +
                                    std::to_string(ring->capacity) + " slots, " +
                                    std::to_string(c.outputs[1]->dim(0)) + " window rows, " +
                                    std::to_string(ringRows) + " ring rows before position " +
                                    std::to_string(c.call.startPos));
  if (c.call.prefillLike) {
    // A continuation chunk reads the ring's last rows before overwriting them.
    float *rows = c.outputs[1]->data<float>();
    windowRingPrefix(pool, window, c.call.startPos, ringRows, rows);
    windowKvPrefill(kv.data<uint16_t>(), kv.dim(0), dim, pool, window, rows + ringRows * dim,
                    c.call.startPos);
  }
  else
    windowKvDecode(kv.data<uint16_t>(), dim, c.call.startPos, pool, window,
                   c.outputs[1]->data<float>());
  return Status::ok();
}

Status compressor(LaunchContext &c, const abi::CompressorParams &p) {
  int64_t ratio = p.ratio;
  float eps = float(p.eps);
  // Inputs: x, wkv, [wgate], norm, state (the ds.compressor operands, then
  // its hidden state). Outputs: state, latents.
  bool gated = c.inputs.size() == 5;
  const HostTensor &x = *c.inputs[0], &wkv = *c.inputs[1], &norm = *c.inputs[gated ? 3 : 2];
  HostTensor &stateTensor = *c.outputs[0];
  HostTensor &latents = *c.outputs[1];
  CompressorWeights w;
  w.ratio = ratio;
  w.dim = x.dim(1);
  w.headDim = wkv.dim(0);
  w.wkv = wkv.data<uint16_t>();
  w.wgate = gated ? c.inputs[2]->data<uint16_t>() : nullptr;
  w.norm = norm.data<uint16_t>();
  w.eps = eps;
  CompressorState state;
  state.reset(ratio, w.headDim);
  int64_t n = ratio * w.headDim;
  std::memcpy(state.kv.data(), stateTensor.data<float>(), n * sizeof(float));
  std::memcpy(state.score.data(), stateTensor.data<float>() + n, n * sizeof(float));
  // The plan sized the latents for this call; checked before they are written.
  if (const int64_t want = compressorLatentCount(ratio, c.call.startPos, x.dim(0));
      want != latents.dim(0))
    return runtime::internalError("compressor emits " + std::to_string(want) +
                                  " latents, the plan sized " + std::to_string(latents.dim(0)));
  int64_t emitted = compressorForward(w, x.data<uint16_t>(), x.dim(0), c.call.startPos,
                                      ratio > 1 ? &state : nullptr, latents.data<uint16_t>());
  if (emitted != latents.dim(0))
    return runtime::internalError("compressor emitted " + std::to_string(emitted) +
                                  " latents, the plan sized " + std::to_string(latents.dim(0)));
  std::memcpy(stateTensor.data<float>(), state.kv.data(), n * sizeof(float));
  std::memcpy(stateTensor.data<float>() + n, state.score.data(), n * sizeof(float));
  return Status::ok();
}

Status compressKv(LaunchContext &c, const abi::CompressKvParams &p) {
  RopeFreqs freqs = ropeOf(p.rope);
  int64_t ratio = p.ratio;
  const StateBuffer *state = c.outputState(0);
  if (Status s = needState(state, "compress_kv"); !s)
    return s;
  const HostTensor &latents = *c.inputs[0];
  int64_t j0 = c.call.startPos / ratio;
  if (j0 + latents.dim(0) > state->capacity)
    return runtime::invalidArgument("compress_kv: entry " + std::to_string(j0 + latents.dim(0)) +
                                    " exceeds the KV buffer's capacity " +
                                    std::to_string(state->capacity));
  compressKvWrite(latents.data<uint16_t>(), latents.dim(0), j0, ratio, latents.dim(1), freqs,
                  poolOf(*state, *c.outputs[0]));
  return Status::ok();
}

Status indexKeys(LaunchContext &c, const abi::IndexKeysParams &p) {
  RopeFreqs freqs = ropeOf(p.rope);
  float eps = float(p.eps);
  const StateBuffer *state = c.outputState(0);
  if (Status s = needState(state, "index_keys"); !s)
    return s;
  const HostTensor &latents = *c.inputs[0], &wk = *c.inputs[1];
  int64_t j0 = c.call.startPos / state->ratio;
  if (j0 + latents.dim(0) > state->capacity)
    return runtime::invalidArgument("index_keys: entry " + std::to_string(j0 + latents.dim(0)) +
                                    " exceeds the index-key buffer's capacity " +
                                    std::to_string(state->capacity));
  indexKeysWrite(latents.data<uint16_t>(), latents.dim(0), j0, state->ratio, latents.dim(1),
                 wk.data<uint16_t>(), c.inputs[2]->data<uint16_t>(), wk.dim(0), eps, freqs,
                 poolOf(*state, *c.outputs[0]));
  return Status::ok();
}

Status indexQueriesAdapter(LaunchContext &c, const abi::IndexQueriesParams &p) {
  RopeFreqs freqs = ropeOf(p.rope);
  const HostTensor &qr = *c.inputs[0], &w = *c.inputs[1];
  HostTensor &q = *c.outputs[0];
  std::vector<float> values(q.numElements());
  indexQueries(qr.data<uint16_t>(), qr.dim(0), qr.dim(1), w.data<uint8_t>(),
               c.inputs[2]->data<uint8_t>(), q.dim(1), q.dim(2), freqs, c.call.startPos,
               values.data());
  narrow(values.data(), q.numElements(), q.data<uint16_t>()); // QDQ values: bf16-exact
  return Status::ok();
}

Status indexerScore(LaunchContext &c, const abi::IndexerScoreParams &p) {
  float weightScale = float(p.weight_scale);
  const HostTensor &q = *c.inputs[0], &headWeights = *c.inputs[1];
  const StateBuffer *keysState = c.inputState(2);
  if (Status s = needState(keysState, "indexer_score"); !s)
    return s;
  HostTensor &scores = *c.outputs[0];
  int64_t S = q.dim(0), heads = q.dim(1), dk = q.dim(2), width = scores.dim(1);
  // Head weights: bf16(weights_proj(x) · fp32(Dk^-½ · Hi^-½)) (spec §9.5.3).
  std::vector<uint16_t> w(S * heads);
  for (int64_t i = 0; i < S * heads; ++i)
    w[i] = numerics::bf16FromFloat(numerics::bf16ToFloat(headWeights.data<uint16_t>()[i]) *
                                   weightScale);
  if (width > keysState->capacity)
    return runtime::invalidArgument("indexer_score: " + std::to_string(width) +
                                    " index keys exceed the buffer's capacity " +
                                    std::to_string(keysState->capacity));
  KvRecordPool keys = poolOf(*keysState, *c.inputs[2]);
  std::vector<float> decoded(width * dk);
  for (int64_t j = 0; j < width; ++j)
    keys.read(j, decoded.data() + j * dk);
  std::vector<float> qf = widen(q.data<uint16_t>(), q.numElements());
  std::vector<float> out(S * width);
  indexScores(qf.data(), w.data(), S, heads, dk, decoded.data(), width, out.data());
  indexMaskInvisible(out.data(), S, width, c.call.startPos, keysState->ratio);
  narrow(out.data(), S * width, scores.data<uint16_t>());
  return Status::ok();
}

Status candidateBlocks(LaunchContext &c, const abi::CandidateBlocksParams &p) {
  int64_t blocks = p.blocks, blockSize = p.block_size, ratio = p.ratio;
  const HostTensor &scores = *c.inputs[0];
  int64_t S = scores.dim(0), width = scores.dim(1);
  std::vector<float> s = widen(scores.data<uint16_t>(), S * width);
  if (c.outputs[0]->dim(1) != blocks)
    return runtime::invalidArgument("candidate_blocks: output holds " +
                                    std::to_string(c.outputs[0]->dim(1)) +
                                    " block ids per row, expected " + std::to_string(blocks));
  indexSelectCandidates(s.data(), S, width, c.call.startPos, ratio, blocks, blockSize,
                        c.outputs[0]->data<int32_t>());
  return Status::ok();
}

Status indexerTopK(LaunchContext &c, const abi::IndexerTopKParams &p) {
  int64_t k = p.topk, ratio = p.ratio;
  const HostTensor &scores = *c.inputs[0];
  HostTensor &topk = *c.outputs[0];
  int64_t S = scores.dim(0), width = scores.dim(1);
  std::vector<float> s = widen(scores.data<uint16_t>(), S * width);
  if (c.inputs.size() > 1) {
    const int64_t blockSize = p.block_size;
    indexMaskCandidates(s.data(), c.inputs[1]->data<int32_t>(), c.inputs[1]->dim(1), blockSize, S,
                        width);
  }
  // Offset by the window rows attention puts first: S in prefill, W in decode.
  int64_t window = c.plan.model.windowSize;
  int64_t offset = c.call.windowRows >= 0 ? c.call.windowRows // a row tile: the call's
                                          : windowKvRows(windowPos(c), S, window, c.call.ringRows);
  int64_t used = indexTopKWidth(k, width);
  std::vector<int32_t> idx(S * std::max<int64_t>(used, 1));
  if (used > 0)
    indexTopK(s.data(), S, width, c.call.startPos, ratio, k, offset, idx.data());
  int32_t *out = topk.data<int32_t>();
  for (int64_t r = 0; r < S; ++r)
    for (int64_t j = 0; j < k; ++j)
      out[r * k + j] = j < used ? idx[r * used + j] : -1;
  return Status::ok();
}

Status sparseAttentionAdapter(LaunchContext &c, const abi::SparseAttentionParams &p) {
  float scale = float(p.scale);
  // Inputs: q, ring, [main KV, top-k], sink, window rows (appended last).
  const HostTensor &q = *c.inputs[0];
  bool compressed = c.inputs.size() == 6;
  const HostTensor &sink = *c.inputs[compressed ? 4 : 2];
  const HostTensor &rows = *c.inputs.back();
  int64_t S = q.dim(0), H = q.dim(1), D = q.dim(2);
  int64_t window = c.plan.model.windowSize;
  int64_t windowRows = rows.dim(0);
  int64_t ringRows = c.call.ringRows;
  int64_t windowWidth = windowIdxWidth(windowPos(c), S, window, ringRows);

  int64_t T = 0, k = 0;
  const StateBuffer *kvState = compressed ? c.inputState(2) : nullptr;
  if (compressed) {
    T = (c.call.startPos + S) / kvState->ratio;
    k = c.inputs[3]->dim(1);
    if (T > kvState->capacity)
      return runtime::invalidArgument("sparse_attention: " + std::to_string(T) +
                                      " compressed entries exceed the KV buffer's capacity " +
                                      std::to_string(kvState->capacity));
  }
  if (windowRows < windowKvRows(windowPos(c), S, window, ringRows) || windowWidth > windowRows)
    return runtime::invalidArgument("sparse_attention: " + std::to_string(windowRows) +
                                    " window rows, the call reads " +
                                    std::to_string(windowKvRows(windowPos(c), S, window, ringRows)));
  // kv_all = cat(window rows, compressed entries) (spec §9.7).
  std::vector<float> kvAll((windowRows + T) * D);
  std::memcpy(kvAll.data(), rows.data<float>(), windowRows * D * sizeof(float));
  if (compressed) {
    KvRecordPool pool = poolOf(*kvState, *c.inputs[2]);
    for (int64_t j = 0; j < T; ++j)
      pool.read(j, kvAll.data() + (windowRows + j) * D);
  }
  // idx = cat(window idx, top-k idx).
  int64_t K = windowWidth + k;
  std::vector<int32_t> windowIdx(S * windowWidth), idx(S * K);
  if (c.call.prefillLike)
    windowIdxPrefill(S, window, windowIdx.data(), ringRows);
  else
    windowIdxDecode(c.call.startPos, window, windowIdx.data());
  for (int64_t r = 0; r < S; ++r) {
    std::memcpy(idx.data() + r * K, windowIdx.data() + r * windowWidth, windowWidth * sizeof(int32_t));
    if (compressed)
      std::memcpy(idx.data() + r * K + windowWidth, c.inputs[3]->data<int32_t>() + r * k,
                  k * sizeof(int32_t));
  }
  sparseAttention(q.data<uint16_t>(), S, H, D, kvAll.data(), windowRows + T, sink.data<float>(),
                  idx.data(), K, scale, c.outputs[0]->data<uint16_t>());
  return Status::ok();
}

} // namespace

void registerAttentionAdapters(AdapterTable &table) {
  add<abi::RopeParams>(table, rope);
  add<abi::WindowKvParams>(table, windowKv);
  add<abi::CompressorParams>(table, compressor);
  add<abi::CompressKvParams>(table, compressKv);
  add<abi::IndexKeysParams>(table, indexKeys);
  add<abi::IndexQueriesParams>(table, indexQueriesAdapter);
  add<abi::IndexerScoreParams>(table, indexerScore);
  add<abi::CandidateBlocksParams>(table, candidateBlocks);
  add<abi::IndexerTopKParams>(table, indexerTopK);
  add<abi::SparseAttentionParams>(table, sparseAttentionAdapter);
}

} // namespace dsc::cpu
