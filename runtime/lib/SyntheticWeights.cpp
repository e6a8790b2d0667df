//===- SyntheticWeights.cpp - Engine::createSynthetic (benchmark weights) ---===//
//
// Deterministic random weights for every tensor binding of a plan, for
// benchmarks of models whose checkpoint is absent (tools/dsc-bench). Each byte
// follows from a counter-based hash of (seed, tensor index, element index), so
// the result does not depend on how the tensor is cut into chunks or threads.
// A weight is generated in host chunks of SyntheticWeightOptions::chunkBytes
// (split across threads) and handed to Backend::uploadChunk; device backends
// hold it only on the device (HostTensor::describe), so a 50 GB model needs
// one chunk of host memory. The value ranges keep the model finite
// (docs/bench.md).
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Backend.h"
#include "dsc/runtime/Engine.h"
#include "dsc/runtime/MemoryPlan.h"
#include "dsc/runtime/PlanFile.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <thread>

namespace dsc::runtime {
namespace {

uint64_t mix64(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  x ^= x >> 31;
  return x;
}

/// The 64 random bits of element (or 8-byte group) `counter` of tensor `tensor`.
uint64_t hashAt(uint64_t seed, uint64_t tensor, uint64_t counter) {
  return mix64(mix64(seed ^ 0x9e3779b97f4a7c15ull) ^ mix64((tensor + 1) * 0xd1b54a32d192ed03ull) ^
               (counter * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull));
}

/// Uniform in [-1, 1).
float unitFloat(uint64_t bits) { return float(int64_t(bits >> 40) - (int64_t(1) << 23)) / float(1 << 23); }

uint16_t toBf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7fff + ((u >> 16) & 1); // round to nearest even (finite inputs only)
  return uint16_t(u >> 16);
}

enum class Fill { Fp8, Ue8m0, AnyByte, Bf16Norm, Bf16Small, F32Norm, F32Small, F32Scale, ExpertId, Zero };

bool isNorm(const std::string &name) { return name.find("norm") != std::string::npos; }

Fill fillFor(const TensorBinding &b) {
  switch (b.dtype) {
  case DType::F8_E4M3:
    return Fill::Fp8;
  case DType::F8_E8M0:
    return Fill::Ue8m0;
  case DType::U8:
  case DType::I8:
    if (b.kind == TensorKind::Scale)
      return Fill::Ue8m0;
    return Fill::AnyByte; // packed FP4 (two E2M1 nibbles): every code is finite
  case DType::BF16:
    return isNorm(b.name) ? Fill::Bf16Norm : Fill::Bf16Small;
  case DType::F32:
    if (b.kind == TensorKind::Scale)
      return Fill::F32Scale;
    return isNorm(b.name) ? Fill::F32Norm : Fill::F32Small;
  case DType::I32:
  case DType::I64:
  case DType::I16:
    return Fill::ExpertId; // hash-routing tables (token id -> expert ids)
  default:
    return Fill::Zero;
  }
}

/// Writes elements [first, first + count) of tensor `tensor` into `out`.
void fillRange(Fill fill, size_t elementSize, uint64_t seed, uint64_t tensor, uint64_t experts,
               uint64_t first, uint64_t count, std::byte *out) {
  if (elementSize == 1) {
    uint64_t word = 0;
    for (uint64_t i = first; i < first + count; ++i) {
      if (i == first || (i & 7) == 0)
        word = hashAt(seed, tensor, i >> 3);
      uint8_t r = uint8_t(word >> (8 * (i & 7)));
      uint8_t v = 0;
      switch (fill) {
      case Fill::Fp8: // sign, exponent field 5..8 (2^-2..2^1), any mantissa: never 0x7f/0xff
        v = uint8_t((r & 0x80) | ((5 + ((r >> 3) & 3)) << 3) | (r & 7));
        break;
      case Fill::Ue8m0: // 2^-9 .. 2^-6
        v = uint8_t(118 + (r & 3));
        break;
      case Fill::AnyByte:
        v = r;
        break;
      case Fill::ExpertId:
        v = uint8_t(experts ? r % experts : 0);
        break;
      default:
        v = 0;
        break;
      }
      out[i - first] = std::byte(v);
    }
    return;
  }
  for (uint64_t i = first; i < first + count; ++i) {
    uint64_t bits = hashAt(seed, tensor, i);
    std::byte *p = out + (i - first) * elementSize;
    float u = unitFloat(bits);
    switch (fill) {
    case Fill::Bf16Norm:
    case Fill::Bf16Small: {
      uint16_t h = toBf16(fill == Fill::Bf16Norm ? 1.0f + u / 16 : 0.05f * u);
      std::memcpy(p, &h, 2);
      break;
    }
    case Fill::F32Norm:
    case Fill::F32Small:
    case Fill::F32Scale: {
      float f = fill == Fill::F32Norm    ? 1.0f + u / 16
                : fill == Fill::F32Small ? 0.05f * u
                                         : std::ldexp(1.0f, -6 - int(bits & 3));
      std::memcpy(p, &f, 4);
      break;
    }
    case Fill::ExpertId: {
      uint64_t e = experts ? (bits >> 8) % experts : 0;
      if (elementSize == 8)
        std::memcpy(p, &e, 8);
      else if (elementSize == 4) {
        int32_t e32 = int32_t(e);
        std::memcpy(p, &e32, 4);
      } else {
        int16_t e16 = int16_t(e);
        std::memcpy(p, &e16, 2);
      }
      break;
    }
    default:
      std::memset(p, 0, elementSize);
      break;
    }
  }
}

} // namespace

Expected<std::unique_ptr<Engine>> Engine::createSynthetic(Plan plan,
                                                          SyntheticWeightOptions synthetic,
                                                          EngineOptions options) {
  Expected<std::unique_ptr<Backend>> made = makeBackend(options);
  if (!made) // Unavailable only for a missing driver or GPU
    return made.status();
  return createSynthetic(std::move(plan), std::move(synthetic), std::move(made.value()),
                         std::move(options));
}

Expected<std::unique_ptr<Engine>> Engine::createSynthetic(Plan plan,
                                                          SyntheticWeightOptions synthetic,
                                                          std::unique_ptr<Backend> given,
                                                          EngineOptions options) {
  if (!given)
    return invalidArgument("createSynthetic: no backend");
  if (Status status = verifyPlan(plan); !status)
    return status;
  if (Status status = checkSessionMemory(plan, options.sessionMemoryLimit); !status)
    return status;
  std::unique_ptr<Engine> engine(new Engine());
  engine->backend_ = std::move(given);
  engine->options_ = options;
  if (Status status = engine->backend_->check(plan); !status)
    return status;

  // Routed expert count for integer (routing-table) tensors.
  uint64_t experts = 0;
  for (const TensorBinding &b : plan.tensors)
    experts = std::max<uint64_t>(experts, uint64_t(std::max<int64_t>(b.experts, 0)));

  uint64_t total = 0;
  for (const TensorBinding &b : plan.tensors) {
    std::optional<uint64_t> bytes = HostTensor::checkedByteSize(b.dtype, b.shape);
    if (!bytes || *bytes > HostTensor::kMaxBytes || __builtin_add_overflow(total, *bytes, &total))
      return invalidArgument("tensor '" + b.name + "': shape " + HostTensor::shapeString(b.shape) +
                             " is negative, overflows or exceeds " +
                             std::to_string(HostTensor::kMaxBytes) + " bytes");
  }
  unsigned threads = synthetic.threads ? synthetic.threads
                                       : std::max(1u, std::thread::hardware_concurrency());
  size_t chunkBytes = std::max<size_t>(synthetic.chunkBytes, 1 << 16);
  bool device = engine->backend_->deviceResident();
  std::vector<std::byte> chunk;
  uint64_t done = 0;
  Backend &backend = *engine->backend_;
  engine->weights_.resize(plan.tensors.size());
  for (size_t t = 0; t < plan.tensors.size(); ++t) {
    const TensorBinding &binding = plan.tensors[t];
    HostTensor &tensor = engine->weights_[t];
    if (device) {
      if (Status s = tensor.describeChecked(binding.dtype, binding.shape); !s)
        return s.withContext("tensor '" + binding.name + "': ");
      // Allocates the weight's device copy (a described tensor has no bytes).
      if (Status s = backend.toDevice(nullptr, TensorRef::weight(int64_t(t)), tensor); !s)
        return s.withContext("allocating '" + binding.name + "': ");
    } else {
      if (Status s = tensor.resetChecked(binding.dtype, binding.shape); !s)
        return s.withContext("tensor '" + binding.name + "': ");
    }
    Fill fill = fillFor(binding);
    size_t elementSize = dtypeSize(binding.dtype);
    uint64_t elements = uint64_t(tensor.numElements());
    uint64_t perChunk = std::max<uint64_t>(1, chunkBytes / elementSize);
    for (uint64_t first = 0; first < elements; first += perChunk) {
      uint64_t count = std::min(perChunk, elements - first);
      std::byte *out = nullptr;
      if (device) {
        chunk.resize(count * elementSize);
        out = chunk.data();
      } else {
        out = tensor.bytes() + first * elementSize;
      }
      unsigned workers = unsigned(std::min<uint64_t>(threads, std::max<uint64_t>(1, count >> 16)));
      uint64_t per = (count + workers - 1) / workers;
      per = (per + 7) & ~uint64_t(7);
      std::vector<std::thread> pool;
      for (unsigned w = 1; w < workers; ++w) {
        uint64_t begin = std::min(count, per * w), end = std::min(count, per * (w + 1));
        if (begin < end)
          pool.emplace_back(fillRange, fill, elementSize, synthetic.seed, uint64_t(t), experts,
                            first + begin, end - begin, out + begin * elementSize);
      }
      fillRange(fill, elementSize, synthetic.seed, t, experts, first, std::min(count, per), out);
      for (std::thread &th : pool)
        th.join();
      if (device)
        if (Status s = backend.uploadChunk(TensorRef::weight(int64_t(t)), tensor, first * elementSize,
                                           out, count * elementSize);
            !s)
          return s.withContext("uploading '" + binding.name + "': ");
    }
    done += tensor.byteSize();
    if (synthetic.progress)
      synthetic.progress(binding.name, done, total);
  }
  engine->plan_ = std::move(plan);
  return engine;
}

} // namespace dsc::runtime
