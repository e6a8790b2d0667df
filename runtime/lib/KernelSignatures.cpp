//===- KernelSignatures.cpp - The kernel vocabulary, checked ---------------===//
//
// One entry per kernel of docs/kernels.md. The relations encode what the
// adapters (runtime/cpu/CpuAdapters*.cpp, runtime/cuda/CudaAdapters*.cpp)
// assume about their operands beyond dtype and rank; see KernelSignatures.h.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/KernelSignatures.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <climits>
#include <optional>
#include <span>

namespace dsc::runtime {

namespace {

using D = DType;
using SK = StateKind;

std::string symName(int64_t d) {
  switch (d) {
  case kTokens: return "kTokens";
  case kCompressedTokens: return "kCompressedTokens";
  case kCompressedLength: return "kCompressedLength";
  case kWindowRows: return "kWindowRows";
  case kReplayTokens: return "kReplayTokens";
  default: return std::to_string(d);
  }
}

const char *stateKindText(StateKind k) {
  switch (k) {
  case SK::WindowRing: return "WindowRing";
  case SK::MainKv: return "MainKv";
  case SK::IndexKeys: return "IndexKeys";
  case SK::CompressorState: return "CompressorState";
  case SK::EngramHistory: return "EngramHistory";
  case SK::DSparkRing: return "DSparkRing";
  }
  return "?";
}

/// A dimension of an operand, with what names it in errors.
struct Dim {
  std::string label;
  int64_t value = 0;
  int64_t ratio = 0; ///< the slot's ratio (parameter of kCompressed*, kWindowRows)
  std::string text() const {
    return value >= 0 ? std::to_string(value)
                      : symName(value) + (value == kTokens || value == kReplayTokens ? "" : fmt::format("(ratio {})", ratio));
  }
};

/// The relation checker of one launch: the first failure is kept.
struct Rel {
  const KernelSpec &k;
  const Plan &plan;
  const std::vector<OperandView> &in, &out;
  /// The rows every call of the launch's program has (decode: 1), or 0 when
  /// the call decides (prefill: kTokens is 1 .. the chunk).
  int64_t fixedTokens = 0;
  std::string err;

  bool ok() const { return err.empty(); }
  void fail(std::string what) {
    if (err.empty())
      err = std::move(what);
  }

  Dim dim(bool output, size_t pos, int axis) const {
    const ValueSlot &s = *(output ? out : in)[pos].slot;
    const int rank = static_cast<int>(s.shape.size());
    const int a = axis < 0 ? rank + axis : axis;
    Dim d;
    d.label = fmt::format("{} {} dim {}", output ? "output" : "input", pos, a);
    d.value = (a >= 0 && a < rank) ? s.shape[static_cast<size_t>(a)] : 0;
    d.ratio = s.ratio;
    return d;
  }
  Dim I(size_t pos, int axis) const { return dim(false, pos, axis); }
  Dim O(size_t pos, int axis) const { return dim(true, pos, axis); }
  static Dim lit(int64_t v, std::string label) { return Dim{std::move(label), v, 0}; }

  /// a == b where decidable: two fixed dims, two symbolic ones, or a fixed
  /// one and kTokens (equal only where every call has that many rows: a
  /// fixed row count beside kTokens in prefill once let a consumer take
  /// 1,000,002 rows from one operand and write them into a kTokens-row one,
  /// and a width edited to kTokens passed the same way; dsc-plan-mutants).
  void eq(const Dim &a, const Dim &b) {
    if (!ok())
      return;
    const bool fa = a.value > 0, fb = b.value > 0;
    if (fa != fb) {
      const Dim &fixed = fa ? a : b, &symbolic = fa ? b : a;
      if (symbolic.value == kTokens && fixed.value != fixedTokens)
        fail(fixedTokens > 0
                 ? fmt::format("{} is {}, expected {} (every call of this program has {} rows; {})",
                               fixed.label, fixed.text(), fixedTokens, fixedTokens, symbolic.label)
                 : fmt::format("{} is {} where {} is kTokens (the call's rows): both must be "
                               "kTokens",
                               fixed.label, fixed.text(), symbolic.label));
      // Another symbol (compressed tokens, lengths, window rows, replay
      // tokens) takes the call's value: never provably a fixed number. A
      // decode top-k edited to kCompressedTokens rows (0 at that position)
      // crashed the attention that read its one row (dsc-plan-mutants).
      else if (symbolic.value != kTokens)
        fail(fmt::format("{} is {} where {} is {} (set by each call): they must be equal",
                         fixed.label, fixed.text(), symbolic.label, symbolic.text()));
      return;
    }
    if (a.value != b.value || (!fa && a.value != kTokens && a.value != kReplayTokens && a.ratio != b.ratio))
      fail(fmt::format("{} is {}, expected {} ({})", a.label, a.text(), b.text(), b.label));
  }
  /// A fixed dimension equal to `want` (skipped if `d` is symbolic).
  void is(const Dim &d, int64_t want, const std::string &why) {
    if (ok() && d.value > 0 && d.value != want)
      fail(fmt::format("{} is {}, expected {} ({})", d.label, d.text(), want, why));
  }
  /// Two fixed dims with a <= b.
  void le(const Dim &a, const Dim &b) {
    if (ok() && a.value > 0 && b.value > 0 && a.value > b.value)
      fail(fmt::format("{} is {}, expected at most {} ({})", a.label, a.value, b.value,
                       b.label));
  }
  /// The product of dims [from, rank) of an operand if all fixed, else -1.
  int64_t product(bool output, size_t pos, int from) const {
    const ValueSlot &s = *(output ? out : in)[pos].slot;
    int64_t p = 1;
    for (size_t i = static_cast<size_t>(from); i < s.shape.size(); ++i) {
      if (s.shape[i] <= 0)
        return -1;
      p *= s.shape[i];
    }
    return p;
  }

  /// A parameter in [lo, hi]; returns it (lo when out of range). hi =
  /// kMaxCount: a count with no tighter bound here, capped so that no product
  /// of two parameters overflows (issue 15: INT64_MAX overflowed SparseSelect).
  int64_t range(const char *key, int64_t v, int64_t lo, int64_t hi) {
    if (ok() && (v < lo || v > hi)) {
      fail(hi != kMaxCount ? fmt::format("parameter '{}' is {}, expected in [{}, {}]", key, v, lo, hi)
           : v < lo        ? fmt::format("parameter '{}' is {}, expected >= {}", key, v, lo)
                           : fmt::format("parameter '{}' is {}, expected at most {} (the limit of "
                                         "a count parameter)",
                                         key, v, hi));
      return lo;
    }
    return v;
  }
  /// rope.*: dim even, > 0, <= `width` (the rotated operand's last dim).
  void rope(const abi::Rope &rope, const Dim &width) {
    const int64_t d = range("rope.dim", rope.dim, 1, kMaxCount);
    if (ok() && d % 2 != 0)
      fail(fmt::format("parameter 'rope.dim' is {}, expected even", d));
    if (ok() && width.value > 0 && d > width.value)
      fail(fmt::format("parameter 'rope.dim' is {}, expected at most {} ({})", d, width.value,
                       width.label));
    range("rope.original_seq_len", rope.original_seq_len, 0, kMaxCount);
  }
  const StateBuffer *stateIn(size_t pos) const { return in[pos].state; }
  const StateBuffer *stateOut(size_t pos) const { return out[pos].state; }
  /// The record layout's values per entry equals `d`.
  void recordWidth(const StateBuffer *s, const Dim &d, const char *what) {
    if (ok() && s && d.value > 0 && s->layout.valuesPerEntry != d.value)
      fail(fmt::format("state '{}' records hold {} values per entry, expected {} ({}, {})",
                       s->name, s->layout.valuesPerEntry, d.value, d.label, what));
  }
  /// A parameter equal to a state's ratio, which must be positive.
  void ratioOf(const char *key, int64_t r, const StateBuffer *s) {
    if (!ok() || !s)
      return;
    if (s->ratio <= 0)
      fail(fmt::format("state '{}' has ratio {}, expected > 0", s->name, s->ratio));
    else if (r != s->ratio)
      fail(fmt::format("parameter '{}' is {}, expected {} (the ratio of state '{}')", key, r,
                       s->ratio, s->name));
  }
};

using Ins = std::vector<OperandView>;
/// A relation of kernel T: `p` is the launch's typed parameters.
#define REL(NAME, T)                                                                      \
  std::string NAME(const KernelSpec &k, const Plan &plan, const Ins &in, const Ins &out,   \
                   int64_t fixedTokens) {                                                 \
    Rel r{k, plan, in, out, fixedTokens, {}};                                             \
    const abi::T *typed = k.as<abi::T>();                                                 \
    if (!typed)                                                                           \
      return "the kernel's parameters are not " #T;                                      \
    [[maybe_unused]] const abi::T &p = *typed;
#define END                                                                               \
  return r.err;                                                                           \
  }

REL(embedRel, EmbedParams)
  r.eq(r.O(0, 0), r.I(0, 0));
  r.eq(r.O(0, 1), r.I(1, 1));
END

REL(hcExpandRel, HcExpandParams)
  r.eq(r.O(0, 0), r.I(0, 0));
  r.eq(r.O(0, 2), r.I(0, 1));
  r.is(r.O(0, 1), r.range("copies", p.copies, 1, kMaxCount), "parameter 'copies'");
END

REL(hcIdentityMixRel, HcIdentityMixParams)
  r.eq(r.O(0, 0), r.I(0, 0));
  r.eq(r.O(0, 1), r.I(0, 1));
END

REL(hcMixesRel, HcMixesParams)
  r.range("sinkhorn_iters", p.sinkhorn_iters, 0, 1 << 20);
  Dim S = r.I(0, 0), hc = r.I(0, 1), Dm = r.I(0, 2);
  if (hc.value > 0 && Dm.value > 0) {
    r.is(r.I(1, 0), (2 + hc.value) * hc.value, "(2 + hc) * hc mixes");
    r.is(r.I(1, 1), hc.value * Dm.value, "hc * D");
    r.is(r.I(3, 0), (2 + hc.value) * hc.value, "(2 + hc) * hc");
  }
  r.is(r.I(2, 0), 3, "pre, post and comb scales");
  for (size_t o = 0; o < 3; ++o) {
    r.eq(r.O(o, 0), S);
    r.eq(r.O(o, 1), hc);
  }
  r.eq(r.O(2, 2), hc);
END

REL(hcPreRel, HcPreParams)
  r.eq(r.I(1, 0), r.I(0, 0));
  r.eq(r.I(1, 1), r.I(0, 1));
  r.eq(r.O(0, 0), r.I(0, 0));
  r.eq(r.O(0, 1), r.I(0, 2));
END

REL(hcPostRel, HcPostParams)
  // x [S, D], residual [S, hc, D], post [S, hc], comb [S, hc, hc].
  Dim S = r.I(1, 0), hc = r.I(1, 1), Dm = r.I(1, 2);
  r.eq(r.I(0, 0), S);
  r.eq(r.I(0, 1), Dm);
  r.eq(r.I(2, 0), S);
  r.eq(r.I(2, 1), hc);
  r.eq(r.I(3, 0), S);
  r.eq(r.I(3, 1), hc);
  r.eq(r.I(3, 2), hc);
  for (int a = 0; a < 3; ++a)
    r.eq(r.O(0, a), r.I(1, a));
END

REL(rmsNormRel, RmsNormParams)
  r.eq(r.I(1, 0), r.I(0, -1));
  const auto &x = in[0].slot->shape, &y = out[0].slot->shape;
  if (r.ok() && x.size() != y.size())
    r.fail(fmt::format("output 0 has rank {}, expected {} (input 0's)", y.size(), x.size()));
  for (size_t a = 0; r.ok() && a < x.size(); ++a)
    r.eq(r.O(0, int(a)), r.I(0, int(a)));
END

REL(linearRel, LinearParams)
  using Q = abi::LinearQuant;
  if (p.quant != Q::fp8 && p.quant != Q::fp4 && p.quant != Q::bf16) {
    r.fail(fmt::format("parameter 'quant' is {}, expected fp8, fp4 or bf16",
                       abi::kLinearQuantNames[int(p.quant)]));
    return r.err;
  }
  const std::string quantText = abi::kLinearQuantNames[int(p.quant)];
  const std::string *quant = &quantText;
  const bool quantised = p.quant != Q::bf16;
  const D wantW = p.quant == Q::fp8 ? D::F8_E4M3 : p.quant == Q::fp4 ? D::I8 : D::BF16;
  const ValueSlot &w = *in[1].slot;
  if (w.dtype != wantW)
    r.fail(fmt::format("input 1 (weight) is {}, expected {} for quant '{}'", dtypeName(w.dtype),
                       dtypeName(wantW), *quant));
  if (r.ok() && quantised != (in.size() == 3))
    r.fail(fmt::format("quant '{}' takes {} inputs (x, weight{}), the launch has {}", *quant,
                       quantised ? 3 : 2, quantised ? ", scale" : "", in.size()));
  if (!r.ok())
    return r.err;
  Dim K = r.I(0, -1), N = r.I(1, 0);
  if (*quant == "fp4")
    r.is(r.I(1, 1), K.value > 0 ? K.value / 2 : r.I(1, 1).value, "K / 2 packed E2M1 pairs");
  else
    r.eq(r.I(1, 1), K);
  if (quantised && r.ok()) {
    if (K.value > 0 && K.value % 32 != 0)
      r.fail(fmt::format("{} is {}, expected a multiple of 32 (block-scaled weight)", K.label,
                         K.value));
    if (in[2].slot->dtype != D::F8_E8M0)
      r.fail(fmt::format("input 2 (scale) is {}, expected F8_E8M0",
                         dtypeName(in[2].slot->dtype)));
    if (in[2].slot->shape.size() != 2)
      r.fail(fmt::format("input 2 (scale) has rank {}, expected 2", in[2].slot->shape.size()));
    if (r.ok() && N.value > 0 && K.value > 0) {
      r.is(r.I(2, 0), *quant == "fp8" ? (N.value + 31) / 32 : N.value,
           *quant == "fp8" ? "ceil(N / 32) scale rows" : "N scale rows");
      r.is(r.I(2, 1), K.value / 32, "K / 32 scale columns");
    }
  }
  r.eq(r.O(0, 0), r.I(0, 0));
  if (const int64_t width = r.product(true, 0, 1); r.ok() && width > 0 && N.value > 0 &&
                                                    width != N.value)
    r.fail(fmt::format("output 0 has {} values per row, expected N = {} (input 1 dim 0)", width,
                       N.value));
END

REL(ropeRel, RopeParams)
  r.rope(p.rope, r.I(0, -1));
  r.range("position_stride", p.position_stride, 1, kMaxCount);
  const auto &x = in[0].slot->shape, &y = out[0].slot->shape;
  if (r.ok() && x.size() != y.size())
    r.fail(fmt::format("output 0 has rank {}, expected {} (input 0's)", y.size(), x.size()));
  for (size_t a = 0; r.ok() && a < x.size(); ++a)
    r.eq(r.O(0, int(a)), r.I(0, int(a)));
END

REL(windowKvRel, WindowKvParams)
  const int64_t window = r.range("window", p.window, 1, kMaxCount);
  const StateBuffer *ring = r.stateOut(0);
  if (r.ok() && ring && window > ring->capacity)
    r.fail(fmt::format("parameter 'window' is {}, expected at most {} (the capacity of ring '{}')",
                       window, ring->capacity, ring->name));
  r.recordWidth(ring, r.I(0, 1), "the kv head dim");
  r.eq(r.O(1, 1), r.I(0, 1));
  const ValueSlot &rows = *out[1].slot;
  if (r.ok() && rows.shape[0] == kWindowRows && rows.ratio != window)
    r.fail(fmt::format("output 1 (window rows) has window {}, expected {} (parameter 'window')",
                       rows.ratio, window));
  if (r.ok() && window != plan.model.windowSize)
    r.fail(fmt::format("parameter 'window' is {}, expected {} (the model's window size)", window,
                       plan.model.windowSize));
END

REL(compressorRel, CompressorParams)
  const int64_t ratio = r.range("ratio", p.ratio, 1, kMaxCount);
  const bool gated = in.size() == 5;
  if (r.ok() && ratio > 1 && !gated)
    r.fail(fmt::format("ratio {} needs the gate weight (5 inputs), the launch has 4", ratio));
  const size_t norm = gated ? 3 : 2, st = gated ? 4 : 3;
  if (r.ok() && in[st].slot != out[0].slot)
    r.fail(fmt::format("input {} (state) and output 0 (state) must be the same value", st));
  const StateBuffer *s = r.stateOut(0);
  r.ratioOf("ratio", p.ratio, s);
  Dim Dh = r.I(1, 0);
  r.eq(r.I(1, 1), r.I(0, 1));
  if (gated) {
    r.eq(r.I(2, 0), Dh);
    r.eq(r.I(2, 1), r.I(0, 1));
  }
  r.eq(r.I(norm, 0), Dh);
  r.eq(r.O(1, 1), Dh);
  if (r.ok() && s && Dh.value > 0 && s->dim != Dh.value)
    r.fail(fmt::format("state '{}' has dim {}, expected {} (input 1 dim 0, the head dim)",
                       s->name, s->dim, Dh.value));
END

REL(compressKvRel, CompressKvParams)
  const StateBuffer *s = r.stateOut(0);
  r.ratioOf("ratio", p.ratio, s);
  r.rope(p.rope, r.I(0, 1));
  r.recordWidth(s, r.I(0, 1), "the latent width");
END

REL(indexKeysRel, IndexKeysParams)
  const StateBuffer *s = r.stateOut(0);
  r.ratioOf("ratio", p.ratio, s);
  Dim Dk = r.I(1, 0);
  r.rope(p.rope, Dk);
  r.eq(r.I(1, 1), r.I(0, 1));
  r.eq(r.I(2, 0), Dk);
  r.recordWidth(s, Dk, "the index head dim");
END

REL(indexQueriesRel, IndexQueriesParams)
  Dim S = r.I(0, 0), Hi = r.O(0, 1), Dk = r.O(0, 2);
  r.rope(p.rope, Dk);
  r.eq(r.O(0, 0), S);
  r.eq(r.I(1, 1), r.I(0, 1));
  Dim N = r.I(1, 0), K = r.I(0, 1);
  if (Hi.value > 0 && Dk.value > 0)
    r.is(N, Hi.value * Dk.value, "heads * index head dim of output 0");
  if (r.ok() && K.value > 0 && K.value % 32 != 0)
    r.fail(fmt::format("{} is {}, expected a multiple of 32", K.label, K.value));
  if (N.value > 0 && K.value > 0) {
    r.is(r.I(2, 0), (N.value + 31) / 32, "ceil(N / 32) scale rows");
    r.is(r.I(2, 1), K.value / 32, "K / 32 scale columns");
  }
END

REL(indexerScoreRel, IndexerScoreParams)
  Dim S = r.I(0, 0), Hi = r.I(0, 1), Dk = r.I(0, 2);
  r.eq(r.I(1, 0), S);
  r.eq(r.I(1, 1), Hi);
  r.eq(r.O(0, 0), S);
  const StateBuffer *s = r.stateIn(2);
  r.recordWidth(s, Dk, "the query head dim");
  if (r.ok() && s && s->ratio <= 0)
    r.fail(fmt::format("state '{}' has ratio {}, expected > 0", s->name, s->ratio));
  const ValueSlot &o = *out[0].slot;
  if (r.ok() && s && o.shape[1] == kCompressedLength && o.ratio != s->ratio)
    r.fail(fmt::format("output 0 dim 1 has ratio {}, expected {} (the ratio of state '{}')",
                       o.ratio, s->ratio, s->name));
  // A fixed score width beyond the keys' capacity is refused by the adapter,
  // but only after the output was allocated: 2^31 columns cost 8 GB and 15 s
  // before the error (dsc-plan-mutants).
  if (r.ok() && s && o.shape[1] > s->capacity)
    r.fail(fmt::format("output 0 dim 1 is {}, more than the {} entries of state '{}'", o.shape[1],
                       s->capacity, s->name));
END

REL(candidateBlocksRel, CandidateBlocksParams)
  const int64_t blocks = r.range("blocks", p.blocks, 1, kMaxCount);
  r.range("block_size", p.block_size, 1, kMaxCount);
  r.range("ratio", p.ratio, 1, kMaxCount);
  r.eq(r.O(0, 0), r.I(0, 0));
  r.is(r.O(0, 1), blocks, "parameter 'blocks': the candidate block ids of a row");
END

REL(indexerTopkRel, IndexerTopKParams)
  const int64_t kk = r.range("topk", p.topk, 1, kMaxCount);
  r.range("ratio", p.ratio, 1, kMaxCount);
  r.is(r.O(0, 1), kk, "parameter 'topk'");
  r.eq(r.O(0, 0), r.I(0, 0));
  if (in.size() == 2) { // the candidate block ids of each row
    r.range("block_size", p.block_size, 1, kMaxCount);
    r.eq(r.I(1, 0), r.I(0, 0));
  }
END

REL(sparseAttentionRel, SparseAttentionParams)
  const bool compressed = in.size() == 6;
  Dim S = r.I(0, 0), H = r.I(0, 1), Dh = r.I(0, 2);
  r.recordWidth(r.stateIn(1), Dh, "the attention head dim");
  if (compressed) {
    const StateBuffer *kv = r.stateIn(2);
    if (r.ok() && kv && kv->ratio <= 0)
      r.fail(fmt::format("input 2 (main KV) state '{}' has ratio {}, expected > 0", kv->name,
                         kv->ratio));
    r.recordWidth(kv, Dh, "the attention head dim");
    r.eq(r.I(3, 0), S);
  }
  const size_t sink = compressed ? 4 : 2, rows = compressed ? 5 : 3;
  r.is(r.I(sink, 0), H.value > 0 ? H.value : r.I(sink, 0).value, "one sink per head");
  r.eq(r.I(rows, 1), Dh);
  const ValueSlot &w = *in[rows].slot;
  if (r.ok() && w.shape[0] == kWindowRows && w.ratio != plan.model.windowSize)
    r.fail(fmt::format("input {} (window rows) has window {}, expected {} (the model's window "
                       "size)",
                       rows, w.ratio, plan.model.windowSize));
  for (int a = 0; a < 3; ++a)
    r.eq(r.O(0, a), r.I(0, a));
END

REL(groupedOutputRel, GroupedOutputParams)
  Dim H = r.I(0, 1), Dh = r.I(0, 2);
  const int64_t groups = r.range("groups", p.groups, 1, kMaxCount);
  if (!r.ok())
    return r.err;
  if (H.value > 0 && H.value % groups != 0)
    r.fail(fmt::format("parameter 'groups' is {}, expected a divisor of the {} heads ({})",
                       groups, H.value, H.label));
  Dim rowsA = r.I(1, 0);
  if (r.ok() && rowsA.value > 0 && rowsA.value % groups != 0)
    r.fail(fmt::format("{} is {}, expected a multiple of groups {}", rowsA.label, rowsA.value,
                       groups));
  if (H.value > 0 && Dh.value > 0)
    r.is(r.I(1, 1), H.value * Dh.value / groups, "heads * head dim / groups");
  r.eq(r.I(2, 1), rowsA);
  Dim Dm = r.I(2, 0), In = r.I(2, 1);
  if (r.ok() && In.value > 0 && In.value % 32 != 0)
    r.fail(fmt::format("{} is {}, expected a multiple of 32", In.label, In.value));
  if (Dm.value > 0 && In.value > 0) {
    r.is(r.I(3, 0), (Dm.value + 31) / 32, "ceil(D / 32) scale rows");
    r.is(r.I(3, 1), In.value / 32, "G*R / 32 scale columns");
  }
  r.eq(r.O(0, 0), r.I(0, 0));
  r.eq(r.O(0, 1), Dm);
END

REL(moeGateRel, MoeGateParams)
  Dim E = r.I(1, 0);
  const int64_t topk = r.range("topk", p.topk, 1, E.value > 0 ? E.value : kMaxCount);
  r.eq(r.I(1, 1), r.I(0, 1));
  r.eq(r.I(2, 0), E);
  for (size_t o = 0; o < 2; ++o) {
    r.eq(r.O(o, 0), r.I(0, 0));
    r.is(r.O(o, 1), topk, "parameter 'topk'");
  }
END

REL(moeExpertsRel, MoeExpertsParams)
  Dim S = r.I(0, 0), Dm = r.I(0, 1);
  r.eq(r.I(1, 0), S);
  r.eq(r.I(2, 0), S);
  r.eq(r.I(2, 1), r.I(1, 1));
  Dim E = r.I(3, 0), inter = r.I(3, 1);
  if (r.ok() && Dm.value > 0 && Dm.value % 32 != 0)
    r.fail(fmt::format("{} is {}, expected a multiple of 32", Dm.label, Dm.value));
  if (r.ok() && inter.value > 0 && inter.value % 32 != 0)
    r.fail(fmt::format("{} is {}, expected a multiple of 32", inter.label, inter.value));
  if (!r.ok() || Dm.value <= 0 || inter.value <= 0)
    return r.err;
  const int64_t d = Dm.value, f = inter.value;
  // Routed (stacked, FP4): w1/w3 [E, inter, D/2] + [E, inter, D/32]; w2 [E, D, inter/2] + [E, D, inter/32].
  const int64_t want[6][3] = {{f, d / 2, 0}, {f, d / 32, 0}, {f, d / 2, 0},
                              {f, d / 32, 0}, {d, f / 2, 0}, {d, f / 32, 0}};
  for (size_t j = 0; j < 6; ++j) {
    r.eq(r.I(3 + j, 0), E);
    r.is(r.I(3 + j, 1), want[j][0], "stacked routed expert weights");
    r.is(r.I(3 + j, 2), want[j][1], "stacked routed expert weights");
  }
  // Shared (FP8): w1/w3 [inter, D] + [ceil(inter/32), D/32]; w2 [D, inter] + [ceil(D/32), inter/32].
  const int64_t shared[6][2] = {{f, d}, {(f + 31) / 32, d / 32}, {f, d},
                                {(f + 31) / 32, d / 32}, {d, f}, {(d + 31) / 32, f / 32}};
  for (size_t j = 0; j < 6; ++j) {
    r.is(r.I(9 + j, 0), shared[j][0], "shared expert weights");
    r.is(r.I(9 + j, 1), shared[j][1], "shared expert weights");
  }
  r.eq(r.O(0, 0), S);
  r.eq(r.O(0, 1), Dm);
END

REL(engramHashRel, EngramHashParams)
  const std::span<const int64_t> layers = k.array(p.layers), mult = k.array(p.multipliers),
                                 primes = k.array(p.primes), offsets = k.array(p.offsets);
  const int64_t maxNgram = r.range("max_ngram", p.max_ngram, 2, 64),
                heads = r.range("heads", p.heads, 1, kMaxCount);
  const int64_t pad = r.range("pad_id", p.pad_id, 0, kMaxCount);
  if (!r.ok())
    return r.err;
  const int64_t L = static_cast<int64_t>(layers.size()), C = (maxNgram - 1) * heads;
  if (L == 0)
    r.fail("parameter 'layers' is empty");
  else if (static_cast<int64_t>(mult.size()) != L * maxNgram)
    r.fail(fmt::format("parameter 'multipliers' has {} values, expected {} (layers * max_ngram)",
                       mult.size(), L * maxNgram));
  else if (static_cast<int64_t>(primes.size()) != L * C)
    r.fail(fmt::format("parameter 'primes' has {} values, expected {} (layers * (max_ngram - 1) "
                       "* heads)",
                       primes.size(), L * C));
  else if (static_cast<int64_t>(offsets.size()) != L * C)
    r.fail(fmt::format("parameter 'offsets' has {} values, expected {} (layers * (max_ngram - "
                       "1) * heads)",
                       offsets.size(), L * C));
  for (int64_t p : primes)
    if (r.ok() && p <= 0)
      r.fail(fmt::format("parameter 'primes' holds {}, expected positive values", p));
  const auto &map = plan.model.engramTokenMap;
  if (r.ok() && map.empty())
    r.fail("the plan carries no Engram token map (model.engramTokenMap)");
  if (r.ok() && pad >= static_cast<int64_t>(map.size()))
    r.fail(fmt::format("parameter 'pad_id' is {}, expected below {} (the token map's size)", pad,
                       map.size()));
  if (r.ok() && in[1].slot != out[0].slot)
    r.fail("input 1 (history) and output 0 (history) must be the same value");
  r.eq(r.O(1, 0), r.I(0, 0));
  r.is(r.O(1, 1), L, "the layers of parameter 'layers'");
  r.is(r.O(1, 2), C, "(max_ngram - 1) * heads");
END

REL(engramLookupRel, EngramLookupParams)
  Dim L = r.I(0, 1), C = r.I(0, 2), hd = r.I(1, 1);
  r.range("slot", p.slot, 0, L.value > 0 ? L.value - 1 : kMaxCount);
  if (r.ok() && hd.value > 0 && hd.value % 32 != 0)
    r.fail(fmt::format("{} is {}, expected a multiple of 32", hd.label, hd.value));
  r.eq(r.I(2, 0), r.I(1, 0));
  if (hd.value > 0)
    r.is(r.I(2, 1), hd.value / 32, "hd / 32 scales");
  r.eq(r.O(0, 0), r.I(0, 0));
  if (C.value > 0 && hd.value > 0)
    r.is(r.O(0, 1), C.value * hd.value, "hash columns * table width");
END

REL(engramGateRel, EngramGateParams)
  Dim S = r.I(0, 0), hc = r.I(0, 1), Dm = r.I(0, 2);
  r.eq(r.I(1, 0), S);
  if (hc.value > 0 && Dm.value > 0)
    r.is(r.I(1, 1), (hc.value + 1) * Dm.value, "(hc + 1) * D");
  for (size_t j = 2; j < 4; ++j) {
    r.eq(r.I(j, 0), hc);
    r.eq(r.I(j, 1), Dm);
  }
  for (int a = 0; a < 3; ++a)
    r.eq(r.O(0, a), r.I(0, a));
END

/// replay_slice (CED): the outputs are a row suffix of the inputs (rows are
/// kTokens in, kReplayTokens out; the trailing dims must agree).
REL(replaySliceRel, ReplaySliceParams)
  r.eq(r.O(0, 1), r.I(0, 1));
  r.eq(r.O(0, 2), r.I(0, 2));
  r.eq(r.O(1, 1), r.I(1, 1));
  r.eq(r.I(1, 1), r.I(0, 1));
END

REL(copyMeanRel, CopyMeanParams)
  r.eq(r.O(0, 0), r.I(0, 0));
  r.eq(r.O(0, 1), r.I(0, 2));
END

REL(concatRel, ConcatParams)
  const ValueSlot &o = *out[0].slot;
  int64_t width = 0;
  bool fixed = true;
  for (size_t j = 0; j < in.size() && r.ok(); ++j) {
    const ValueSlot &x = *in[j].slot;
    if (x.dtype != o.dtype)
      r.fail(fmt::format("input {} is {}, expected {} (output 0's dtype)", j, dtypeName(x.dtype),
                         dtypeName(o.dtype)));
    else if (x.shape.size() != o.shape.size())
      r.fail(fmt::format("input {} has rank {}, expected {} (output 0's)", j, x.shape.size(),
                         o.shape.size()));
    for (size_t a = 0; r.ok() && a + 1 < x.shape.size(); ++a)
      r.eq(r.I(j, int(a)), r.O(0, int(a)));
    if (x.shape.back() > 0)
      width += x.shape.back();
    else
      fixed = false;
  }
  if (fixed)
    r.is(r.O(0, -1), width, "the sum of the inputs' last dims");
  else if (r.ok() && o.shape.back() > 0)
    r.fail("output 0's last dim is fixed but an input's is symbolic");
END

REL(headRel, HeadParams)
  r.eq(r.I(1, 1), r.I(0, 1));
  r.eq(r.O(0, 1), r.I(1, 0));
  r.le(r.O(0, 0), r.I(0, 0));
  const int64_t rows = out[0].slot->shape[0];
  if (r.ok() && rows < 0 && rows != in[0].slot->shape[0])
    r.fail(fmt::format("output 0 dim 0 is {}, expected 1 or {} (input 0 dim 0)", symName(rows),
                       symName(in[0].slot->shape[0])));
END

#undef REL
#undef END

OperandSignature op(const char *role, std::vector<DType> dtypes, int rankMin, int rankMax = -1,
                    std::vector<StateKind> states = {}) {
  return {role, std::move(dtypes), rankMin, rankMax < 0 ? rankMin : rankMax, std::move(states)};
}
OperandSignature st(const char *role, std::vector<DType> dtypes, int rank,
                    std::vector<StateKind> states) {
  return op(role, std::move(dtypes), rank, rank, std::move(states));
}

std::vector<KernelSignature> buildTable() {
  const std::vector<D> bf{D::BF16}, f32{D::F32}, i32{D::I32}, i64{D::I64}, u8{D::U8},
      e4m3{D::F8_E4M3}, e8m0{D::F8_E8M0}, i8{D::I8}, any{};
  const std::vector<SK> rings{SK::WindowRing, SK::DSparkRing};
  std::vector<KernelSignature> t;
  auto add = [&](const char *name, std::vector<std::vector<OperandSignature>> ins,
                 std::vector<OperandSignature> outs, decltype(KernelSignature::relations) rel,
                 bool variadic = false) {
    KernelSignature s;
    s.name = name;
    s.inputLayouts = std::move(ins);
    s.outputs = std::move(outs);
    s.relations = rel;
    s.variadicInputs = variadic;
    t.push_back(std::move(s));
  };
  add("embed", {{op("ids", i32, 1), op("table", bf, 2)}}, {op("out", bf, 2)}, embedRel);
  add("hc_expand", {{op("x", bf, 2)}}, {op("stream", bf, 3)}, hcExpandRel);
  add("hc_identity_mix", {{op("stream", bf, 3)}}, {op("mix", f32, 2)}, hcIdentityMixRel);
  add("hc_mixes",
      {{op("stream", bf, 3), op("fn", f32, 2), op("scale", f32, 1), op("base", f32, 1)}},
      {op("pre", f32, 2), op("post", f32, 2), op("comb", f32, 3)}, hcMixesRel);
  add("hc_pre", {{op("stream", bf, 3), op("pre", f32, 2)}}, {op("x", bf, 2)}, hcPreRel);
  add("hc_post",
      {{op("x", bf, 2), op("residual", bf, 3), op("post", f32, 2), op("comb", f32, 3)}},
      {op("stream", bf, 3)}, hcPostRel);
  add("rms_norm", {{op("x", bf, 1, 3), op("weight", bf, 1)}}, {op("out", bf, 1, 3)},
      rmsNormRel);
  add("linear", {{op("x", bf, 2), op("weight", {D::BF16, D::F8_E4M3, D::I8}, 2)},
                 {op("x", bf, 2), op("weight", {D::BF16, D::F8_E4M3, D::I8}, 2),
                  op("scale", e8m0, 2)}},
      {op("out", bf, 2, 3)}, linearRel);
  add("rope", {{op("x", bf, 2, 3)}}, {op("out", bf, 2, 3)}, ropeRel);
  add("window_kv", {{op("kv", bf, 2)}}, {st("ring", u8, 2, rings), op("window rows", f32, 2)},
      windowKvRel);
  add("compressor",
      {{op("x", bf, 2), op("wkv", bf, 2), op("norm", bf, 1),
        st("state", f32, 3, {SK::CompressorState})},
       {op("x", bf, 2), op("wkv", bf, 2), op("wgate", bf, 2), op("norm", bf, 1),
        st("state", f32, 3, {SK::CompressorState})}},
      {st("state", f32, 3, {SK::CompressorState}), op("latents", bf, 2)}, compressorRel);
  add("compress_kv", {{op("latents", bf, 2)}}, {st("main KV", u8, 2, {SK::MainKv})},
      compressKvRel);
  add("index_keys", {{op("latents", bf, 2), op("wk", bf, 2), op("k_norm", bf, 1)}},
      {st("index keys", u8, 2, {SK::IndexKeys})}, indexKeysRel);
  add("index_queries", {{op("qr", bf, 2), op("wq_b", e4m3, 2), op("scale", e8m0, 2)}},
      {op("queries", bf, 3)}, indexQueriesRel);
  add("indexer_score",
      {{op("queries", bf, 3), op("head weights", bf, 2),
        st("index keys", u8, 2, {SK::IndexKeys})}},
      {op("scores", bf, 2)}, indexerScoreRel);
  add("candidate_blocks", {{op("scores", bf, 2)}}, {op("candidate blocks", i32, 2)},
      candidateBlocksRel);
  add("indexer_topk", {{op("scores", bf, 2)}, {op("scores", bf, 2), op("candidate blocks", i32, 2)}},
      {op("top-k", i32, 2)}, indexerTopkRel);
  add("sparse_attention",
      {{op("q", bf, 3), st("ring", u8, 2, rings), op("sink", f32, 1), op("window rows", f32, 2)},
       {op("q", bf, 3), st("ring", u8, 2, rings), st("main KV", u8, 2, {SK::MainKv}),
        op("top-k", i32, 2), op("sink", f32, 1), op("window rows", f32, 2)}},
      {op("out", bf, 3)}, sparseAttentionRel);
  add("grouped_output",
      {{op("o", bf, 3), op("wo_a", bf, 2), op("wo_b", e4m3, 2), op("wo_b scale", e8m0, 2)}},
      {op("out", bf, 2)}, groupedOutputRel);
  add("moe_gate", {{op("x", bf, 2), op("gate weight", bf, 2), op("bias", f32, 1)}},
      {op("route weights", f32, 2), op("expert ids", i32, 2)}, moeGateRel);
  {
    std::vector<OperandSignature> ins{op("x", bf, 2), op("route weights", f32, 2),
                                      op("expert ids", i32, 2)};
    for (const char *w : {"w1", "w3", "w2"}) {
      ins.push_back(op(w, i8, 3));
      ins.push_back(op("routed scale", e8m0, 3));
    }
    for (const char *w : {"shared w1", "shared w3", "shared w2"}) {
      ins.push_back(op(w, e4m3, 2));
      ins.push_back(op("shared scale", e8m0, 2));
    }
    add("moe_experts", {ins}, {op("out", bf, 2)}, moeExpertsRel);
  }
  add("engram_hash", {{op("ids", i32, 1), st("history", i64, 1, {SK::EngramHistory})}},
      {st("history", i64, 1, {SK::EngramHistory}), op("hashes", i64, 3)}, engramHashRel);
  add("engram_lookup", {{op("hashes", i64, 3), op("table", e4m3, 2), op("table scale", e8m0, 2)}},
      {op("out", bf, 2)}, engramLookupRel);
  add("engram_gate",
      {{op("stream", bf, 3), op("kv", bf, 2), op("q_weight", bf, 2), op("k_weight", bf, 2)}},
      {op("stream", bf, 3)}, engramGateRel);
  add("copy_mean", {{op("stream", bf, 3)}}, {op("out", bf, 2)}, copyMeanRel);
  add("replay_slice", {{op("stream", bf, 3), op("mix", f32, 2)}},
      {op("stream", bf, 3), op("mix", f32, 2)}, replaySliceRel);
  add("concat", {{op("tensor", {D::BF16, D::F32}, 1, 4)}}, {op("out", {D::BF16, D::F32}, 1, 4)},
      concatRel, /*variadic=*/true);
  add("head", {{op("x", bf, 2), op("weight", bf, 2)}}, {op("logits", f32, 2)}, headRel);
  return t;
}

std::string dtypeSet(const std::vector<DType> &ds) {
  std::string s;
  for (size_t i = 0; i < ds.size(); ++i)
    s += (i ? (i + 1 == ds.size() ? " or " : ", ") : "") + std::string(dtypeName(ds[i]));
  return s;
}

/// Checks one operand against its position's signature; "" if it matches.
std::string checkOperand(const char *io, size_t pos, const OperandSignature &sig,
                         const OperandView &v) {
  const ValueSlot &s = *v.slot;
  const std::string at = fmt::format("{} {} ({}, value '{}')", io, pos, sig.role, s.name);
  if (!sig.dtypes.empty() &&
      std::find(sig.dtypes.begin(), sig.dtypes.end(), s.dtype) == sig.dtypes.end())
    return fmt::format("{} is {}, expected {}", at, dtypeName(s.dtype), dtypeSet(sig.dtypes));
  const int rank = static_cast<int>(s.shape.size());
  if (sig.rankMax > 0 && (rank < sig.rankMin || rank > sig.rankMax))
    return sig.rankMin == sig.rankMax
               ? fmt::format("{} has rank {}, expected {}", at, rank, sig.rankMin)
               : fmt::format("{} has rank {}, expected {} to {}", at, rank, sig.rankMin,
                             sig.rankMax);
  if (sig.states.empty()) {
    if (s.kind == ValueKind::State)
      return fmt::format("{} is a State value, expected a tensor", at);
  } else {
    if (!v.state)
      return fmt::format("{} is not a State value, expected a {} state", at,
                         stateKindText(sig.states[0]));
    if (std::find(sig.states.begin(), sig.states.end(), v.state->kind) == sig.states.end())
      return fmt::format("{} is state '{}' of kind {}, expected {}", at, v.state->name,
                         stateKindText(v.state->kind), stateKindText(sig.states[0]));
  }
  return {};
}

} // namespace

const std::vector<KernelSignature> &kernelSignatures() {
  static const std::vector<KernelSignature> table = buildTable();
  return table;
}

const KernelSignature *findKernelSignature(const std::string &name) {
  for (const KernelSignature &s : kernelSignatures())
    if (name == s.name)
      return &s;
  return nullptr;
}

std::string checkStateSlot(const ValueSlot &slot, const StateBuffer &state) {
  auto shape = [](const std::vector<int64_t> &v) { return fmt::format("[{}]", fmt::join(v, ", ")); };
  switch (state.kind) {
  case SK::WindowRing:
  case SK::DSparkRing:
  case SK::MainKv:
  case SK::IndexKeys: {
    if (slot.dtype != D::U8)
      return fmt::format("is {}, expected U8 (the records of a {} state)", dtypeName(slot.dtype),
                         stateKindText(state.kind));
    if (slot.shape.size() != 2 || slot.shape[1] != state.layout.entryBytes ||
        (slot.shape[0] > 0 && slot.shape[0] > state.capacity))
      return fmt::format("has shape {}, expected [rows <= {}, {}] (capacity, entryBytes of "
                         "state '{}')",
                         shape(slot.shape), state.capacity, state.layout.entryBytes, state.name);
    return {};
  }
  case SK::CompressorState: {
    if (state.dim <= 0)
      return fmt::format("state '{}' has dim {}, expected > 0 (the compressor's head dim)",
                         state.name, state.dim);
    const std::vector<int64_t> want{2, state.ratio, state.dim};
    if (slot.dtype != D::F32 || slot.shape != want)
      return fmt::format("is {} {}, expected F32 {} (state '{}': [2, ratio, dim])",
                         dtypeName(slot.dtype), shape(slot.shape), shape(want), state.name);
    return {};
  }
  case SK::EngramHistory: {
    const std::vector<int64_t> want{state.capacity};
    if (slot.dtype != D::I64 || slot.shape != want)
      return fmt::format("is {} {}, expected I64 {} (state '{}': one id per position)",
                         dtypeName(slot.dtype), shape(slot.shape), shape(want), state.name);
    return {};
  }
  }
  return "has an unknown state kind";
}

int64_t programFixedTokens(const Program &program) {
  return program.name == "decode" ? 1 : 0; // Session::decode: one token per call
}

Status checkLaunchSignature(const Plan &plan, const Program &program, size_t launchIndex) {
  const Launch &l = program.launches[launchIndex];
  const KernelSpec &k = plan.kernels[static_cast<size_t>(l.kernel)];
  const std::string where =
      fmt::format("program '{}' launch {} ({}): ", program.name, launchIndex, k.name);
  const KernelSignature *sig = findKernelSignature(k.name);
  if (!sig) // not in the vocabulary: the backend's check() rejects it unless it knows it
    return Status::ok();
  auto view = [&](int64_t v) {
    OperandView o;
    o.slot = &program.values[static_cast<size_t>(v)];
    if (o.slot->kind == ValueKind::State)
      o.state = &plan.states[static_cast<size_t>(o.slot->state)];
    return o;
  };
  std::vector<OperandView> ins, outs;
  for (int64_t v : l.inputs)
    ins.push_back(view(v));
  for (int64_t v : l.outputs)
    outs.push_back(view(v));

  // Counts and the input layout.
  const std::vector<OperandSignature> *layout = nullptr;
  if (sig->variadicInputs) {
    if (ins.empty())
      return invalidArgument(where + "has no inputs, expected at least 1");
    layout = &sig->inputLayouts.front();
  } else {
    for (const auto &candidate : sig->inputLayouts)
      if (candidate.size() == ins.size())
        layout = &candidate;
    if (!layout) {
      std::string counts;
      for (size_t i = 0; i < sig->inputLayouts.size(); ++i)
        counts += (i ? " or " : "") + std::to_string(sig->inputLayouts[i].size());
      return invalidArgument(
          fmt::format("{}has {} inputs, expected {}", where, ins.size(), counts));
    }
  }
  if (outs.size() != sig->outputs.size())
    return invalidArgument(fmt::format("{}has {} outputs, expected {}", where, outs.size(),
                                       sig->outputs.size()));
  for (size_t i = 0; i < ins.size(); ++i) {
    const OperandSignature &s = (*layout)[std::min(i, layout->size() - 1)];
    if (std::string bad = checkOperand("input", i, s, ins[i]); !bad.empty())
      return invalidArgument(where + bad);
  }
  for (size_t i = 0; i < outs.size(); ++i)
    if (std::string bad = checkOperand("output", i, sig->outputs[i], outs[i]); !bad.empty())
      return invalidArgument(where + bad);
  if (sig->relations)
    if (std::string bad = sig->relations(k, plan, ins, outs, programFixedTokens(program));
        !bad.empty())
      return invalidArgument(where + bad);
  return Status::ok();
}

} // namespace dsc::runtime
