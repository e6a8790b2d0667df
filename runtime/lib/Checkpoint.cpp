//===- Checkpoint.cpp - A model checkpoint: one or many safetensors files -===//
//
// Resolves a checkpoint path (file, directory, index), opens every shard,
// and binds plan tensors to checkpoint tensors: presence, dtype and shape
// checks, then gathering (stacked experts concatenated, the fp8 alternative
// dequantised). Rules and messages are documented in Checkpoint.h.
//===----------------------------------------------------------------------===//
#include "dsc/runtime/Checkpoint.h"

#include "dsc/runtime/InputFile.h"

#include "dsc/numerics/Quantize.h"
#include "dsc/numerics/ScalarCodecs.h"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cstring>
#include <filesystem>

namespace dsc::runtime {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; gather() copies it as is");

namespace {

namespace fs = std::filesystem;
/// The largest sharded-checkpoint index read (the released one is ~100 KB).
constexpr uint64_t kMaxIndexBytes = 64ull << 20;

std::string shapeString(std::span<const int64_t> shape) {
  return fmt::format("[{}]", fmt::join(shape, ", "));
}

int64_t ceilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

/// Whether gather() can turn a tensor stored as `from` into `to`.
bool canConvert(DType from, DType to) {
  if (from == to)
    return true;
  if (from == DType::F8_E4M3)
    return to == DType::BF16 || to == DType::F32;
  return from == DType::BF16 && to == DType::F32;
}

/// Whether the binding is stacked and its per-expert shape.
std::span<const int64_t> pieceShape(const TensorBinding &b) {
  std::span<const int64_t> s(b.shape);
  return b.experts > 0 && !s.empty() ? s.subspan(1) : s;
}

uint64_t elementsOf(std::span<const int64_t> shape) {
  uint64_t n = 1;
  for (int64_t d : shape)
    n *= static_cast<uint64_t>(d > 0 ? d : 0);
  return n;
}

/// A binding check() can resolve at all: a stacked one has "{e}" in its
/// name and a shape that starts with its expert count.
Status checkStacking(const TensorBinding &b) {
  if (b.experts < 0 || (b.experts > 0 && (b.shape.empty() || b.shape[0] != b.experts ||
                                          b.name.find("{e}") == std::string::npos)))
    return invalidArgument(fmt::format(
        "binding '{}': stacked over {} experts needs '{{e}}' in the name and a shape "
        "starting with {}, has {}",
        b.name, b.experts, b.experts, shapeString(b.shape)));
  return Status::ok();
}

} // namespace

std::string Checkpoint::expertName(std::string_view pattern, int64_t e) {
  std::string out(pattern);
  const size_t at = out.find("{e}");
  if (at != std::string::npos)
    out.replace(at, 3, std::to_string(e));
  return out;
}

std::string Checkpoint::scaleName(std::string_view weightName) {
  constexpr std::string_view kWeight = ".weight";
  if (weightName.size() >= kWeight.size() &&
      weightName.substr(weightName.size() - kWeight.size()) == kWeight)
    return std::string(weightName.substr(0, weightName.size() - kWeight.size())) + ".scale";
  return std::string(weightName) + ".scale";
}

//===----------------------------------------------------------------------===//
// Opening
//===----------------------------------------------------------------------===//

Expected<Checkpoint> Checkpoint::open(const std::string &path) {
  std::error_code ec;
  const fs::file_status st = fs::status(path, ec);
  if (ec || !fs::exists(st))
    return notFound(path + ": no such checkpoint file or directory");

  std::string target = path;
  bool index = false;
  if (fs::is_directory(st)) {
    const fs::path dir(path);
    if (fs::exists(dir / kIndexFileName, ec)) {
      target = (dir / kIndexFileName).string();
      index = true;
    } else if (fs::exists(dir / kSingleFileName, ec)) {
      target = (dir / kSingleFileName).string();
    } else {
      return notFound(fmt::format("{}: the directory holds neither {} nor {}", path,
                                  kIndexFileName, kSingleFileName));
    }
  } else {
    index = path.size() >= 5 && path.compare(path.size() - 5, 5, ".json") == 0;
  }

  Checkpoint ckpt;
  ckpt.path_ = target;
  ckpt.sharded_ = index;
  if (!index) {
    Expected<SafetensorsFile> file = SafetensorsFile::open(target);
    if (!file)
      return file.status();
    ckpt.files_.push_back(std::move(*file));
    return ckpt;
  }

  // Sharded: read and validate the index.
  const std::string where = target + ": ";
  // A regular file of bounded size (a FIFO or /dev/zero is refused, not read).
  Expected<std::string> text = readRegularFile(target, "index file", kMaxIndexBytes);
  if (!text)
    return text.status();
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(*text);
  } catch (const nlohmann::json::exception &e) {
    return dataLoss(where + "index is not valid JSON: " + e.what());
  }
  if (!json.is_object() || !json.contains("weight_map") || !json["weight_map"].is_object())
    return dataLoss(where + "index has no \"weight_map\" object");

  std::vector<std::string> shardNames;
  std::map<std::string, size_t, std::less<>> shardOf;   // shard name -> index
  std::vector<std::string> firstTensor;                 // per shard, for messages
  std::vector<size_t> tensorCount;
  for (const auto &[name, value] : json["weight_map"].items()) {
    if (!value.is_string())
      return dataLoss(fmt::format("{}weight_map entry for tensor '{}' is not a string", where,
                                  name));
    const std::string &shard = value.get_ref<const std::string &>();
    const fs::path rel(shard);
    bool escapes = shard.empty() || rel.is_absolute();
    for (const fs::path &part : rel)
      escapes |= part == "..";
    if (escapes)
      return dataLoss(fmt::format(
          "{}weight_map puts tensor '{}' in shard '{}', which is not a relative path inside "
          "the checkpoint directory",
          where, name, shard));
    auto [it, fresh] = shardOf.emplace(shard, shardNames.size());
    if (fresh) {
      shardNames.push_back(shard);
      firstTensor.push_back(name);
      tensorCount.push_back(0);
    }
    ++tensorCount[it->second];
    ckpt.weightMap_.emplace(name, it->second);
  }

  const fs::path dir = fs::path(target).parent_path();
  for (size_t s = 0; s < shardNames.size(); ++s) {
    Expected<SafetensorsFile> file = SafetensorsFile::open((dir / shardNames[s]).string());
    if (!file) {
      const std::string others =
          tensorCount[s] > 1 ? fmt::format(" and {} other tensors", tensorCount[s] - 1) : "";
      return Status(file.status().code(),
                    fmt::format("{}shard '{}' (holding tensor '{}'{}) cannot be opened: {}",
                                where, shardNames[s], firstTensor[s], others,
                                file.status().message()));
    }
    ckpt.files_.push_back(std::move(*file));
  }
  for (const auto &[name, s] : ckpt.weightMap_)
    if (!ckpt.files_[s].find(name))
      return dataLoss(fmt::format(
          "{}weight_map puts tensor '{}' in shard '{}', which does not hold it", where, name,
          shardNames[s]));
  return ckpt;
}

size_t Checkpoint::numTensors() const {
  if (sharded_)
    return weightMap_.size();
  return files_.empty() ? 0 : files_.front().tensors().size();
}

std::vector<std::string> Checkpoint::tensorNames() const {
  std::vector<std::string> names;
  if (sharded_) {
    for (const auto &[name, s] : weightMap_)
      names.push_back(name);
  } else if (!files_.empty()) {
    for (const TensorView &t : files_.front().tensors())
      names.push_back(t.name);
    std::sort(names.begin(), names.end());
  }
  return names;
}

const SafetensorsFile *Checkpoint::fileOf(std::string_view name) const {
  if (sharded_) {
    auto it = weightMap_.find(name);
    return it == weightMap_.end() ? nullptr : &files_[it->second];
  }
  if (files_.empty() || !files_.front().find(name))
    return nullptr;
  return &files_.front();
}

const TensorView *Checkpoint::find(std::string_view name) const {
  const SafetensorsFile *file = fileOf(name);
  return file ? file->find(name) : nullptr;
}

//===----------------------------------------------------------------------===//
// Binding
//===----------------------------------------------------------------------===//

Status Checkpoint::notFoundStatus(const std::string &what) const {
  if (sharded_)
    return notFound(fmt::format("{}: {} is not in the weight_map", path_, what));
  return notFound(fmt::format("{}: {} is missing", path_, what));
}

Status Checkpoint::resolve(const TensorBinding &b, int64_t expert, Piece &piece) const {
  const bool stacked = b.experts > 0;
  piece.name = stacked ? expertName(b.name, expert) : b.name;
  const std::string label =
      stacked ? fmt::format("tensor '{}' (expert {} of '{}')", piece.name, expert, b.name)
              : fmt::format("tensor '{}'", piece.name);
  const SafetensorsFile *file = fileOf(piece.name);
  piece.view = file ? file->find(piece.name) : nullptr;
  piece.scale = nullptr;
  if (!piece.view)
    return notFoundStatus(label);
  const std::string where = file->path() + ": " + label;
  const TensorView &v = *piece.view;

  const bool alternative = b.alternativeDType && v.dtype == *b.alternativeDType;
  if (v.dtype != b.dtype && !alternative)
    return failedPrecondition(fmt::format(
        "{} has dtype {}, the plan expects {}{}", where, dtypeName(v.dtype),
        dtypeName(b.dtype),
        b.alternativeDType ? fmt::format(" (or {})", dtypeName(*b.alternativeDType)) : ""));
  const std::span<const int64_t> want = pieceShape(b);
  if (!std::equal(v.shape.begin(), v.shape.end(), want.begin(), want.end()))
    return failedPrecondition(fmt::format("{} has shape {}, the plan expects {}{}", where,
                                          shapeString(v.shape), shapeString(want),
                                          stacked ? " (per expert)" : ""));
  if (v.dtype == b.dtype)
    return Status::ok();

  // Stored in the alternative dtype: gather() converts.
  if (!canConvert(v.dtype, b.dtype))
    return failedPrecondition(fmt::format("{} is stored as {}; the loader cannot convert {} to {}",
                                          where, dtypeName(v.dtype), dtypeName(v.dtype),
                                          dtypeName(b.dtype)));
  if (v.dtype != DType::F8_E4M3)
    return Status::ok();
  if (v.shape.size() != 2)
    return failedPrecondition(fmt::format(
        "{} is stored as F8_E4M3 with shape {}; only 2-D [N, K] weights can be dequantised",
        where, shapeString(v.shape)));
  const std::string scale = scaleName(piece.name);
  const SafetensorsFile *scaleFile = fileOf(scale);
  piece.scale = scaleFile ? scaleFile->find(scale) : nullptr;
  if (!piece.scale)
    return notFound(fmt::format("{} is stored as F8_E4M3 but its scale tensor '{}' is missing",
                                where, scale));
  const std::vector<int64_t> wantScale = {ceilDiv(v.shape[0], numerics::kFp8WeightBlock),
                                          ceilDiv(v.shape[1], numerics::kFp8WeightBlock)};
  const std::string scaleWhere = scaleFile->path() + ": scale tensor '" + scale + "'";
  if (piece.scale->dtype != DType::F8_E8M0)
    return failedPrecondition(fmt::format("{} has dtype {}, expected F8_E8M0", scaleWhere,
                                          dtypeName(piece.scale->dtype)));
  if (piece.scale->shape != wantScale)
    return failedPrecondition(fmt::format(
        "{} has shape {}, expected {} (32x32 blocks of the {} weight)", scaleWhere,
        shapeString(piece.scale->shape), shapeString(wantScale), shapeString(v.shape)));
  return Status::ok();
}

Status Checkpoint::check(const TensorBinding &b) const {
  if (Status s = checkStacking(b); !s)
    return s;
  Piece piece;
  for (int64_t e = 0; e < std::max<int64_t>(b.experts, 1); ++e)
    if (Status s = resolve(b, e, piece); !s)
      return s;
  return Status::ok();
}

Status Checkpoint::check(const std::vector<TensorBinding> &bindings) const {
  constexpr size_t kMaxListed = 20;
  std::vector<Status> problems;
  Piece piece;
  for (const TensorBinding &b : bindings) {
    if (Status s = checkStacking(b); !s) {
      problems.push_back(s);
      continue;
    }
    for (int64_t e = 0; e < std::max<int64_t>(b.experts, 1); ++e)
      if (Status s = resolve(b, e, piece); !s)
        problems.push_back(s);
  }
  if (problems.empty())
    return Status::ok();
  if (problems.size() == 1)
    return problems.front();
  std::string message = fmt::format("the checkpoint does not match the plan ({} problems):",
                                    problems.size());
  for (size_t i = 0; i < problems.size() && i < kMaxListed; ++i)
    message += "\n  " + problems[i].message();
  if (problems.size() > kMaxListed)
    message += fmt::format("\n  ... and {} more", problems.size() - kMaxListed);
  return Status(problems.front().code(), message);
}

uint64_t Checkpoint::gatheredBytes(const TensorBinding &b) {
  return elementsOf(b.shape) * dtypeSize(b.dtype);
}

Status Checkpoint::gatherInto(const TensorBinding &b, std::span<std::byte> out) const {
  if (Status s = check(b); !s)
    return s;
  const uint64_t total = gatheredBytes(b);
  if (out.size() != total)
    return invalidArgument(fmt::format("binding '{}': gather needs {} bytes, the buffer has {}",
                                       b.name, total, out.size()));
  const int64_t pieces = std::max<int64_t>(b.experts, 1);
  const uint64_t pieceBytes = total / static_cast<uint64_t>(pieces);
  Piece piece;
  for (int64_t e = 0; e < pieces; ++e) {
    if (Status s = resolve(b, e, piece); !s)
      return s;
    std::byte *dst = out.data() + static_cast<uint64_t>(e) * pieceBytes;
    const TensorView &v = *piece.view;
    if (pieceBytes == 0)
      continue;
    if (v.dtype == b.dtype) {
      std::memcpy(dst, v.bytes.data(), pieceBytes);
      continue;
    }
    const auto *src = reinterpret_cast<const uint8_t *>(v.bytes.data());
    if (v.dtype == DType::F8_E4M3) {
      const int64_t N = v.shape[0], K = v.shape[1];
      const auto *scales = reinterpret_cast<const uint8_t *>(piece.scale->bytes.data());
      for (int64_t n = 0; n < N; ++n)
        for (int64_t k = 0; k < K; ++k) {
          const float x = numerics::fp8WeightAt(src, scales, K, n, k);
          const size_t i = static_cast<size_t>(n * K + k);
          if (b.dtype == DType::BF16) {
            const uint16_t bits = numerics::bf16FromFloat(x);
            std::memcpy(dst + 2 * i, &bits, 2);
          } else {
            std::memcpy(dst + 4 * i, &x, 4);
          }
        }
    } else { // BF16 -> F32
      const uint64_t n = pieceBytes / 4;
      for (uint64_t i = 0; i < n; ++i) {
        uint16_t bits;
        std::memcpy(&bits, src + 2 * i, 2);
        const float x = numerics::bf16ToFloat(bits);
        std::memcpy(dst + 4 * i, &x, 4);
      }
    }
  }
  return Status::ok();
}

Expected<std::vector<std::byte>> Checkpoint::gather(const TensorBinding &b) const {
  if (Status s = check(b); !s)
    return s;
  std::vector<std::byte> out(gatheredBytes(b));
  if (Status s = gatherInto(b, out); !s)
    return s;
  return out;
}

} // namespace dsc::runtime
