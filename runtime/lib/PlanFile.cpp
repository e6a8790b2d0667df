//===- PlanFile.cpp - Read, verify and write plan files --------------------===//
//
// Plan <-> FlatBuffers (runtime/schema/plan.fbs). Reading is defensive:
// the buffer is checked for its size and file identifier, the root table's
// `version` field is verified and compared on its own (so that a future
// schema is reported as a version mismatch rather than as corruption), then
// the whole buffer goes through the FlatBuffers verifier, the conversion
// checks every enum and union tag, and verifyPlan checks the semantics.
// Nothing here throws; every failure is a Status naming the origin.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/PlanFile.h"

#include "dsc/runtime/InputFile.h"

#include "dsc/abi/NativeExecutables.h"
#include "dsc/runtime/KernelSignatures.h"

#include "dsc/numerics/KvLayout.h"
#include "plan_generated.h"

#include <fmt/format.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <string_view>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace dsc::runtime {

namespace {

//===----------------------------------------------------------------------===//
// Enum mapping. The schema's numbers are the file contract; the C++ enums
// may be reordered, so DType goes through a switch, and the uint8-backed
// enums that already carry explicit values are pinned by static_asserts.
//===----------------------------------------------------------------------===//

fb::DType toFb(DType d) {
  switch (d) {
  case DType::BF16: return fb::DType::BF16;
  case DType::F16: return fb::DType::F16;
  case DType::F32: return fb::DType::F32;
  case DType::F64: return fb::DType::F64;
  case DType::I8: return fb::DType::I8;
  case DType::U8: return fb::DType::U8;
  case DType::I16: return fb::DType::I16;
  case DType::I32: return fb::DType::I32;
  case DType::I64: return fb::DType::I64;
  case DType::Bool: return fb::DType::Bool;
  case DType::F8_E4M3: return fb::DType::F8_E4M3;
  case DType::F8_E8M0: return fb::DType::F8_E8M0;
  }
  return fb::DType::BF16; // unreachable for a valid enum
}

std::optional<DType> fromFb(fb::DType d) {
  switch (d) {
  case fb::DType::BF16: return DType::BF16;
  case fb::DType::F16: return DType::F16;
  case fb::DType::F32: return DType::F32;
  case fb::DType::F64: return DType::F64;
  case fb::DType::I8: return DType::I8;
  case fb::DType::U8: return DType::U8;
  case fb::DType::I16: return DType::I16;
  case fb::DType::I32: return DType::I32;
  case fb::DType::I64: return DType::I64;
  case fb::DType::Bool: return DType::Bool;
  case fb::DType::F8_E4M3: return DType::F8_E4M3;
  case fb::DType::F8_E8M0: return DType::F8_E8M0;
  }
  return std::nullopt;
}

#define DSC_PIN_ENUM(CPP, FB)                                                   \
  static_assert(static_cast<int>(CPP) == static_cast<int>(FB),                  \
                "plan.fbs and Plan.h disagree on " #CPP)
DSC_PIN_ENUM(TensorKind::Weight, fb::TensorKind::Weight);
DSC_PIN_ENUM(TensorKind::Scale, fb::TensorKind::Scale);
DSC_PIN_ENUM(TensorKind::Fp4Packed, fb::TensorKind::Fp4Packed);
DSC_PIN_ENUM(StateKind::WindowRing, fb::StateKind::WindowRing);
DSC_PIN_ENUM(StateKind::MainKv, fb::StateKind::MainKv);
DSC_PIN_ENUM(StateKind::IndexKeys, fb::StateKind::IndexKeys);
DSC_PIN_ENUM(StateKind::CompressorState, fb::StateKind::CompressorState);
DSC_PIN_ENUM(StateKind::EngramHistory, fb::StateKind::EngramHistory);
DSC_PIN_ENUM(StateKind::DSparkRing, fb::StateKind::DSparkRing);
DSC_PIN_ENUM(ValueKind::Input, fb::ValueKind::Input);
DSC_PIN_ENUM(ValueKind::Activation, fb::ValueKind::Activation);
DSC_PIN_ENUM(ValueKind::Weight, fb::ValueKind::Weight);
DSC_PIN_ENUM(ValueKind::State, fb::ValueKind::State);
DSC_PIN_ENUM(numerics::KvValueType::E2M1, 0);
DSC_PIN_ENUM(numerics::KvValueType::E4M3, 1);
DSC_PIN_ENUM(numerics::KvScaleType::E4M3, 0);
DSC_PIN_ENUM(numerics::KvScaleType::UE8M0, 1);
DSC_PIN_ENUM(numerics::KvPageOrder::TokenInterleaved, 0);
DSC_PIN_ENUM(numerics::KvPageOrder::PagePlanar, 1);
#undef DSC_PIN_ENUM

/// Converts a stored enum byte after a range check.
template <typename E, typename FbE> std::optional<E> enumFromFb(FbE v) {
  const auto raw = static_cast<int>(v);
  if (raw < static_cast<int>(FbE::MIN) || raw > static_cast<int>(FbE::MAX))
    return std::nullopt;
  return static_cast<E>(raw);
}

const char *stateKindName(StateKind k) {
  switch (k) {
  case StateKind::WindowRing: return "WindowRing";
  case StateKind::MainKv: return "MainKv";
  case StateKind::IndexKeys: return "IndexKeys";
  case StateKind::CompressorState: return "CompressorState";
  case StateKind::EngramHistory: return "EngramHistory";
  case StateKind::DSparkRing: return "DSparkRing";
  }
  return "?";
}

const char *valueKindName(ValueKind k) {
  switch (k) {
  case ValueKind::Input: return "an Input";
  case ValueKind::Activation: return "an Activation";
  case ValueKind::Weight: return "a Weight";
  case ValueKind::State: return "a State";
  }
  return "an unknown";
}

std::string shapeString(const std::vector<int64_t> &shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

//===----------------------------------------------------------------------===//
// Serialisation
//===----------------------------------------------------------------------===//

using Builder = flatbuffers::FlatBufferBuilder;

flatbuffers::Offset<flatbuffers::Vector<int64_t>> longs(Builder &b,
                                                        const std::vector<int64_t> &v) {
  return b.CreateVector(v);
}

flatbuffers::Offset<fb::ModelFacts> writeFacts(Builder &b, const PlanFacts &m) {
  auto name = b.CreateString(m.name);
  auto ced = b.CreateString(m.cedMode);
  auto map = longs(b, m.engramTokenMap);
  fb::ModelFactsBuilder f(b);
  f.add_name(name);
  f.add_n_layers(m.nLayers);
  f.add_n_mtp_layers(m.nMtpLayers);
  f.add_dim(m.dim);
  f.add_vocab_size(m.vocabSize);
  f.add_hc_mult(m.hcMult);
  f.add_head_dim(m.headDim);
  f.add_rope_head_dim(m.ropeHeadDim);
  f.add_n_heads(m.nHeads);
  f.add_window_size(m.windowSize);
  f.add_index_head_dim(m.indexHeadDim);
  f.add_index_n_heads(m.indexNHeads);
  f.add_index_topk(m.indexTopk);
  f.add_ced_split_layer(m.cedSplitLayer);
  f.add_max_seq_len(m.maxSeqLen);
  f.add_max_batch(m.maxBatch);
  f.add_ced_mode(ced);
  f.add_layer_boundaries(m.layerBoundaries);
  f.add_engram_token_map(map);
  f.add_engram_compressed_vocab_size(m.engramCompressedVocabSize);
  f.add_ced_replay_tokens(m.cedReplayTokens);
  f.add_prefill_chunk(m.prefillChunk);
  return f.Finish();
}

flatbuffers::Offset<fb::TensorBinding> writeTensor(Builder &b, const TensorBinding &t) {
  auto name = b.CreateString(t.name);
  auto shape = longs(b, t.shape);
  fb::TensorBindingBuilder f(b);
  f.add_name(name);
  f.add_dtype(toFb(t.dtype));
  f.add_shape(shape);
  f.add_kind(static_cast<fb::TensorKind>(t.kind));
  f.add_experts(t.experts);
  if (t.alternativeDType)
    f.add_alternative_dtype(toFb(*t.alternativeDType));
  return f.Finish();
}

flatbuffers::Offset<fb::StateBuffer> writeState(Builder &b, const StateBuffer &s) {
  auto name = b.CreateString(s.name);
  const RecordLayout &l = s.layout;
  auto layout = fb::CreateRecordLayout(b, l.valuesPerEntry, l.valuesPerTile, l.valueType,
                                       l.scaleType, l.dataBytes, l.scaleBytes, l.entryBytes,
                                       l.tokensPerPage, l.pageOrder);
  return fb::CreateStateBuffer(b, name, static_cast<fb::StateKind>(s.kind), s.layer, s.ratio,
                               s.capacity, layout, s.dim);
}

// The generated kernel-parameter pack/unpack (dsc-tblgen -gen-kernel-abi-fb-conv).
#include "KernelParamsFb.inc"

flatbuffers::Offset<fb::KernelSpec> writeKernel(Builder &b, const KernelSpec &k) {
  auto name = b.CreateString(k.name);
  fb::KernelParams type = fb::KernelParams::NONE;
  auto params = packKernelParams(b, k.params, type);
  auto constants = longs(b, k.constants);
  return fb::CreateKernelSpec(b, name, type, params, constants, k.module);
}

flatbuffers::Offset<fb::Module> writeModule(Builder &b, const Module &m) {
  auto name = b.CreateString(m.templateName);
  b.ForceVectorAlignment(m.cubin.size(), sizeof(uint8_t), 16); // schema: force_align 16
  auto cubin = b.CreateVector(m.cubin);
  auto ptx = b.CreateString(m.ptx);
  return fb::CreateModule(b, name, cubin, ptx);
}

flatbuffers::Offset<fb::Program> writeProgram(Builder &b, const Program &p) {
  auto name = b.CreateString(p.name);
  std::vector<flatbuffers::Offset<fb::ValueSlot>> values;
  values.reserve(p.values.size());
  for (const ValueSlot &v : p.values) {
    auto shape = longs(b, v.shape);
    auto vname = b.CreateString(v.name);
    values.push_back(fb::CreateValueSlot(b, static_cast<fb::ValueKind>(v.kind), toFb(v.dtype),
                                         shape, v.ratio, v.tensor, v.state, vname));
  }
  auto valueVec = b.CreateVector(values);
  auto inputs = longs(b, p.inputs);
  auto outputs = longs(b, p.outputs);
  std::vector<flatbuffers::Offset<fb::Launch>> launches;
  launches.reserve(p.launches.size());
  for (const Launch &l : p.launches) {
    auto in = longs(b, l.inputs);
    auto out = longs(b, l.outputs);
    launches.push_back(fb::CreateLaunch(b, l.kernel, in, out, l.layer, l.replay, l.fusion));
  }
  auto launchVec = b.CreateVector(launches);
  std::vector<flatbuffers::Offset<fb::LayerBoundary>> boundaries;
  for (const LayerBoundary &lb : p.boundaries)
    boundaries.push_back(fb::CreateLayerBoundary(b, lb.layer, lb.stream, lb.mix, lb.afterLaunch));
  auto boundaryVec = b.CreateVector(boundaries);
  std::vector<flatbuffers::Offset<fb::Fusion>> fusions;
  for (const Fusion &f : p.fusions)
    fusions.push_back(fb::CreateFusion(b, b.CreateString(f.kernel), f.layer, f.tileRows,
                                       f.executable.empty() ? 0 : b.CreateString(f.executable),
                                       f.module, longs(b, f.internal)));
  auto fusionVec = b.CreateVector(fusions);
  return fb::CreateProgram(b, name, valueVec, inputs, outputs, launchVec, boundaryVec, fusionVec,
                           p.peakBytes, p.peakBytesUntiled);
}

//===----------------------------------------------------------------------===//
// Deserialisation (after the FlatBuffers verifier accepted the buffer)
//===----------------------------------------------------------------------===//

/// A [long] vector. The FlatBuffers verifier only checks the 4-byte alignment
/// of a vector's length, so the elements of a hostile buffer may sit at 4 mod
/// 8: copy bytes instead of loading int64_t in place (the host is
/// little-endian, as the format).
std::vector<int64_t> readLongs(const flatbuffers::Vector<int64_t> *v) {
  static_assert(std::endian::native == std::endian::little);
  if (!v || v->size() == 0)
    return {};
  std::vector<int64_t> out(v->size());
  std::memcpy(out.data(), v->Data(), out.size() * sizeof(int64_t));
  return out;
}

std::string readString(const flatbuffers::String *s) {
  return s ? s->str() : std::string();
}

template <typename T> size_t count(const flatbuffers::Vector<flatbuffers::Offset<T>> *v) {
  return v ? v->size() : 0;
}

std::string corrupt(const std::string &what) {
  return what + " (corrupted plan?)";
}


Expected<Plan> fromBuffer(const fb::Plan &root) {
  Plan plan;
  plan.version = root.version();

  if (const fb::ModelFacts *m = root.model()) {
    PlanFacts &f = plan.model;
    f.name = readString(m->name());
    f.nLayers = m->n_layers();
    f.nMtpLayers = m->n_mtp_layers();
    f.dim = m->dim();
    f.vocabSize = m->vocab_size();
    f.hcMult = m->hc_mult();
    f.headDim = m->head_dim();
    f.ropeHeadDim = m->rope_head_dim();
    f.nHeads = m->n_heads();
    f.windowSize = m->window_size();
    f.indexHeadDim = m->index_head_dim();
    f.indexNHeads = m->index_n_heads();
    f.indexTopk = m->index_topk();
    f.cedSplitLayer = m->ced_split_layer();
    f.maxSeqLen = m->max_seq_len();
    f.maxBatch = m->max_batch();
    f.cedMode = m->ced_mode() ? m->ced_mode()->str() : std::string("full");
    f.layerBoundaries = m->layer_boundaries();
    f.engramTokenMap = readLongs(m->engram_token_map());
    f.engramCompressedVocabSize = m->engram_compressed_vocab_size();
    f.cedReplayTokens = m->ced_replay_tokens();
    f.prefillChunk = m->prefill_chunk();
  } else {
    return dataLoss(corrupt("the plan has no model facts table"));
  }

  plan.tensors.reserve(count(root.tensors()));
  for (size_t i = 0; i < count(root.tensors()); ++i) {
    const fb::TensorBinding *t = root.tensors()->Get(static_cast<flatbuffers::uoffset_t>(i));
    TensorBinding out;
    out.name = readString(t->name());
    std::optional<DType> dtype = fromFb(t->dtype());
    if (!dtype)
      return dataLoss(corrupt(fmt::format("tensor {} '{}': dtype {} is not a known dtype", i,
                                          out.name, static_cast<int>(t->dtype()))));
    out.dtype = *dtype;
    out.shape = readLongs(t->shape());
    std::optional<TensorKind> kind = enumFromFb<TensorKind>(t->kind());
    if (!kind)
      return dataLoss(corrupt(fmt::format("tensor {} '{}': kind {} is not a TensorKind", i,
                                          out.name, static_cast<int>(t->kind()))));
    out.kind = *kind;
    out.experts = t->experts();
    if (auto alt = t->alternative_dtype(); alt.has_value()) {
      std::optional<DType> a = fromFb(*alt);
      if (!a)
        return dataLoss(corrupt(fmt::format(
            "tensor {} '{}': alternative dtype {} is not a known dtype", i, out.name,
            static_cast<int>(*alt))));
      out.alternativeDType = *a;
    }
    plan.tensors.push_back(std::move(out));
  }

  plan.states.reserve(count(root.states()));
  for (size_t i = 0; i < count(root.states()); ++i) {
    const fb::StateBuffer *s = root.states()->Get(static_cast<flatbuffers::uoffset_t>(i));
    StateBuffer out;
    out.name = readString(s->name());
    std::optional<StateKind> kind = enumFromFb<StateKind>(s->kind());
    if (!kind)
      return dataLoss(corrupt(fmt::format("state {} '{}': kind {} is not a StateKind", i,
                                          out.name, static_cast<int>(s->kind()))));
    out.kind = *kind;
    out.layer = s->layer();
    out.ratio = s->ratio();
    out.capacity = s->capacity();
    out.dim = s->dim();
    if (const fb::RecordLayout *l = s->layout()) {
      RecordLayout &r = out.layout;
      r.valuesPerEntry = l->values_per_entry();
      r.valuesPerTile = l->values_per_tile();
      r.valueType = l->value_type();
      r.scaleType = l->scale_type();
      r.dataBytes = l->data_bytes();
      r.scaleBytes = l->scale_bytes();
      r.entryBytes = l->entry_bytes();
      r.tokensPerPage = l->tokens_per_page();
      r.pageOrder = l->page_order();
    }
    plan.states.push_back(std::move(out));
  }

  plan.kernels.reserve(count(root.kernels()));
  for (size_t i = 0; i < count(root.kernels()); ++i) {
    const fb::KernelSpec *k = root.kernels()->Get(static_cast<flatbuffers::uoffset_t>(i));
    KernelSpec out;
    out.name = readString(k->name());
    Expected<abi::KernelParams> params = unpackKernelParams(
        k->params_type(), k->params(), fmt::format("kernel {} '{}': ", i, out.name));
    if (!params)
      return params.status();
    out.params = std::move(*params);
    out.constants = readLongs(k->constants());
    out.module = k->module_();
    plan.kernels.push_back(std::move(out));
  }

  plan.modules.reserve(count(root.modules()));
  for (size_t i = 0; i < count(root.modules()); ++i) {
    const fb::Module *m = root.modules()->Get(static_cast<flatbuffers::uoffset_t>(i));
    Module out;
    out.templateName = readString(m->template_());
    if (const auto *cubin = m->cubin())
      out.cubin.assign(cubin->begin(), cubin->end());
    out.ptx = readString(m->ptx());
    plan.modules.push_back(std::move(out));
  }

  plan.programs.reserve(count(root.programs()));
  for (size_t i = 0; i < count(root.programs()); ++i) {
    const fb::Program *p = root.programs()->Get(static_cast<flatbuffers::uoffset_t>(i));
    Program out;
    out.name = readString(p->name());
    for (size_t j = 0; j < count(p->values()); ++j) {
      const fb::ValueSlot *v = p->values()->Get(static_cast<flatbuffers::uoffset_t>(j));
      ValueSlot slot;
      slot.name = readString(v->name());
      std::optional<ValueKind> kind = enumFromFb<ValueKind>(v->kind());
      std::optional<DType> dtype = fromFb(v->dtype());
      if (!kind || !dtype)
        return dataLoss(corrupt(fmt::format(
            "program '{}': value {} '{}': kind {} / dtype {} out of range", out.name, j,
            slot.name, static_cast<int>(v->kind()), static_cast<int>(v->dtype()))));
      slot.kind = *kind;
      slot.dtype = *dtype;
      slot.shape = readLongs(v->shape());
      slot.ratio = v->ratio();
      slot.tensor = v->tensor();
      slot.state = v->state();
      out.values.push_back(std::move(slot));
    }
    out.inputs = readLongs(p->inputs());
    out.outputs = readLongs(p->outputs());
    for (size_t j = 0; j < count(p->launches()); ++j) {
      const fb::Launch *l = p->launches()->Get(static_cast<flatbuffers::uoffset_t>(j));
      Launch launch;
      launch.kernel = l->kernel();
      launch.inputs = readLongs(l->inputs());
      launch.outputs = readLongs(l->outputs());
      launch.layer = l->layer();
      launch.replay = l->replay();
      launch.fusion = l->fusion();
      out.launches.push_back(std::move(launch));
    }
    out.peakBytes = p->peak_bytes();
    out.peakBytesUntiled = p->peak_bytes_untiled();
    for (size_t j = 0; j < count(p->fusions()); ++j) {
      const fb::Fusion *f = p->fusions()->Get(static_cast<flatbuffers::uoffset_t>(j));
      Fusion fusion;
      fusion.kernel = f->kernel()->str();
      fusion.layer = f->layer();
      fusion.tileRows = f->tile_rows();
      fusion.executable = readString(f->executable());
      fusion.module = f->module_();
      fusion.internal = readLongs(f->internal());
      out.fusions.push_back(std::move(fusion));
    }
    for (size_t j = 0; j < count(p->boundaries()); ++j) {
      const fb::LayerBoundary *b = p->boundaries()->Get(static_cast<flatbuffers::uoffset_t>(j));
      out.boundaries.push_back({b->layer(), b->stream(), b->mix(), b->after_launch()});
    }
    plan.programs.push_back(std::move(out));
  }
  return plan;
}

//===----------------------------------------------------------------------===//
// Semantic checks
//===----------------------------------------------------------------------===//

bool isSymbolicDim(int64_t d) {
  return d == kTokens || d == kCompressedTokens || d == kCompressedLength || d == kWindowRows ||
         d == kReplayTokens;
}

/// Symbolic dimensions whose size needs the value's `ratio` parameter.
bool needsRatio(int64_t d) {
  return d == kCompressedTokens || d == kCompressedLength || d == kWindowRows;
}

bool isRecordState(StateKind k) {
  return k == StateKind::WindowRing || k == StateKind::MainKv || k == StateKind::IndexKeys ||
         k == StateKind::DSparkRing;
}

/// Checks one record layout; returns what is wrong or "".
std::string checkLayout(const RecordLayout &l) {
  if (l.valueType > static_cast<uint8_t>(numerics::KvValueType::E4M3))
    return fmt::format("valueType {} is not a KvValueType (0 E2M1, 1 E4M3)", l.valueType);
  if (l.scaleType > static_cast<uint8_t>(numerics::KvScaleType::UE8M0))
    return fmt::format("scaleType {} is not a KvScaleType (0 E4M3, 1 UE8M0)", l.scaleType);
  if (l.pageOrder > static_cast<uint8_t>(numerics::KvPageOrder::PagePlanar))
    return fmt::format("pageOrder {} is not a KvPageOrder (0 TokenInterleaved, 1 PagePlanar)",
                       l.pageOrder);
  if (l.valuesPerEntry <= 0 || l.valuesPerTile <= 0)
    return fmt::format("valuesPerEntry {} and valuesPerTile {} must be positive",
                       l.valuesPerEntry, l.valuesPerTile);
  if (l.valuesPerEntry % l.valuesPerTile != 0)
    return fmt::format("valuesPerEntry {} is not a multiple of valuesPerTile {}",
                       l.valuesPerEntry, l.valuesPerTile);
  const bool fp4 = l.valueType == static_cast<uint8_t>(numerics::KvValueType::E2M1);
  if (fp4 && l.valuesPerTile % 2 != 0)
    return fmt::format("E2M1 values need an even valuesPerTile, not {}", l.valuesPerTile);
  if (!fp4 && l.scaleType != static_cast<uint8_t>(numerics::KvScaleType::UE8M0))
    return "E4M3 values need UE8M0 scales (scaleType 1)";
  const int32_t wantData = fp4 ? l.valuesPerEntry / 2 : l.valuesPerEntry;
  if (l.dataBytes != wantData)
    return fmt::format("dataBytes {} for {} {} values, expected {}", l.dataBytes,
                       l.valuesPerEntry, fp4 ? "E2M1" : "E4M3", wantData);
  const int32_t tiles = l.valuesPerEntry / l.valuesPerTile;
  if (l.scaleBytes != tiles)
    return fmt::format("scaleBytes {} for {} tiles, expected {}", l.scaleBytes, tiles, tiles);
  if (static_cast<int64_t>(l.entryBytes) != static_cast<int64_t>(l.dataBytes) + l.scaleBytes)
    return fmt::format("entryBytes {} != dataBytes {} + scaleBytes {}", l.entryBytes,
                       l.dataBytes, l.scaleBytes);
  if (l.tokensPerPage <= 0)
    return fmt::format("tokensPerPage {} must be positive (the runtime pages every record state)",
                       l.tokensPerPage);
  // Backstop: the numerics library's own definition of a valid record.
  numerics::KvRecordFormat f;
  f.valuesPerEntry = l.valuesPerEntry;
  f.valuesPerTile = l.valuesPerTile;
  f.valueType = static_cast<numerics::KvValueType>(l.valueType);
  f.scaleType = static_cast<numerics::KvScaleType>(l.scaleType);
  f.dataBytes = l.dataBytes;
  f.scaleBytes = l.scaleBytes;
  f.entryBytes = l.entryBytes;
  if (!f.isValid())
    return "is not a valid numerics::KvRecordFormat";
  return {};
}

Status checkFacts(const PlanFacts &m) {
  const std::pair<const char *, int64_t> counts[] = {
      {"nLayers", m.nLayers},       {"nMtpLayers", m.nMtpLayers},
      {"dim", m.dim},               {"vocabSize", m.vocabSize},
      {"hcMult", m.hcMult},         {"headDim", m.headDim},
      {"ropeHeadDim", m.ropeHeadDim}, {"nHeads", m.nHeads},
      {"windowSize", m.windowSize}, {"indexHeadDim", m.indexHeadDim},
      {"indexNHeads", m.indexNHeads}, {"indexTopk", m.indexTopk},
      {"cedSplitLayer", m.cedSplitLayer}, {"maxSeqLen", m.maxSeqLen},
      {"engramCompressedVocabSize", m.engramCompressedVocabSize},
      {"cedReplayTokens", m.cedReplayTokens}, {"prefillChunk", m.prefillChunk}};
  for (const auto &[name, value] : counts)
    if (value < 0)
      return invalidArgument(fmt::format("model: {} is {}, must not be negative", name, value));
  // The config's own limit (Plan.h kMaxCount): every state capacity is
  // bounded by maxSeqLen, so it bounds what a session allocates. Every other
  // count but the chunk is a config size too, at most kMaxCount there
  // (docs/model-spec.md 3.1), so products of two fit int64 (fuzzing, issue
  // 15: a windowSize of INT64_MAX overflowed 2 x windowSize below).
  for (const auto &[name, value] : counts)
    if (value > kMaxCount && std::string_view(name) != "prefillChunk")
      return invalidArgument(
          fmt::format("model: {} is {}, expected at most {}", name, value, kMaxCount));
  // Chunked prefill (docs/runtime.md): chunks of more than C/2 tokens must
  // cover a window (continuation chunks read W-1 ring rows plus >= W rows of
  // their own) and, in a CED plan, the replayed rows (only the last chunk
  // replays).
  if (m.prefillChunk > 0) {
    if (m.prefillChunk < 2 * m.windowSize)
      return invalidArgument(fmt::format(
          "model: prefillChunk is {}, expected 0 (no chunking) or at least 2 x windowSize = {}",
          m.prefillChunk, 2 * m.windowSize));
    if (m.prefillChunk < 2 * m.cedReplayTokens)
      return invalidArgument(fmt::format(
          "model: prefillChunk is {}, expected at least 2 x cedReplayTokens = {} (the last chunk "
          "holds the CED replay)",
          m.prefillChunk, 2 * m.cedReplayTokens));
    if (m.layerBoundaries)
      return invalidArgument(fmt::format(
          "model: prefillChunk is {} in a conformance plan (layerBoundaries), expected 0: "
          "boundary dumps cover the whole prompt",
          m.prefillChunk));
  }
  if (m.maxBatch < 1)
    return invalidArgument(fmt::format("model: maxBatch is {}, must be at least 1", m.maxBatch));
  if (m.cedMode != "full" && m.cedMode != "bounded" && m.cedMode != "exact")
    return invalidArgument(
        fmt::format("model: cedMode '{}' is not full, bounded or exact", m.cedMode));
  for (size_t t = 0; t < m.engramTokenMap.size(); ++t) {
    const int64_t c = m.engramTokenMap[t];
    if (c < 0 || c >= m.engramCompressedVocabSize)
      return invalidArgument(fmt::format(
          "model: engramTokenMap maps token {} to {}, outside [0, {}) "
          "(engramCompressedVocabSize)",
          t, c, m.engramCompressedVocabSize));
  }
  return Status::ok();
}

Status checkTensors(const std::vector<TensorBinding> &tensors) {
  std::map<std::string_view, size_t> seen;
  for (size_t i = 0; i < tensors.size(); ++i) {
    const TensorBinding &t = tensors[i];
    const std::string where = fmt::format("tensor {} '{}': ", i, t.name);
    if (t.name.empty())
      return invalidArgument(fmt::format("tensor {} has an empty name", i));
    if (auto [it, fresh] = seen.emplace(t.name, i); !fresh)
      return invalidArgument(
          fmt::format("{}the name is also used by tensor {}", where, it->second));
    for (int64_t d : t.shape)
      if (d <= 0)
        return invalidArgument(fmt::format("{}shape {} has a dimension that is not positive",
                                           where, shapeString(t.shape)));
    const bool hasE = t.name.find("{e}") != std::string::npos;
    if (t.experts < 0)
      return invalidArgument(fmt::format("{}experts is {}, must not be negative", where,
                                         t.experts));
    if (t.experts > 0 && !hasE)
      return invalidArgument(fmt::format(
          "{}stacked over {} experts but the name has no '{{e}}'", where, t.experts));
    if (t.experts == 0 && hasE)
      return invalidArgument(fmt::format(
          "{}the name has '{{e}}' but experts is 0 (not a stacked tensor)", where));
    if (t.experts > 0 && (t.shape.empty() || t.shape[0] != t.experts))
      return invalidArgument(fmt::format(
          "{}stacked over {} experts but shape {} does not start with {}", where, t.experts,
          shapeString(t.shape), t.experts));
  }
  return Status::ok();
}

Status checkStates(const std::vector<StateBuffer> &states, const PlanFacts &facts) {
  std::map<std::string_view, size_t> seen;
  for (size_t i = 0; i < states.size(); ++i) {
    const StateBuffer &s = states[i];
    const std::string where =
        fmt::format("state {} '{}' ({}): ", i, s.name, stateKindName(s.kind));
    if (s.name.empty())
      return invalidArgument(fmt::format("state {} has an empty name", i));
    if (auto [it, fresh] = seen.emplace(s.name, i); !fresh)
      return invalidArgument(
          fmt::format("{}the name is also used by state {}", where, it->second));
    if (s.capacity <= 0)
      return invalidArgument(fmt::format("{}capacity {} must be positive", where, s.capacity));
    const bool needsRatio = s.kind == StateKind::MainKv || s.kind == StateKind::IndexKeys ||
                            s.kind == StateKind::CompressorState;
    if (needsRatio ? s.ratio <= 0 : s.ratio < 0)
      return invalidArgument(fmt::format("{}ratio {} must be {}", where, s.ratio,
                                         needsRatio ? "positive" : "non-negative"));
    // What the model facts allow (issue 15: an inflated capacity made the
    // session try to allocate 68-132 GiB): a compressed cache holds one
    // entry per `ratio` positions of maxSeqLen, a ring at most its window
    // (or the sequence), anything else at most one entry per position.
    const bool compressed = s.kind == StateKind::MainKv || s.kind == StateKind::IndexKeys;
    const bool ring = s.kind == StateKind::WindowRing || s.kind == StateKind::DSparkRing;
    const int64_t most = compressed ? facts.maxSeqLen / s.ratio
                         : ring     ? std::max(facts.windowSize, facts.maxSeqLen)
                                    : facts.maxSeqLen;
    if (s.capacity > most)
      return invalidArgument(fmt::format(
          "{}capacity {} exceeds the {} the model allows ({})", where, s.capacity, most,
          compressed ? fmt::format("maxSeqLen {} / ratio {}", facts.maxSeqLen, s.ratio)
          : ring     ? fmt::format("the larger of windowSize {} and maxSeqLen {}",
                                   facts.windowSize, facts.maxSeqLen)
                     : fmt::format("maxSeqLen {}", facts.maxSeqLen)));
    if (s.layer < -1)
      return invalidArgument(fmt::format("{}layer {} is invalid (-1: none)", where, s.layer));
    if (isRecordState(s.kind))
      if (std::string bad = checkLayout(s.layout); !bad.empty())
        return invalidArgument(where + "record layout: " + bad);
    if (s.kind == StateKind::CompressorState ? s.dim <= 0 : s.dim < 0)
      return invalidArgument(fmt::format(
          "{}dim {} must be {}", where, s.dim,
          s.kind == StateKind::CompressorState
              ? "positive (the compressor's head dim; recompile a plan written without it)"
              : "non-negative"));
  }
  return Status::ok();
}

/// Every array parameter of k lies inside k.constants.
Status checkArrays(const KernelSpec &k, size_t index) {
  Status status = Status::ok();
  auto check = [&](const char *field, const abi::KernelArray &a) {
    if (status && !k.holds(a))
      status = invalidArgument(fmt::format(
          "kernel {} '{}': array parameter '{}' (offset {}, count {}) lies outside the "
          "kernel's {} constants",
          index, k.name, field, a.offset, a.count, k.constants.size()));
  };
  if (const auto *e = k.as<abi::EngramHashParams>()) {
    check("layers", e->layers);
    check("multipliers", e->multipliers);
    check("primes", e->primes);
    check("offsets", e->offsets);
  }
  return status;
}

Status checkKernels(const std::vector<KernelSpec> &kernels, const std::vector<Module> &modules) {
  for (size_t i = 0; i < kernels.size(); ++i) {
    const KernelSpec &k = kernels[i];
    if (k.name.empty())
      return invalidArgument(fmt::format("kernel {} has an empty name", i));
    // A kernel outside the vocabulary (a backend's own) carries no
    // parameters; Backend::check rejects it unless the backend knows it.
    const std::optional<abi::KernelParams> known = abi::defaultParams(k.name);
    const size_t want = known ? known->index() : 0;
    if (k.params.index() != want)
      return invalidArgument(fmt::format(
          "kernel {} '{}' carries the parameters of {}, expected {}", i, k.name,
          k.params.index() == 0 ? std::string("no kernel")
                                : "'" + std::string(abi::kernelName(k.params)) + "'",
          known ? "its own" : "none (a kernel outside the vocabulary)"));
    if (Status s = checkArrays(k, i); !s)
      return s;
    if (k.module < -1 || k.module >= int64_t(modules.size()))
      return invalidArgument(fmt::format("kernel {} '{}': module {} is out of range (the plan has "
                                         "{} modules; -1: none)",
                                         i, k.name, k.module, modules.size()));
  }
  for (size_t i = 0; i < modules.size(); ++i)
    if (modules[i].templateName.empty())
      return invalidArgument(fmt::format("module {} has an empty template name", i));
  return Status::ok();
}

Status checkProgram(const Plan &plan, size_t index) {
  const Program &p = plan.programs[index];
  const std::string where = fmt::format("program '{}': ", p.name);
  const int64_t nValues = static_cast<int64_t>(p.values.size());
  auto valueName = [&](int64_t v) {
    return fmt::format("value {} '{}'", v, p.values[static_cast<size_t>(v)].name);
  };

  // Values.
  for (int64_t v = 0; v < nValues; ++v) {
    const ValueSlot &s = p.values[static_cast<size_t>(v)];
    const std::string at = where + valueName(v) + ": ";
    if (s.kind == ValueKind::Weight) {
      if (s.tensor < 0 || s.tensor >= static_cast<int64_t>(plan.tensors.size()))
        return invalidArgument(fmt::format(
            "{}a Weight value needs a tensor; tensor index {} is out of range (the plan has "
            "{} tensors)",
            at, s.tensor, plan.tensors.size()));
      // The kernels see the slot; the bytes are the tensor's. A slot
      // re-pointed at another tensor once read an [8,128,128] I8 stack as a
      // [256,256] BF16 matrix (issue 15; dsc-plan-mutants).
      const TensorBinding &t = plan.tensors[static_cast<size_t>(s.tensor)];
      if (s.dtype != t.dtype || s.shape != t.shape)
        return invalidArgument(fmt::format(
            "{}the slot is {} {} but its tensor {} '{}' is {} {} (a Weight value is its tensor)",
            at, dtypeName(s.dtype), shapeString(s.shape), s.tensor, t.name, dtypeName(t.dtype),
            shapeString(t.shape)));
    } else if (s.tensor != -1) {
      return invalidArgument(fmt::format("{}{} value names tensor {} (only Weight values do)",
                                         at, valueKindName(s.kind), s.tensor));
    }
    if (s.kind == ValueKind::State) {
      if (s.state < 0 || s.state >= static_cast<int64_t>(plan.states.size()))
        return invalidArgument(fmt::format(
            "{}a State value needs a state; state index {} is out of range (the plan has {} "
            "states)",
            at, s.state, plan.states.size()));
      if (std::string bad = checkStateSlot(s, plan.states[static_cast<size_t>(s.state)]);
          !bad.empty())
        return invalidArgument(at + bad);
    } else if (s.state != -1) {
      return invalidArgument(fmt::format("{}{} value names state {} (only State values do)", at,
                                         valueKindName(s.kind), s.state));
    }
    bool parametrised = false;
    for (size_t axis = 0; axis < s.shape.size(); ++axis) {
      const int64_t d = s.shape[axis];
      // Symbols are row counts: the leading dimension (kCompressedLength
      // also the second, indexer scores [S, compressed length]). A width
      // edited to kTokens once passed and overflowed rms_norm (dsc-plan-mutants).
      if (isSymbolicDim(d) && axis > (d == kCompressedLength ? 1u : 0u))
        return invalidArgument(fmt::format(
            "{}shape {} has symbolic dimension {} at axis {}; symbolic dimensions are row counts "
            "and lead the shape (kCompressedLength (-3) may also be the second)",
            at, shapeString(s.shape), d, axis));
      if (d <= 0 && !isSymbolicDim(d))
        return invalidArgument(fmt::format(
            "{}shape {} has dimension {}; dimensions are positive or kTokens (-1), "
            "kCompressedTokens (-2), kCompressedLength (-3), kWindowRows (-4), kReplayTokens (-5)",
            at, shapeString(s.shape), d));
      // Fuzzing (issue 15): INT64_MAX here overflowed the launch checks'
      // arithmetic (KernelSignatures: ceil(D / 32), heads * head dim).
      if (d > kMaxDim)
        return invalidArgument(fmt::format("{}shape {} has dimension {}, above the limit of {} "
                                           "(2^31, Plan.h kMaxDim)",
                                           at, shapeString(s.shape), d, kMaxDim));
      parametrised |= needsRatio(d);
      if (d == kReplayTokens && plan.model.cedReplayTokens <= 0)
        return invalidArgument(fmt::format(
            "{}shape {} has kReplayTokens (-5) but the plan replays nothing "
            "(model cedReplayTokens is {})",
            at, shapeString(s.shape), plan.model.cedReplayTokens));
    }
    if (parametrised && s.ratio <= 0)
      return invalidArgument(fmt::format(
          "{}shape {} has compressed or window dimensions but ratio is {} (must be positive: "
          "the compress ratio, or the window W of kWindowRows)",
          at, shapeString(s.shape), s.ratio));
    if (s.ratio < 0)
      return invalidArgument(fmt::format("{}ratio {} is negative", at, s.ratio));
  }

  // Program inputs.
  std::vector<char> isProgramInput(p.values.size(), 0);
  for (size_t i = 0; i < p.inputs.size(); ++i) {
    const int64_t v = p.inputs[i];
    if (v < 0 || v >= nValues)
      return invalidArgument(fmt::format("{}input {} is value {}, out of range (the program has "
                                         "{} values)",
                                         where, i, v, nValues));
    const ValueSlot &s = p.values[static_cast<size_t>(v)];
    if (s.kind != ValueKind::Input)
      return invalidArgument(fmt::format("{}input {} is {}, {} value, not an Input", where, i,
                                         valueName(v), valueKindName(s.kind)));
    if (isProgramInput[static_cast<size_t>(v)])
      return invalidArgument(
          fmt::format("{}{} appears twice among the program inputs", where, valueName(v)));
    isProgramInput[static_cast<size_t>(v)] = 1;
  }
  for (int64_t v = 0; v < nValues; ++v)
    if (p.values[static_cast<size_t>(v)].kind == ValueKind::Input &&
        !isProgramInput[static_cast<size_t>(v)])
      return invalidArgument(fmt::format(
          "{}{} is an Input value but not among the program inputs", where, valueName(v)));

  // Fusions: named, each one run of consecutive launches of its layer with
  // one replay mark (an empty fusion is allowed but counts no launch).
  const int64_t nFusions = static_cast<int64_t>(p.fusions.size());
  for (size_t fi = 0; fi < p.fusions.size(); ++fi) {
    if (p.fusions[fi].kernel.empty())
      return invalidArgument(fmt::format("{}fusion {}: the kernel name is empty", where, fi));
    const Fusion &f = p.fusions[fi];
    if (f.tileRows < 0)
      return invalidArgument(fmt::format("{}fusion {} ('{}'): tileRows is {}, must not be negative",
                                         where, fi, f.kernel, f.tileRows));
    if (f.module < -1 || f.module >= static_cast<int64_t>(plan.modules.size()))
      return invalidArgument(fmt::format("{}fusion {} ('{}'): module {} is out of range (the plan "
                                         "has {} modules; -1: none)",
                                         where, fi, f.kernel, f.module, plan.modules.size()));
    if (!f.executable.empty()) {
      const abi::NativeExecutableInfo *e = abi::findNativeExecutable(f.executable);
      if (!e)
        return invalidArgument(fmt::format("{}fusion {} ('{}'): executable '{}' is not a native "
                                           "executable of this runtime (NativeExecutables.def)",
                                           where, fi, f.kernel, f.executable));
      if (f.kernel != e->group)
        return invalidArgument(fmt::format("{}fusion {} ('{}'): executable '{}' runs '{}' groups",
                                           where, fi, f.kernel, f.executable, e->group));
    }
    for (int64_t v : f.internal)
      if (v < 0 || v >= static_cast<int64_t>(p.values.size()) ||
          p.values[static_cast<size_t>(v)].kind != ValueKind::Activation)
        return invalidArgument(fmt::format("{}fusion {} ('{}'): internal value {} is not an "
                                           "Activation value of the program",
                                           where, fi, f.kernel, v));
  }
  std::vector<int64_t> fusionEnd(p.fusions.size(), -1); // last launch seen
  for (size_t li = 0; li < p.launches.size(); ++li) {
    const Launch &l = p.launches[li];
    if (l.fusion < 0) {
      if (l.fusion != -1)
        return invalidArgument(fmt::format("{}launch {}: fusion {} is invalid (-1: none)", where,
                                           li, l.fusion));
      continue;
    }
    if (l.fusion >= nFusions)
      return invalidArgument(fmt::format(
          "{}launch {}: fusion {} is out of range (the program has {} fusions)", where, li,
          l.fusion, nFusions));
    const Fusion &f = p.fusions[static_cast<size_t>(l.fusion)];
    int64_t &end = fusionEnd[static_cast<size_t>(l.fusion)];
    if (end >= 0 && end != static_cast<int64_t>(li) - 1)
      return invalidArgument(fmt::format(
          "{}launch {}: fusion {} ('{}') resumes after launch {}; its launches must be "
          "consecutive",
          where, li, l.fusion, f.kernel, end));
    if (l.layer != f.layer)
      return invalidArgument(fmt::format("{}launch {}: layer {} differs from fusion {} ('{}') "
                                         "of layer {}",
                                         where, li, l.layer, l.fusion, f.kernel, f.layer));
    if (f.tileRows > 0 && l.kernel >= 0 && l.kernel < static_cast<int64_t>(plan.kernels.size())) {
      const std::string &name = plan.kernels[static_cast<size_t>(l.kernel)].name;
      if (std::find(std::begin(kRowTileableKernels), std::end(kRowTileableKernels), name) ==
          std::end(kRowTileableKernels))
        return invalidArgument(fmt::format(
            "{}launch {}: kernel '{}' is not row-independent, so it cannot be a step of the "
            "row-tiled fusion {} ('{}')",
            where, li, name, l.fusion, f.kernel));
    }
    if (end >= 0 && p.launches[static_cast<size_t>(end)].replay != l.replay)
      return invalidArgument(fmt::format(
          "{}launch {}: fusion {} ('{}') mixes replayed and full-prompt launches", where, li,
          l.fusion, f.kernel));
    end = static_cast<int64_t>(li);
  }
  // Internal values: written by a step of their fusion, read by nothing
  // outside it (a native executable may never write them).
  for (size_t fi = 0; fi < p.fusions.size(); ++fi) {
    const Fusion &f = p.fusions[fi];
    for (int64_t v : f.internal) {
      bool writtenInside = false;
      for (size_t li = 0; li < p.launches.size(); ++li) {
        const Launch &l = p.launches[li];
        const bool inside = l.fusion == static_cast<int64_t>(fi);
        if (inside && std::find(l.outputs.begin(), l.outputs.end(), v) != l.outputs.end())
          writtenInside = true;
        if (!inside && (std::find(l.inputs.begin(), l.inputs.end(), v) != l.inputs.end() ||
                        std::find(l.outputs.begin(), l.outputs.end(), v) != l.outputs.end()))
          return invalidArgument(fmt::format("{}fusion {} ('{}'): internal value {} '{}' is used "
                                             "by launch {} outside the fusion",
                                             where, fi, f.kernel, v,
                                             p.values[static_cast<size_t>(v)].name, li));
      }
      bool exposed = std::find(p.outputs.begin(), p.outputs.end(), v) != p.outputs.end();
      for (const LayerBoundary &b : p.boundaries)
        exposed |= b.stream == v || b.mix == v;
      if (!writtenInside || exposed)
        return invalidArgument(fmt::format(
            "{}fusion {} ('{}'): internal value {} '{}' is {}", where, fi, f.kernel, v,
            p.values[static_cast<size_t>(v)].name,
            exposed ? "a program output or a layer boundary" : "not written by the fusion"));
    }
  }

  // Launches, in order: reads only of available values.
  std::vector<char> written(p.values.size(), 0);
  std::map<int64_t, int64_t> lastOfLayer;
  std::vector<std::set<int64_t>> writerLayers(p.values.size());
  for (size_t li = 0; li < p.launches.size(); ++li) {
    const Launch &l = p.launches[li];
    if (l.kernel < 0 || l.kernel >= static_cast<int64_t>(plan.kernels.size()))
      return invalidArgument(
          fmt::format("{}launch {}: kernel index {} is out of range (the plan has {} kernels)",
                      where, li, l.kernel, plan.kernels.size()));
    const std::string at = fmt::format("{}launch {} (kernel {} '{}'): ", where, li, l.kernel,
                                       plan.kernels[static_cast<size_t>(l.kernel)].name);
    if (l.layer < -1)
      return invalidArgument(
          fmt::format("{}layer {} is invalid (-1: outside blocks)", at, l.layer));
    for (size_t i = 0; i < l.inputs.size(); ++i) {
      const int64_t v = l.inputs[i];
      if (v < 0 || v >= nValues)
        return invalidArgument(fmt::format(
            "{}input {} is value {}, out of range (the program has {} values)", at, i, v,
            nValues));
      const ValueSlot &s = p.values[static_cast<size_t>(v)];
      if (s.kind == ValueKind::Activation && !written[static_cast<size_t>(v)])
        return invalidArgument(fmt::format(
            "{}input {} reads {}, an Activation no earlier launch writes", at, i,
            valueName(v)));
    }
    for (size_t i = 0; i < l.outputs.size(); ++i) {
      const int64_t v = l.outputs[i];
      if (v < 0 || v >= nValues)
        return invalidArgument(fmt::format(
            "{}output {} is value {}, out of range (the program has {} values)", at, i, v,
            nValues));
      const ValueSlot &s = p.values[static_cast<size_t>(v)];
      if (s.kind == ValueKind::Weight || s.kind == ValueKind::Input)
        return invalidArgument(fmt::format("{}output {} writes {}, {} value (read-only)", at,
                                           i, valueName(v), valueKindName(s.kind)));
    }
    if (Status s = checkLaunchSignature(plan, p, li); !s)
      return s;
    for (int64_t v : l.outputs) {
      written[static_cast<size_t>(v)] = 1;
      writerLayers[static_cast<size_t>(v)].insert(l.layer);
    }
    lastOfLayer[l.layer] = static_cast<int64_t>(li);
  }

  // Program outputs.
  std::vector<char> isProgramOutput(p.values.size(), 0);
  for (size_t i = 0; i < p.outputs.size(); ++i) {
    const int64_t v = p.outputs[i];
    if (v < 0 || v >= nValues)
      return invalidArgument(fmt::format(
          "{}output {} is value {}, out of range (the program has {} values)", where, i, v,
          nValues));
    const ValueSlot &s = p.values[static_cast<size_t>(v)];
    if (s.kind == ValueKind::Weight || s.kind == ValueKind::Input)
      return invalidArgument(fmt::format("{}output {} is {}, {} value (program outputs are "
                                         "Activation or State values)",
                                         where, i, valueName(v), valueKindName(s.kind)));
    if (s.kind == ValueKind::Activation && !written[static_cast<size_t>(v)])
      return invalidArgument(fmt::format(
          "{}output {} is {}, an Activation no launch writes", where, i, valueName(v)));
    if (isProgramOutput[static_cast<size_t>(v)])
      return invalidArgument(
          fmt::format("{}{} appears twice among the program outputs", where, valueName(v)));
    isProgramOutput[static_cast<size_t>(v)] = 1;
  }

  // Layer boundaries.
  std::map<int64_t, size_t> boundaryOfLayer;
  for (size_t bi = 0; bi < p.boundaries.size(); ++bi) {
    const LayerBoundary &b = p.boundaries[bi];
    const std::string at = fmt::format("{}boundary {} (layer {}): ", where, bi, b.layer);
    if (b.layer < 0)
      return invalidArgument(fmt::format("{}layer must not be negative", at));
    if (auto [it, fresh] = boundaryOfLayer.emplace(b.layer, bi); !fresh)
      return invalidArgument(
          fmt::format("{}layer {} already has boundary {}", at, b.layer, it->second));
    for (auto [role, v] : {std::pair<const char *, int64_t>{"stream", b.stream},
                           std::pair<const char *, int64_t>{"mix", b.mix}}) {
      if (v < 0 || v >= nValues)
        return invalidArgument(fmt::format(
            "{}{} is value {}, out of range (the program has {} values)", at, role, v,
            nValues));
      if (!writerLayers[static_cast<size_t>(v)].count(b.layer))
        return invalidArgument(fmt::format("{}{} is {}, which no launch of layer {} writes", at,
                                           role, valueName(v), b.layer));
    }
    if (b.afterLaunch < 0 || b.afterLaunch >= static_cast<int64_t>(p.launches.size()))
      return invalidArgument(fmt::format(
          "{}afterLaunch {} is out of range (the program has {} launches)", at, b.afterLaunch,
          p.launches.size()));
    const int64_t launchLayer = p.launches[static_cast<size_t>(b.afterLaunch)].layer;
    if (launchLayer != b.layer)
      return invalidArgument(fmt::format("{}afterLaunch {} is a launch of layer {}, not {}", at,
                                         b.afterLaunch, launchLayer, b.layer));
    if (const int64_t last = lastOfLayer[b.layer]; last != b.afterLaunch)
      return invalidArgument(fmt::format(
          "{}afterLaunch {} is not the layer's last launch (launch {} is)", at, b.afterLaunch,
          last));
  }
  return Status::ok();
}

} // namespace

//===----------------------------------------------------------------------===//
// API
//===----------------------------------------------------------------------===//

std::vector<uint8_t> serializePlan(const Plan &plan) {
  size_t guess = 4096;
  for (const Module &m : plan.modules)
    guess += m.cubin.size() + m.ptx.size();
  Builder b(guess);
  auto facts = writeFacts(b, plan.model);
  std::vector<flatbuffers::Offset<fb::TensorBinding>> tensors;
  for (const TensorBinding &t : plan.tensors)
    tensors.push_back(writeTensor(b, t));
  auto tensorVec = b.CreateVector(tensors);
  std::vector<flatbuffers::Offset<fb::StateBuffer>> states;
  for (const StateBuffer &s : plan.states)
    states.push_back(writeState(b, s));
  auto stateVec = b.CreateVector(states);
  std::vector<flatbuffers::Offset<fb::KernelSpec>> kernels;
  for (const KernelSpec &k : plan.kernels)
    kernels.push_back(writeKernel(b, k));
  auto kernelVec = b.CreateVector(kernels);
  std::vector<flatbuffers::Offset<fb::Program>> programs;
  for (const Program &p : plan.programs)
    programs.push_back(writeProgram(b, p));
  auto programVec = b.CreateVector(programs);
  std::vector<flatbuffers::Offset<fb::Module>> modules;
  for (const Module &m : plan.modules)
    modules.push_back(writeModule(b, m));
  auto moduleVec = b.CreateVector(modules);
  auto root = fb::CreatePlan(b, plan.version, facts, tensorVec, stateVec, kernelVec, programVec,
                             moduleVec);
  fb::FinishPlanBuffer(b, root);
  return std::vector<uint8_t>(b.GetBufferPointer(), b.GetBufferPointer() + b.GetSize());
}

Expected<Plan> parsePlan(std::span<const uint8_t> bytes, const std::string &origin) {
  const std::string where = origin + ": ";
  constexpr size_t kHeader = 2 * sizeof(flatbuffers::uoffset_t); // root offset + identifier
  if (bytes.size() < kHeader)
    return dataLoss(fmt::format("{}not a dsc plan ({} bytes, too short for a plan file)", where,
                                bytes.size()));
  if (bytes.size() >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalidArgument(fmt::format(
        "{}{} bytes exceed the FlatBuffers limit of 2 GiB for a plan", where, bytes.size()));
  const char *expected = fb::PlanIdentifier();
  if (!flatbuffers::BufferHasIdentifier(bytes.data(), expected)) {
    std::string got;
    for (size_t i = 4; i < 8; ++i) {
      const uint8_t c = bytes[i];
      got += (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'')
                 ? std::string(1, static_cast<char>(c))
                 : fmt::format("\\x{:02x}", c);
    }
    return invalidArgument(fmt::format(
        "{}not a dsc plan (file identifier '{}', expected '{}')", where, got, expected));
  }

  // FlatBuffers reads scalars in place: give it an 8-byte aligned copy if the
  // caller's buffer is not aligned (e.g. a slice of a larger buffer).
  std::vector<uint64_t> aligned;
  const uint8_t *data = bytes.data();
  if (reinterpret_cast<uintptr_t>(data) % alignof(uint64_t) != 0) {
    aligned.resize((bytes.size() + 7) / 8);
    std::memcpy(aligned.data(), bytes.data(), bytes.size());
    data = reinterpret_cast<const uint8_t *>(aligned.data());
  }

  // The version first, verified on its own: a newer schema may not verify
  // against this one's tables, and "wrong version" is the useful message.
  {
    flatbuffers::Verifier v(data, bytes.size());
    const flatbuffers::uoffset_t rootOffset = v.VerifyOffset(0);
    const auto *table = reinterpret_cast<const flatbuffers::Table *>(data + rootOffset);
    if (rootOffset == 0 || !table->VerifyTableStart(v) ||
        !table->VerifyField<uint32_t>(v, fb::Plan::VT_VERSION, sizeof(uint32_t)))
      return dataLoss(fmt::format(
          "{}corrupted or truncated plan ({} bytes): the root table does not verify", where,
          bytes.size()));
    const uint32_t version = table->GetField<uint32_t>(fb::Plan::VT_VERSION, 0);
    if (version != kPlanSchemaVersion)
      return failedPrecondition(fmt::format("{}plan schema version {}, this runtime reads {}",
                                            where, version, kPlanSchemaVersion));
  }

  flatbuffers::Verifier::Options options;
  options.max_tables = 100'000'000;
  flatbuffers::Verifier verifier(data, bytes.size(), options);
  if (!fb::VerifyPlanBuffer(verifier))
    return dataLoss(fmt::format(
        "{}corrupted or truncated plan ({} bytes): FlatBuffers verification failed", where,
        bytes.size()));

  Expected<Plan> plan = fromBuffer(*fb::GetPlan(data));
  if (!plan)
    return plan.status().withContext(where);
  if (Status s = verifyPlan(*plan); !s)
    return s.withContext(where);
  return plan;
}

Status verifyPlan(const Plan &plan) {
  if (plan.version != kPlanSchemaVersion)
    return failedPrecondition(fmt::format("plan schema version {}, this runtime reads {}",
                                          plan.version, kPlanSchemaVersion));
  if (Status s = checkFacts(plan.model); !s)
    return s;
  if (Status s = checkTensors(plan.tensors); !s)
    return s;
  if (Status s = checkStates(plan.states, plan.model); !s)
    return s;
  if (Status s = checkKernels(plan.kernels, plan.modules); !s)
    return s;
  std::map<std::string_view, size_t> names;
  for (size_t i = 0; i < plan.programs.size(); ++i) {
    const Program &p = plan.programs[i];
    if (p.name.empty())
      return invalidArgument(fmt::format("program {} has an empty name", i));
    if (auto [it, fresh] = names.emplace(p.name, i); !fresh)
      return invalidArgument(fmt::format("program {} '{}': the name is also used by program {}",
                                         i, p.name, it->second));
    if (Status s = checkProgram(plan, i); !s)
      return s;
  }
  return Status::ok();
}

Status writePlanFile(const std::string &path, const Plan &plan) {
  const std::string where = path + ": ";
  if (Status s = verifyPlan(plan); !s)
    return s.withContext(where + "refusing to write an invalid plan: ");
  const std::vector<uint8_t> bytes = serializePlan(plan);

  // A unique temporary file next to the target, renamed over it at the end:
  // readers see the old file or the complete new one, never a partial file.
  std::string temp = path + ".tmp.XXXXXX";
  int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    const int err = errno;
    const std::string msg = fmt::format("{}cannot create a temporary file '{}': {}", where,
                                        temp, std::strerror(err));
    return err == ENOENT ? notFound(msg) : unavailable(msg);
  }
  auto fail = [&](const std::string &what) {
    const int err = errno;
    if (fd >= 0)
      ::close(fd);
    ::unlink(temp.c_str());
    return unavailable(fmt::format("{}{}: {}", where, what, std::strerror(err)));
  };
  if (::fchmod(fd, 0644) != 0)
    return fail("cannot set the permissions of " + temp);
  size_t done = 0;
  while (done < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0) {
      if (errno == EINTR)
        continue;
      return fail("cannot write " + temp);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(fd) != 0)
    return fail("cannot flush " + temp);
  const int closed = ::close(fd);
  fd = -1;
  if (closed != 0)
    return fail("cannot close " + temp);
  if (::rename(temp.c_str(), path.c_str()) != 0)
    return fail("cannot rename " + temp + " to the plan path");
  return Status::ok();
}

Expected<Plan> readPlanFile(const std::string &path) {
  const std::string where = path + ": ";
  Expected<RegularFile> file = RegularFile::open(path, "plan"); // a FIFO is refused unopened
  if (!file)
    return file.status();
  const size_t size = static_cast<size_t>(file->size());
  if (size >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalidArgument(fmt::format(
        "{}{} bytes exceed the FlatBuffers limit of 2 GiB for a plan", where, size));
  std::vector<uint64_t> buffer((size + 7) / 8); // 8-byte aligned for FlatBuffers
  auto *data = reinterpret_cast<uint8_t *>(buffer.data());
  if (Status s = file->read(data, size); !s)
    return s;
  return parsePlan(std::span<const uint8_t>(data, size), path);
}

} // namespace dsc::runtime
