//===- Conformance.cpp - Forced boundaries and layer dumps -----------------===//
#include "dsc/runtime/Conformance.h"

#include "dsc/numerics/SparseSelect.h"
#include "dsc/runtime/Npy.h"
#include "dsc/runtime/StateLayout.h"

#include "dsc/numerics/ScalarCodecs.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace dsc::runtime {

namespace {

/// IEEE binary16 bits to float (exact).
float f16ToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  int exponent = (h >> 10) & 0x1f;
  uint32_t mantissa = h & 0x3ff;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(float(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? std::numeric_limits<float>::quiet_NaN()
                         : std::numeric_limits<float>::infinity();
  else
    magnitude = std::ldexp(float(mantissa | 0x400), exponent - 25);
  return sign ? -magnitude : magnitude;
}

} // namespace

Expected<HostTensor> toFloat32(const HostTensor &t) {
  switch (t.dtype()) {
  case DType::BF16: case DType::F16: case DType::F32: case DType::F64: case DType::I8:
  case DType::U8: case DType::I16: case DType::I32: case DType::I64: case DType::Bool:
  case DType::F8_E4M3:
    break;
  default:
    return invalidArgument(std::string("toFloat32: cannot widen ") + dtypeName(t.dtype()) +
                           ", expected BF16, F16, F32, F64, F8_E4M3 or an integer dtype");
  }
  if (!t.hasStorage())
    return failedPrecondition("toFloat32: the tensor has no host storage");
  HostTensor out;
  if (Status s = out.resetChecked(DType::F32, t.shape()); !s)
    return s;
  float *y = out.data<float>();
  int64_t n = t.numElements();
  for (int64_t i = 0; i < n; ++i) {
    switch (t.dtype()) {
    case DType::BF16: y[i] = numerics::bf16ToFloat(t.data<uint16_t>()[i]); break;
    case DType::F16: y[i] = f16ToFloat(t.data<uint16_t>()[i]); break;
    case DType::F32: y[i] = t.data<float>()[i]; break;
    case DType::F64: y[i] = float(t.data<double>()[i]); break;
    case DType::F8_E4M3: y[i] = numerics::e4m3ToFloat(t.data<uint8_t>()[i]); break;
    case DType::I8: y[i] = float(t.data<int8_t>()[i]); break;
    case DType::I16: y[i] = float(t.data<int16_t>()[i]); break;
    case DType::I32: y[i] = float(t.data<int32_t>()[i]); break;
    case DType::I64: y[i] = float(t.data<int64_t>()[i]); break;
    case DType::U8: case DType::Bool: y[i] = float(t.data<uint8_t>()[i]); break;
    default: y[i] = 0; break;
    }
  }
  return out;
}

namespace {

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

/// Copies a golden tensor into `target` after checking dtype and shape.
Status inject(const SafetensorsFile &file, const std::string &key, DType dtype,
              HostTensor &target) {
  const TensorView *view = file.find(key);
  if (!view)
    return notFound(file.path() + ": no tensor '" + key + "' to force the boundary with");
  if (view->dtype != dtype || view->shape != target.shape())
    return invalidArgument(file.path() + ": tensor '" + key + "' is " + dtypeName(view->dtype) +
                           " " + shapeText(view->shape) + ", the plan's boundary is " +
                           dtypeName(dtype) + " " + shapeText(target.shape()));
  std::memcpy(target.bytes(), view->bytes.data(), target.byteSize());
  return Status::ok();
}

} // namespace

Expected<std::unique_ptr<GoldenForcing>> GoldenForcing::open(const std::string &path) {
  Expected<SafetensorsFile> file = SafetensorsFile::open(path);
  if (!file)
    return file.status();
  return std::unique_ptr<GoldenForcing>(new GoldenForcing(std::move(file.value())));
}

Status GoldenForcing::atBoundary(const CallInfo &call, int64_t layer, HostTensor &stream,
                                 HostTensor &mix) {
  std::string prefix = call.phase + ".layers." + std::to_string(layer);
  if (Status s = inject(file_, prefix + ".out", DType::BF16, stream); !s)
    return s;
  return inject(file_, prefix + ".pre_mix", DType::F32, mix);
}

void LayerDumper::write(const std::string &name, const HostTensor &tensor) {
  if (!status_)
    return;
  status_ = writeNpy(directory_ + "/" + name + ".npy", tensor);
}

void LayerDumper::write(const std::string &name, const Expected<HostTensor> &tensor) {
  if (!status_)
    return;
  if (!tensor) {
    status_ = tensor.status().withContext(name + ": ");
    return;
  }
  write(name, *tensor);
}

/// The golden layout of candidates: a u8 mask [rows, T] (T = the compressed
/// length after the call) of the block ids [rows, blocks] the plan holds.
static Expected<HostTensor> candidateMask(const CallInfo &call, const KernelSpec &kernel,
                                          const HostTensor &ids) {
  const abi::CandidateBlocksParams *p = kernel.as<abi::CandidateBlocksParams>();
  if (!p || p->ratio <= 0)
    return invalidArgument("candidate_blocks: the kernel has no positive ratio");
  const int64_t rows = ids.dim(0), blocks = ids.dim(1);
  const int64_t width = (call.startPos + call.tokens) / p->ratio;
  HostTensor mask;
  if (Status s = mask.resetChecked(DType::U8, {rows, width}); !s)
    return s;
  for (int64_t r = 0; r < rows; ++r) {
    const std::vector<uint8_t> row = numerics::candidateMaskFromBlocks(
        ids.data<int32_t>() + r * blocks, blocks, p->block_size, width);
    std::copy(row.begin(), row.end(), mask.data<uint8_t>() + r * width);
  }
  return mask;
}

void LayerDumper::afterLaunch(const CallInfo &call, const Program &, const Launch &launch,
                              const KernelSpec &kernel,
                              std::span<const HostTensor *const> outputs) {
  std::string layer = call.phase + ".layers." + std::to_string(launch.layer);
  for (const HostTensor *out : outputs) {
    if (kernel.name == "indexer_topk" && out->dtype() == DType::I32)
      write(layer + ".topk_idxs", *out);
    else if (kernel.name == "candidate_blocks" && out->dtype() == DType::I32)
      write(layer + ".candidates", candidateMask(call, kernel, *out));
    else if ((kernel.name == "grouped_output" || kernel.name == "moe_experts") &&
             out->dtype() == DType::BF16)
      write(layer + (kernel.name == "grouped_output" ? ".attn_out" : ".ffn_out"), toFloat32(*out));
    else if (kernel.name == "engram_hash" && out->dtype() == DType::I64 && out->shape().size() == 3)
      write(call.phase + ".engram_hash_ids", *out);
    else if (kernel.name == "head" && call.decodeStep < 0 && out->dtype() == DType::F32 &&
             out->shape().size() == 2 && out->dim(0) == call.tokens)
      write(call.phase + ".logits_all", *out);
  }
}

Status LayerDumper::atBoundary(const CallInfo &call, int64_t layer, HostTensor &stream,
                               HostTensor &) {
  write(call.phase + ".layers." + std::to_string(layer) + ".out", toFloat32(stream));
  return status_;
}

Status LayerDumper::dumpCaches() {
  int64_t position = session_.position();
  for (size_t i = 0; i < plan_.states.size(); ++i) {
    const StateBuffer &state = plan_.states[i];
    const HostTensor &bytes = session_.state(int64_t(i));
    std::string base = "prefill.cache." + std::to_string(state.layer) + ".";
    std::string name;
    int64_t rows = 0;
    switch (state.kind) {
    case StateKind::WindowRing: name = "window_kv"; rows = state.capacity; break;
    case StateKind::MainKv: name = "compress_kv"; break;
    case StateKind::IndexKeys: name = "index_k"; break;
    default: continue;
    }
    if (state.kind != StateKind::WindowRing) {
      if (state.ratio <= 0)
        return internalError(state.name + ": compress ratio " + std::to_string(state.ratio) +
                             ", expected a positive ratio");
      rows = position / state.ratio;
    }
    // At most `capacity` records exist (a ring or a full cache), and every
    // record read must lie inside the state's bytes.
    rows = std::clamp<int64_t>(rows, 0, state.capacity);
    numerics::KvPageLayout layout = pageLayoutOf(state);
    if (!layout.isValid())
      return internalError(state.name + ": invalid record layout");
    Expected<int64_t> expectedBytes = stateBytes(state);
    if (!expectedBytes)
      return expectedBytes.status();
    if (!bytes.hasStorage() || int64_t(bytes.byteSize()) < *expectedBytes)
      return internalError(state.name + ": state holds " + std::to_string(bytes.byteSize()) +
                           " bytes, expected " + std::to_string(*expectedBytes));
    HostTensor out;
    if (Status s = out.resetChecked(DType::F32, {rows, layout.format.valuesPerEntry}); !s)
      return s.withContext(state.name + ": ");
    const uint8_t *pool = bytes.data<uint8_t>();
    for (int64_t r = 0; r < rows; ++r)
      if (!numerics::decodeKvRecord(layout.format, pool + layout.tokenDataOffset(r),
                                    pool + layout.tokenScaleOffset(r),
                                    out.data<float>() + r * layout.format.valuesPerEntry))
        return internalError(state.name + ": invalid record layout");
    write(base + name, out);
  }
  return status_;
}

} // namespace dsc::runtime
