//===- CudaAdaptersAttention.cpp - CUDA launch adapters for CSA2 attention -===//
//
// rope, window_kv, compressor, compress_kv, index_keys, index_queries,
// indexer_score, candidate_blocks, indexer_topk, sparse_attention: the host
// side of the templates codegen/kernels/<name>.cu. Operands, parameters and
// conventions are the CPU adapters' (runtime/cpu/CpuAdaptersAttention.cpp):
// window_kv outputs [ring, window rows f32 [R, Dh]]; compressor inputs [x,
// wkv, (wgate), norm, state f32 [2, ratio, dim]], outputs [state, latents];
// index queries bf16; scores bf16 with -inf invisible; top-k int32 [S, k]
// offset by the window rows, -1 padded; sparse_attention inputs [q, ring,
// (main KV, top-k), sink, window rows]. Record layouts travel to the kernels
// as six ints (values, tile, value type, scale type, tokens per page, page
// order). Each entry that uses a parameter takes the adapter's typed params
// struct as its first argument (`params`, a local copy of `p` for the
// argument array; common.cuh's convention). RoPE inverse frequencies are
// computed here (numerics::ropeInvFreq) and uploaded once per kernel
// specialisation (CudaLaunchContext::constant).
// Every adapter takes ONE scratch region (persistent per launch site, sized
// by capacity) and carves it (256-byte aligned pieces). Position-dependent
// values (p, T, emission, ring slot, ...) come from the device call state
// (CudaLaunchContext::callState); grids are sized by capacity so that a
// captured decode graph replays at any position. Host-side checks that use
// c.call only validate (they run on eager calls and at capture).
// Docs: docs/cuda-kernels-attention.md.
//===----------------------------------------------------------------------===//
#include "runtime/cuda/CudaAdapter.h"
#include "runtime/cuda/GemvLaunch.h"

#include "dsc/numerics/Rope.h"
#include "dsc/runtime/StateLayout.h"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <vector>

namespace dsc::cuda {
namespace {

using runtime::StateBuffer;

#define DSC_TRY(expr)                                                                             \
  do {                                                                                            \
    if (Status dscTryStatus = (expr); !dscTryStatus)                                              \
      return dscTryStatus;                                                                        \
  } while (0)

constexpr unsigned kThreads = 256;

/// A record layout as the kernels' six int parameters.
struct PoolArgs {
  int values = 0, tile = 0, valueType = 0, scaleType = 0, tokensPerPage = 0, order = 0;
  void push(std::vector<void *> &args) {
    args.insert(args.end(), {&values, &tile, &valueType, &scaleType, &tokensPerPage, &order});
  }
};

runtime::Expected<PoolArgs> poolArgs(const StateBuffer *state, const char *kernel,
                                     int64_t expectValues) {
  if (!state)
    return runtime::internalError(std::string(kernel) + ": expected a state buffer operand");
  numerics::KvPageLayout l = runtime::pageLayoutOf(state->layout);
  if (!l.isValid() || l.format.valuesPerTile > 32)
    return runtime::internalError(std::string(kernel) + ": unsupported record layout of " +
                                  state->name);
  if (expectValues >= 0 && l.format.valuesPerEntry != expectValues)
    return runtime::internalError(std::string(kernel) + ": records of " + state->name + " hold " +
                                  std::to_string(l.format.valuesPerEntry) + " values, expected " +
                                  std::to_string(expectValues));
  PoolArgs a;
  a.values = l.format.valuesPerEntry;
  a.tile = l.format.valuesPerTile;
  a.valueType = int(l.format.valueType);
  a.scaleType = int(l.format.scaleType);
  a.tokensPerPage = l.tokensPerPage;
  a.order = int(l.order);
  return a;
}

/// One scratch region carved into aligned pieces: add() sizes, then
/// allocate(), then at(i).
class Scratch {
public:
  size_t add(size_t bytes) {
    offsets_.push_back(total_);
    total_ += (bytes + 255) / 256 * 256;
    return offsets_.size() - 1;
  }
  Status allocate(CudaLaunchContext &c) {
    if (total_ == 0)
      return Status::ok();
    auto base = c.scratch(total_);
    if (!base)
      return base.status();
    base_ = *base;
    return Status::ok();
  }
  CUdeviceptr at(size_t piece) const { return base_ + offsets_.at(piece); }

private:
  std::vector<size_t> offsets_;
  size_t total_ = 0;
  CUdeviceptr base_ = 0;
};

/// The RoPE inverse frequencies of this kernel specialisation on the device.
runtime::Expected<CUdeviceptr> ropeConstant(CudaLaunchContext &c, const std::vector<float> &f) {
  return c.constant("rope.inv_freq", f.data(), f.size() * sizeof(float));
}

std::vector<float> ropeFreqs(const abi::Rope &r) {
  return numerics::ropeInvFreq(static_cast<int>(r.dim), r.theta, r.original_seq_len, r.factor,
                               r.beta_fast, r.beta_slow);
}

/// The scores' width must be kCompressedLength at `ratio` (the kernels
/// derive it from the call state).
Status checkWidth(CudaLaunchContext &c, const char *kernel, int64_t width, int64_t ratio) {
  if (ratio < 1 || width != (c.call.startPos + c.call.tokens) / ratio)
    return runtime::internalError(std::string(kernel) + ": width " + std::to_string(width) +
                                  " is not the compressed length at ratio " +
                                  std::to_string(ratio));
  return Status::ok();
}

/// `blocks` blocks of kThreads; nothing to do for none.
Status launchBlocks(CudaLaunchContext &c, const char *entry, int64_t blocks,
                    std::vector<void *> args) {
  if (blocks <= 0)
    return Status::ok();
  if (blocks > int64_t(0x7fffffff))
    return runtime::invalidArgument(std::string(entry) + ": " + std::to_string(blocks) +
                                    " blocks exceed the grid's 2^31 - 1");
  return c.launchEntry(entry, Dim3{unsigned(blocks), 1, 1}, Dim3{unsigned(kThreads), 1, 1}, 0,
                       std::move(args));
}

/// One thread per item, 256 per block; nothing to do for count 0.
Status launch1D(CudaLaunchContext &c, const char *entry, int64_t count,
                std::vector<void *> args) {
  return launchBlocks(c, entry, count > 0 ? ceilDiv(count, kThreads) : 0, std::move(args));
}

/// One block of kThreads per row for `rows` rows (at most 65,535 blocks:
/// the row kernels grid-stride over the rest).
Status launchRows(CudaLaunchContext &c, const char *entry, int64_t rows,
                  std::vector<void *> args) {
  return launchBlocks(c, entry, std::min<int64_t>(rows, 65535), std::move(args));
}

Status rope(CudaLaunchContext &c, const abi::RopeParams &p) {
  std::vector<float> freqs = ropeFreqs(p.rope);
  int64_t ropeDim = p.rope.dim;
  abi::RopeParams params = p;
  const CudaTensor &x = *c.inputs[0];
  CudaTensor &y = *c.outputs[0];
  int64_t rows = x.dim(0), headDim = x.shape.back();
  int64_t heads = x.shape.size() == 3 ? x.dim(1) : 1;
  if (ropeDim % 2 != 0 || ropeDim > headDim)
    return runtime::internalError("rope: rope.dim " + std::to_string(ropeDim) +
                                  " does not fit head dim " + std::to_string(headDim));
  auto fc = ropeConstant(c, freqs);
  if (!fc)
    return fc.status();
  CUdeviceptr xp = x.ptr, yp = y.ptr, f = *fc, cs = c.callState;
  return launch1D(c, "dsc_rope", rows * heads * headDim,
                  {&params, &xp, &yp, &rows, &heads, &headDim, &f, &cs});
}

Status windowKv(CudaLaunchContext &c, const abi::WindowKvParams &p) {
  int64_t window = p.window;
  abi::WindowKvParams params = p;
  const CudaTensor &kv = *c.inputs[0];
  int64_t dim = kv.shape.back(), S = kv.dim(0);
  auto pool = poolArgs(c.outputState(0), "window_kv", dim);
  if (!pool)
    return pool.status();
  CUdeviceptr kvp = kv.ptr, ring = c.outputs[0]->ptr, rows = c.outputs[1]->ptr, cs = c.callState;
  int64_t tiles = dim / pool->tile;
  if (c.call.prefillLike) { // prefill or a CED replay chunk (ring slots (p + t) % window)
    // A continuation chunk first decodes the ring's last ringRows positions
    // ahead of its own rows, before its records overwrite their slots.
    int64_t ringRows = c.call.ringRows;
    if (ringRows < 0 || ringRows >= window || ringRows > c.call.startPos ||
        c.outputs[1]->dim(0) < ringRows + S)
      return runtime::invalidArgument("window_kv: " + std::to_string(ringRows) +
                                      " ring rows before position " +
                                      std::to_string(c.call.startPos) + ", window " +
                                      std::to_string(window) + ", " +
                                      std::to_string(c.outputs[1]->dim(0)) + " window rows");
    if (ringRows > 0) {
      int64_t firstPos = c.call.startPos - ringRows;
      std::vector<void *> prefixArgs{&params, &ring, &firstPos, &ringRows, &dim};
      pool->push(prefixArgs);
      prefixArgs.push_back(&rows);
      DSC_TRY(launch1D(c, "dsc_window_kv_prefix", ringRows * dim, std::move(prefixArgs)));
    }
    int64_t writeFrom = S - window;
    CUdeviceptr own = rows + CUdeviceptr(ringRows * dim) * sizeof(float);
    std::vector<void *> args{&params, &kvp, &S, &dim, &cs, &writeFrom, &ring};
    pool->push(args);
    args.push_back(&own);
    return launch1D(c, "dsc_window_kv", S * tiles * 32, std::move(args)); // a warp per tile
  }
  if (S != 1)
    return runtime::internalError("window_kv: decode takes one token, got " + std::to_string(S));
  int64_t writeFrom = 0;
  CUdeviceptr none = 0;
  std::vector<void *> args{&params, &kvp, &S, &dim, &cs, &writeFrom, &ring};
  pool->push(args);
  args.push_back(&none);
  DSC_TRY(launch1D(c, "dsc_window_kv", tiles * 32, std::move(args))); // a warp per tile
  std::vector<void *> ringArgs{&params, &ring, &dim};
  pool->push(ringArgs);
  ringArgs.push_back(&rows);
  return launch1D(c, "dsc_window_kv_ring", window * dim, std::move(ringArgs));
}

int64_t latentCount(int64_t ratio, int64_t startPos, int64_t S) {
  if (ratio <= 1)
    return S;
  return (startPos + S) / ratio - startPos / ratio;
}

Status compressor(CudaLaunchContext &c, const abi::CompressorParams &p) {
  int64_t ratio = p.ratio;
  abi::CompressorParams params = p;
  bool gated = c.inputs.size() == 5;
  const CudaTensor &x = *c.inputs[0], &wkv = *c.inputs[1], &norm = *c.inputs[gated ? 3 : 2];
  const CudaTensor &stateIn = *c.inputs.back();
  CudaTensor &state = *c.outputs[0], &latents = *c.outputs[1];
  int64_t S = x.dim(0), dim = x.dim(1), d = wkv.dim(0);
  int64_t start = c.call.startPos;
  // Prefill at p = 0, a continuation chunk (p > 0, chunk) or decode (CED
  // replays no compressor: the projection layer runs it on every token).
  if (ratio < 1 || ratio > 16 || (ratio > 1 && !gated) || (!c.call.prefillLike && (start == 0 || S != 1)))
    return runtime::internalError("compressor: unsupported ratio/gate/call shape");
  int64_t n = latentCount(ratio, start, S);
  if (n != latents.dim(0))
    return runtime::internalError("compressor emits " + std::to_string(n) +
                                  " latents, the plan sized " + std::to_string(latents.dim(0)));
  if (stateIn.ptr != state.ptr) {
    size_t bytes = size_t(std::min(stateIn.numElements(), state.numElements())) * sizeof(float);
    if (bytes)
      DSC_TRY(c.copy(state.ptr, stateIn.ptr, bytes));
  }
  CUdeviceptr xp = x.ptr, wp = wkv.ptr, np = norm.ptr, sp = state.ptr, lp = latents.ptr,
              cs = c.callState;
  // Latents emitted: n at this call, nCap at most (grids; kernels use the call state).
  const int64_t nCap = CudaLaunchContext::compressedTokensCapacity(S, ratio);
  CUdeviceptr none = 0;
  // The compressor's bf16 projections: the fast warp-per-row entry unless
  // CudaOptions::cpuOrderFamilies has Compressor (or unaligned rows).
  const bool fastLinear = !c.cpuOrder(runtime::KernelFamily::Compressor) && dim % 8 == 0 && aligned16({xp, wp});
  auto linear = [&](CUdeviceptr weight, CUdeviceptr outF32, CUdeviceptr outBf16) -> Status {
    if (fastLinear && aligned16({weight}))
      return c.launchEntry("dsc_compressor_linear_fast", gemvGrid(d), gemvBlock(), 0,
                           args(xp, weight, S, dim, d, outF32, outBf16));
    return launch1D(c, "dsc_compressor_linear", S * d, {&xp, &weight, &S, &dim, &d, &outF32, &outBf16});
  };
  Scratch s;
  if (ratio == 1) {
    size_t lin = s.add(size_t(S * d) * 2);
    DSC_TRY(s.allocate(c));
    CUdeviceptr lb = s.at(lin);
    DSC_TRY(linear(wp, none, lb));
    return launchRows(c, "dsc_compressor_norm", S, {&params, &lb, &cs, &d, &np, &lp});
  }
  size_t kvPiece = s.add(size_t(S * d) * 4), scorePiece = s.add(size_t(S * d) * 4);
  size_t pooledPiece = s.add(size_t(std::max<int64_t>(nCap, 1) * d) * 2);
  DSC_TRY(s.allocate(c));
  CUdeviceptr kvb = s.at(kvPiece), scb = s.at(scorePiece), pooled = s.at(pooledPiece);
  CUdeviceptr gp = c.inputs[2]->ptr;
  DSC_TRY(linear(wp, kvb, none));
  DSC_TRY(linear(gp, scb, none));
  if (start == 0) { // prefill
    DSC_TRY(launch1D(c, "dsc_compressor_pool", n * d, {&params, &kvb, &scb, &cs, &d, &pooled}));
    int64_t rowFrom = n * ratio, count = S - n * ratio;
    DSC_TRY(launch1D(c, "dsc_compressor_state", count * d,
                     {&params, &kvb, &scb, &rowFrom, &count, &cs, &d, &sp}));
  } else if (c.call.prefillLike) {
    // A continuation chunk (Compressor.cpp's rule): the rows finishing the
    // group an earlier call opened go to its state slots and that group is
    // pooled there; whole groups pool from the rows; the rows of a group a
    // later call finishes go to slots 0.. after that.
    const int64_t open = start % ratio;
    const int64_t head = open ? std::min(ratio - open, S) : 0;
    int64_t emitted = 0, rowFrom = 0;
    CUdeviceptr stKv = sp, stScore = sp + CUdeviceptr(ratio * d * 4);
    if (head > 0) {
      int64_t count = head, slot0 = open;
      DSC_TRY(launch1D(c, "dsc_compressor_state_at", count * d,
                       {&params, &kvb, &scb, &rowFrom, &count, &slot0, &d, &sp}));
      if (open + head == ratio) {
        int64_t one = 1;
        DSC_TRY(launch1D(c, "dsc_compressor_pool_groups", d,
                         {&params, &stKv, &stScore, &one, &d, &pooled}));
        emitted = 1;
      }
    }
    int64_t groups = (S - head) / ratio;
    if (groups > 0) {
      CUdeviceptr kvRows = kvb + CUdeviceptr(head * d) * 4, scRows = scb + CUdeviceptr(head * d) * 4;
      CUdeviceptr out = pooled + CUdeviceptr(emitted * d) * 2;
      DSC_TRY(launch1D(c, "dsc_compressor_pool_groups", groups * d,
                       {&params, &kvRows, &scRows, &groups, &d, &out}));
      emitted += groups;
    }
    int64_t tailFrom = head + groups * ratio, tail = S - tailFrom, slot0 = 0;
    if (tail > 0)
      DSC_TRY(launch1D(c, "dsc_compressor_state_at", tail * d,
                       {&params, &kvb, &scb, &tailFrom, &tail, &slot0, &d, &sp}));
    if (emitted != n)
      return runtime::internalError("compressor: pooled " + std::to_string(emitted) +
                                    " groups, expected " + std::to_string(n));
    return launchRows(c, "dsc_compressor_norm", n, {&params, &pooled, &cs, &d, &np, &lp});
  } else { // decode: slot p % ratio; a group is pooled when it completes (in-kernel)
    int64_t rowFrom = 0, count = 1;
    DSC_TRY(launch1D(c, "dsc_compressor_state", d,
                     {&params, &kvb, &scb, &rowFrom, &count, &cs, &d, &sp}));
    CUdeviceptr stKv = sp, stScore = sp + CUdeviceptr(ratio * d * 4);
    DSC_TRY(launch1D(c, "dsc_compressor_pool", nCap * d,
                     {&params, &stKv, &stScore, &cs, &d, &pooled}));
  }
  return launchRows(c, "dsc_compressor_norm", start == 0 ? n : nCap,
                  {&params, &pooled, &cs, &d, &np, &lp});
}

Status compressKv(CudaLaunchContext &c, const abi::CompressKvParams &p) {
  std::vector<float> freqs = ropeFreqs(p.rope);
  int64_t ratio = p.ratio;
  abi::CompressKvParams params = p;
  const StateBuffer *state = c.outputState(0);
  const CudaTensor &latents = *c.inputs[0];
  int64_t n = latents.dim(0), headDim = latents.dim(1);
  const int64_t nCap = CudaLaunchContext::compressedTokensCapacity(c.call.tokens, ratio);
  auto pool = poolArgs(state, "compress_kv", headDim);
  if (!pool)
    return pool.status();
  int64_t j0 = c.call.startPos / ratio;
  if (j0 + n > state->capacity)
    return runtime::invalidArgument("compress_kv: entry " + std::to_string(j0 + n) +
                                    " exceeds the KV buffer's capacity " +
                                    std::to_string(state->capacity));
  auto fc = ropeConstant(c, freqs);
  if (!fc)
    return fc.status();
  CUdeviceptr lp = latents.ptr, f = *fc, dst = c.outputs[0]->ptr, cs = c.callState;
  std::vector<void *> args{&params, &lp, &cs, &headDim, &f, &dst};
  pool->push(args);
  return launch1D(c, "dsc_compress_kv", nCap * (headDim / pool->tile), std::move(args));
}

Status indexKeys(CudaLaunchContext &c, const abi::IndexKeysParams &p) {
  std::vector<float> freqs = ropeFreqs(p.rope);
  abi::IndexKeysParams params = p;
  const StateBuffer *state = c.outputState(0);
  const CudaTensor &latents = *c.inputs[0], &wk = *c.inputs[1], &kNorm = *c.inputs[2];
  int64_t n = latents.dim(0), headDim = latents.dim(1), dk = wk.dim(0);
  auto pool = poolArgs(state, "index_keys", dk);
  if (!pool)
    return pool.status();
  int64_t ratio = state->ratio;
  const int64_t nCap = CudaLaunchContext::compressedTokensCapacity(c.call.tokens, ratio);
  int64_t j0 = c.call.startPos / ratio;
  if (j0 + n > state->capacity)
    return runtime::invalidArgument("index_keys: entry " + std::to_string(j0 + n) +
                                    " exceeds the buffer's capacity " +
                                    std::to_string(state->capacity));
  Scratch s;
  size_t kp = s.add(size_t(std::max<int64_t>(nCap, 1) * dk) * 2);
  DSC_TRY(s.allocate(c));
  auto fc = ropeConstant(c, freqs);
  if (!fc)
    return fc.status();
  CUdeviceptr lp = latents.ptr, wp = wk.ptr, normp = kNorm.ptr, kb = s.at(kp), f = *fc,
              dst = c.outputs[0]->ptr, cs = c.callState;
  // The kernels take the ratio from params (p.ratio, which verifyPlan checks
  // is the state's).
  if (c.cpuOrder(runtime::KernelFamily::IndexKeys))
    DSC_TRY(launch1D(c, "dsc_index_keys_linear", nCap * dk,
                     {&params, &lp, &wp, &cs, &headDim, &dk, &kb}));
  else // one warp per output: nCap * dk warps of kThreads / 32 per block
    DSC_TRY(launch1D(c, "dsc_index_keys_linear_fast", nCap * dk * 32,
                     {&params, &lp, &wp, &cs, &headDim, &dk, &kb}));
  DSC_TRY(launchRows(c, "dsc_index_keys_norm", nCap, {&params, &kb, &cs, &dk, &normp}));
  std::vector<void *> args{&params, &kb, &cs, &dk, &f, &dst};
  pool->push(args);
  return launch1D(c, "dsc_index_keys_write", nCap * (dk / pool->tile), std::move(args));
}

Status indexQueries(CudaLaunchContext &c, const abi::IndexQueriesParams &p) {
  std::vector<float> freqs = ropeFreqs(p.rope);
  int64_t ropeDim = p.rope.dim;
  abi::IndexQueriesParams params = p;
  const CudaTensor &qr = *c.inputs[0], &w = *c.inputs[1], &scale = *c.inputs[2];
  CudaTensor &q = *c.outputs[0];
  int64_t S = qr.dim(0), K = qr.dim(1), H = q.dim(1), dk = q.dim(2), N = H * dk;
  if (K % 32 != 0 || dk % 32 != 0 || ropeDim > dk || ropeDim % 2 != 0)
    return runtime::internalError("index_queries: needs q_lora_rank and index head dim "
                                  "multiples of 32");
  if (S <= 0)
    return Status::ok();
  if (!c.cpuOrder(runtime::KernelFamily::IndexQueries) && aligned16({qr.ptr, w.ptr})) {
    auto qbuf = c.scratch(size_t(S * N) * 2);
    auto fc = ropeConstant(c, freqs);
    if (!qbuf || !fc)
      return !qbuf ? qbuf.status() : fc.status();
    CUdeviceptr qb = *qbuf, f = *fc, out = q.ptr, cs = c.callState;
    DSC_TRY(quantizedGemv(c, "dsc_index_queries",
                          {"dsc_index_queries_gemm_fast", "dsc_index_queries_gemm_lanes",
                           "dsc_index_queries_gemm_slots", "dsc_index_queries_gemm_wg",
                           "dsc_index_queries_gemm_rows"},
                          qr.ptr,
                          S, K, w.ptr, scale.ptr, N, qb));
    return launch1D(c, "dsc_index_queries_rope_qdq", S * H * dk, // a warp per 32-block
                    {&params, &qb, &S, &H, &dk, &f, &cs, &out});
  }
  Scratch s;
  size_t codes = s.add(size_t(S * K) * 4), scales = s.add(size_t(S * (K / 32)) * 4),
         qbp = s.add(size_t(S * N) * 2);
  DSC_TRY(s.allocate(c));
  auto fc = ropeConstant(c, freqs);
  if (!fc)
    return fc.status();
  CUdeviceptr qrp = qr.ptr, wp = w.ptr, sp = scale.ptr, cp = s.at(codes), scp = s.at(scales),
              qb = s.at(qbp), f = *fc, out = q.ptr, cs = c.callState;
  DSC_TRY(launch1D(c, "dsc_index_queries_act", S * (K / 32), {&qrp, &S, &K, &cp, &scp}));
  DSC_TRY(launch1D(c, "dsc_index_queries_gemm", S * N, {&cp, &scp, &wp, &sp, &S, &K, &N, &qb}));
  return launch1D(c, "dsc_index_queries_rope_qdq", S * H * dk, // a warp per 32-block
                  {&params, &qb, &S, &H, &dk, &f, &cs, &out});
}

Status indexerScore(CudaLaunchContext &c, const abi::IndexerScoreParams &p) {
  abi::IndexerScoreParams params = p;
  const CudaTensor &q = *c.inputs[0], &hw = *c.inputs[1];
  const StateBuffer *keysState = c.inputState(2);
  CudaTensor &scores = *c.outputs[0];
  int64_t S = q.dim(0), H = q.dim(1), dk = q.dim(2), width = scores.dim(1);
  auto pool = poolArgs(keysState, "indexer_score", dk);
  if (!pool)
    return pool.status();
  if (dk > 256)
    return runtime::internalError("indexer_score: index head dim above 256");
  if (width > keysState->capacity)
    return runtime::internalError("indexer_score: width exceeds the index-key capacity");
  CUdeviceptr qp = q.ptr, hp = hw.ptr, kp = c.inputs[2]->ptr, out = scores.ptr, cs = c.callState;
  int64_t ratio = keysState->ratio;
  DSC_TRY(checkWidth(c, "indexer_score", width, ratio));
  std::vector<void *> args{&params, &qp, &hp, &kp};
  pool->push(args);
  args.insert(args.end(), {&S, &H, &dk, &cs, &ratio, &out});
  const int64_t capacity = c.compressedLengthCapacity(ratio);
  const size_t fastSmem = size_t(H * (dk + 1) + kGemvWarps * dk) * sizeof(float);
  if (!c.cpuOrder(runtime::KernelFamily::IndexerScore) && fastSmem <= kSharedLimit && S <= 65535) {
    // Grid (key blocks, S), sized by capacity (graph replays at any p); one
    // warp per key, grid-strided beyond the cap.
    long long blocks = std::max<long long>(1, std::min<long long>(ceilDiv(capacity, kGemvWarps), 1024));
    return c.launchEntry("dsc_indexer_score_fast", Dim3{unsigned(blocks), unsigned(S), 1},
                         gemvBlock(), fastSmem, std::move(args));
  }
  return launch1D(c, "dsc_indexer_score", S * capacity, std::move(args));
}

/// CudaOptions::quadraticTopk: the first-cut O(T^2) top-k and serial
/// candidate kernels instead of the radix selects (comparison runs only,
/// docs/device.md).
bool firstCutSelection(const CudaLaunchContext &c) { return c.quadraticTopk; }

Status candidateBlocks(CudaLaunchContext &c, const abi::CandidateBlocksParams &p) {
  int64_t blockSize = p.block_size, ratio = p.ratio;
  abi::CandidateBlocksParams params = p;
  const CudaTensor &scores = *c.inputs[0];
  int64_t S = scores.dim(0), width = scores.dim(1);
  DSC_TRY(checkWidth(c, "candidate_blocks", width, ratio));
  if (!firstCutSelection(c)) { // one block per row, O(T), no scratch
    if (S <= 0)
      return Status::ok();
    CUdeviceptr sp = scores.ptr, out = c.outputs[0]->ptr, cs = c.callState;
    Dim3 grid, block;
    grid.x = static_cast<unsigned>(S);
    block.x = abi::kSelectThreads;
    return c.launchEntry("dsc_candidate_blocks_radix", grid, block, 0,
                         {&params, &sp, &S, &cs, &out});
  }
  const int64_t widthCap = c.compressedLengthCapacity(ratio);
  int64_t nblocks = blockSize > 0 ? (widthCap + blockSize - 1) / blockSize : 0;
  Scratch s;
  size_t vals = s.add(size_t(std::max<int64_t>(S * nblocks, 1)) * 4),
         picked = s.add(size_t(std::max<int64_t>(S * nblocks, 1)));
  DSC_TRY(s.allocate(c));
  CUdeviceptr sp = scores.ptr, vp = s.at(vals), pp = s.at(picked), out = c.outputs[0]->ptr,
              cs = c.callState;
  return launch1D(c, "dsc_candidate_blocks", S,
                  {&params, &sp, &S, &cs, &vp, &pp, &out});
}

Status indexerTopK(CudaLaunchContext &c, const abi::IndexerTopKParams &p) {
  int64_t k = p.topk, ratio = p.ratio;
  abi::IndexerTopKParams params = p; // the kernels read block_size only with candidates
  const CudaTensor &scores = *c.inputs[0];
  int64_t S = scores.dim(0), width = scores.dim(1);
  int64_t window = c.plan.model.windowSize;
  // windowKvRows: a chunk's ring rows and own rows, the ring in decode.
  int64_t offset = c.call.prefillLike ? c.call.ringRows + S : window;
  DSC_TRY(checkWidth(c, "indexer_topk", width, ratio));
  CUdeviceptr sp = scores.ptr, cand = c.inputs.size() > 1 ? c.inputs[1]->ptr : 0,
              out = c.outputs[0]->ptr, cs = c.callState;
  int64_t blocks = cand ? c.inputs[1]->dim(1) : 0;
  if (S <= 0)
    return Status::ok();
  if (firstCutSelection(c)) {
    const int64_t widthCap = c.compressedLengthCapacity(ratio);
    Scratch s;
    size_t sel = s.add(size_t(std::max<int64_t>(S * widthCap, 1)));
    DSC_TRY(s.allocate(c));
    CUdeviceptr selp = s.at(sel);
    DSC_TRY(launch1D(c, "dsc_indexer_topk_select", S * widthCap,
                     {&params, &sp, &cand, &blocks, &S, &cs, &selp}));
    return launch1D(c, "dsc_indexer_topk_emit", S * std::max(widthCap, k),
                    {&params, &selp, &S, &cs, &offset, &out});
  }
  // One block per row: the used = min(k, T) best bf16 scores by 16-bit keys,
  // written in ascending order (indexer_topk.cu). O(T) per row, no scratch.
  Dim3 grid, block;
  grid.x = static_cast<unsigned>(S);
  block.x = abi::kSelectThreads;
  return c.launchEntry("dsc_indexer_topk_radix", grid, block, 0,
                       {&params, &sp, &cand, &blocks, &S, &cs, &offset, &out});
}

/// The RoPE epilogue of the fused `attention` kernel (null: plain attention).
struct RopeEpilogue {
  const abi::RopeParams *rope = nullptr;
  int64_t ropeKernel = -1; ///< its index in the plan: the constants' key
  CudaTensor *out = nullptr;
};

/// Entries per online-softmax block (dsc/abi/LaunchShapes.h) and the query
/// rows one split-KV launch set covers (bounds its scratch).
constexpr int64_t kSparseBlock = abi::kSparseBlock, kSplitKvRows = 16;

/// CudaOptions::attention Split, Mqa, TensorCore: the fast walk's 64-entry blocks in parallel
/// (dsc_sparse_attention_logits_fast, _pv_fast, _merge_fast), byte-identical
/// to dsc_sparse_attention_fast (sparse_attention.cu says why).
Status splitKvAttention(CudaLaunchContext &c, abi::SparseAttentionParams &params,
                        abi::RopeParams &ropeParams, CUdeviceptr qp, int64_t S, int64_t H,
                        int64_t D, CUdeviceptr rp, int64_t R, CUdeviceptr kvp, PoolArgs &pool,
                        int64_t ratio, CUdeviceptr topk, int64_t k, CUdeviceptr sk, CUdeviceptr cs,
                        int64_t window, int64_t windowWidth, CUdeviceptr invFreq, CUdeviceptr out) {
  int64_t K = windowWidth + (topk ? k : 0), nb = ceilDiv(K, kSparseBlock);
  int64_t rowsPer = std::min<int64_t>(S, kSplitKvRows), rowsH = rowsPer * H;
  // Scratch (floats): logits [rowsH, K], ids int64 [rowsH, K] (8-byte
  // aligned), block maxima and sums [rowsH, nb], pv [rowsH, nb, D].
  size_t floats = size_t(rowsH * K + (rowsH * K) % 2 + 2 * rowsH * K + 2 * rowsH * nb + rowsH * nb * D);
  auto scratch = c.scratch(floats * sizeof(float));
  if (!scratch)
    return scratch.status();
  CUdeviceptr sp = *scratch;
  Dim3 block{128, 1, 1};
  // AttentionKernels::Mqa: logits and PV per group of headsPer heads,
  // each 64-entry block's values staged once for the group as bf16 in
  // kSparseBlock * D * 2 bytes of shared memory (sparse_attention.cu, "MQA
  // split-KV"; dsc/abi/LaunchShapes.h): kMqaPvThreads threads owning at most
  // kMqaPvRounds channel pairs each for the PV.
  int64_t headsPer = std::min<int64_t>(H, abi::kMqaHeadsPerBlock);
  const size_t stageBytes = size_t(kSparseBlock * D) * 2;
  using runtime::AttentionKernels;
  // AttentionKernels::TensorCore: every head of a row per 64-entry block on
  // the tensor cores (sparse_attention_tc.cuh), then the merge; where its
  // shapes do not fit, the MQA kernels where theirs do.
  const bool tc = c.attention == AttentionKernels::TensorCore && D % 16 == 0 &&
                  H <= abi::kTcMaxHeads;
  const bool mqa = !tc &&
                   (c.attention == AttentionKernels::Mqa ||
                    c.attention == AttentionKernels::TensorCore) &&
                   D % 16 == 0 && D <= 32 * abi::kMqaMaxLane &&
                   D <= 2 * int64_t(abi::kMqaPvThreads) * abi::kMqaPvRounds;
  for (int64_t r0 = 0; r0 < S; r0 += rowsPer) {
    int64_t rows = std::min<int64_t>(rowsPer, S - r0);
    // The logits and PV steps take the same leading operands in every
    // family; each adds its own tail (sparse_attention.cu, _tc.cuh).
    std::vector<void *> a{&params, &qp, &S, &H, &D, &rp, &R, &kvp};
    pool.push(a);
    a.insert(a.end(), {&ratio, &topk, &k, &cs, &window, &windowWidth, &rowsH, &sp, &r0});
    std::vector<void *> b{&D, &rp, &R, &kvp};
    pool.push(b);
    b.push_back(&K);
    b.push_back(&rowsH);
    if (tc) {
      const Dim3 grid{unsigned(rows), unsigned(nb), 1}, threads{abi::kTcThreads, 1, 1};
      DSC_TRY(c.launchEntry("dsc_sparse_attention_logits_tc", grid, threads,
                            size_t(abi::tcLogitsBytes(H, D)), std::move(a)));
      b.insert(b.end(), {&H, &sp});
      // Where the (row, block) pairs leave most SMs idle (decode: one row of
      // ~10 blocks), the PV step also splits D in 128-channel ranges (each
      // block stages and multiplies its own channels: the same bytes).
      const Dim3 pvGrid{grid.x, grid.y,
                        unsigned(rows * nb < kTunedSms ? ceilDiv(D, abi::kTcPvChannels) : 1)};
      DSC_TRY(c.launchEntry("dsc_sparse_attention_pv_tc", pvGrid, threads,
                            size_t(abi::tcPvBytes(H, D)), std::move(b)));
    } else if (mqa) {
      const Dim3 grid{unsigned(rows), unsigned(nb), unsigned(ceilDiv(H, headsPer))},
          threads{unsigned(abi::kMqaPvThreads), 1, 1};
      a.push_back(&headsPer);
      DSC_TRY(c.launchEntry("dsc_sparse_attention_logits_mqa", grid, threads, stageBytes,
                            std::move(a)));
      b.insert(b.end(), {&H, &headsPer, &sp});
      DSC_TRY(c.launchEntry("dsc_sparse_attention_pv_mqa", grid, threads, stageBytes,
                            std::move(b)));
    } else {
      const Dim3 grid{unsigned(rows * H), unsigned(nb), 1};
      DSC_TRY(c.launchEntry("dsc_sparse_attention_logits_fast", grid, block,
                            size_t(D) * sizeof(float), std::move(a)));
      b.push_back(&sp);
      DSC_TRY(c.launchEntry("dsc_sparse_attention_pv_fast", grid, block, 0, std::move(b)));
    }
    DSC_TRY(c.launchEntry("dsc_sparse_attention_merge_fast", Dim3{unsigned(rows * H), 1, 1},
                          block, size_t(D) * sizeof(float),
                          args(params, ropeParams, H, D, K, rowsH, sp, sk, cs, invFreq, out, r0)));
  }
  return Status::ok();
}

Status sparseAttentionWith(CudaLaunchContext &c, const abi::SparseAttentionParams &p,
                           const RopeEpilogue &epilogue);

Status sparseAttention(CudaLaunchContext &c, const abi::SparseAttentionParams &p) {
  return sparseAttentionWith(c, p, RopeEpilogue());
}

Status sparseAttentionWith(CudaLaunchContext &c, const abi::SparseAttentionParams &p,
                           const RopeEpilogue &epilogue) {
  // The entry takes both steps' structs: the rope step's is the default
  // (not read) without the epilogue.
  abi::SparseAttentionParams params = p;
  abi::RopeParams ropeParams;
  const CudaTensor &q = *c.inputs[0];
  bool compressed = c.inputs.size() == 6;
  const CudaTensor &sink = *c.inputs[compressed ? 4 : 2];
  const CudaTensor &rows = *c.inputs.back();
  int64_t S = q.dim(0), H = q.dim(1), D = q.dim(2);
  int64_t window = c.plan.model.windowSize;
  int64_t R = rows.dim(0);
  int64_t start = c.call.startPos;
  const bool chunk = c.call.prefillLike; // prefill-like: ring rows (continuation) + the call's own
  const int64_t reads = chunk ? c.call.ringRows + S : window;
  int64_t windowWidth = chunk ? std::min(reads, window) : window;
  if (R < reads || windowWidth > R)
    return runtime::invalidArgument("sparse_attention: " + std::to_string(R) +
                                    " window rows, the call reads " + std::to_string(reads));
  int64_t T = 0, k = 0, ratio = 0;
  PoolArgs pool;
  CUdeviceptr kvp = 0, topk = 0;
  if (compressed) {
    const StateBuffer *kvState = c.inputState(2);
    auto pa = poolArgs(kvState, "sparse_attention", D);
    if (!pa)
      return pa.status();
    pool = *pa;
    ratio = kvState->ratio;
    T = (start + S) / ratio;
    if (T > kvState->capacity)
      return runtime::invalidArgument("sparse_attention: " + std::to_string(T) +
                                      " compressed entries exceed the KV buffer's capacity " +
                                      std::to_string(kvState->capacity));
    k = c.inputs[3]->dim(1);
    kvp = c.inputs[2]->ptr;
    topk = c.inputs[3]->ptr;
  }
  if (S * H <= 0)
    return Status::ok();
  CUdeviceptr qp = q.ptr, rp = rows.ptr, sk = sink.ptr, out = c.outputs[0]->ptr, cs = c.callState;
  CUdeviceptr invFreq = 0;
  if (epilogue.rope) {
    const abi::RopeParams &r = *epilogue.rope;
    std::vector<float> freqs = ropeFreqs(r.rope);
    int64_t ropeDim = r.rope.dim;
    ropeParams = r;
    if (ropeDim % 2 != 0 || ropeDim > D)
      return runtime::internalError("attention: rope.dim " + std::to_string(ropeDim) +
                                    " does not fit head dim " + std::to_string(D));
    // Cached under the attention kernel's key: name it by the rope step's
    // specialisation (layers share the attention kernel, not their RoPE).
    const std::string name = "rope.inv_freq@" + std::to_string(epilogue.ropeKernel);
    auto fc = c.constant(name.c_str(), freqs.data(), freqs.size() * sizeof(float));
    if (!fc)
      return fc.status();
    invFreq = *fc;
    out = epilogue.out->ptr;
  }
  std::vector<void *> args{&params, &ropeParams, &qp, &S, &H, &D, &rp, &R, &kvp};
  pool.push(args);
  args.insert(args.end(),
              {&ratio, &topk, &k, &sk, &cs, &window, &windowWidth, &invFreq, &out});
  Dim3 grid, block;
  grid.x = static_cast<unsigned>(S * H);
  block.x = 128;
  const int64_t entries = windowWidth + (topk ? k : 0);
  const bool cpuOrder = c.cpuOrder(runtime::KernelFamily::Attention);
  if (!cpuOrder && c.attention != runtime::AttentionKernels::Single && entries > kSparseBlock)
    return splitKvAttention(c, params, ropeParams, qp, S, H, D, rp, R, kvp, pool, ratio, topk, k,
                            sk, cs, window, windowWidth, invFreq, out);
  return c.launchEntry(cpuOrder ? "dsc_sparse_attention" : "dsc_sparse_attention_fast",
                       grid, block, size_t(2 * D) * sizeof(float), std::move(args));
}

} // namespace

Status attentionWithInverseRope(CudaLaunchContext &attention, const runtime::KernelSpec &rope,
                                int64_t ropeKernel, CudaTensor &ropeOut) {
  const abi::SparseAttentionParams *p = attention.kernel.as<abi::SparseAttentionParams>();
  const abi::RopeParams *r = rope.as<abi::RopeParams>();
  if (!p || !r)
    return runtime::internalError("attention (fused): the steps are not sparse_attention + rope");
  return sparseAttentionWith(attention, *p, RopeEpilogue{r, ropeKernel, &ropeOut});
}

void registerCudaAttentionAdapters(CudaAdapterTable &table) {
  add<abi::RopeParams>(table, rope);
  add<abi::WindowKvParams>(table, windowKv);
  add<abi::CompressorParams>(table, compressor);
  add<abi::CompressKvParams>(table, compressKv);
  add<abi::IndexKeysParams>(table, indexKeys);
  add<abi::IndexQueriesParams>(table, indexQueries);
  add<abi::IndexerScoreParams>(table, indexerScore);
  add<abi::CandidateBlocksParams>(table, candidateBlocks);
  add<abi::IndexerTopKParams>(table, indexerTopK);
  add<abi::SparseAttentionParams>(table, sparseAttention);
}

} // namespace dsc::cuda
