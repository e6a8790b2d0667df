//===- Checkpoint.h - A model checkpoint: one or many safetensors files ---===//
//
// A checkpoint is where a plan's TensorBindings (Plan.h) get their
// bytes. Accepted forms, all through Checkpoint::open(path):
//   - one `.safetensors` file;
//   - a directory holding `model.safetensors.index.json` (the Hugging Face
//     sharded layout: {"metadata": {...}, "weight_map": {name: shard file}},
//     shard files relative to the directory), else a single
//     `model.safetensors`;
//   - the path of an index file itself (any path ending in `.json`).
// Every shard the index names is opened (memory-mapped, header validated by
// SafetensorsFile) when the checkpoint opens, and every weight_map entry must
// be present in its shard: a missing shard or a wrong entry fails open() with
// a message naming the shard and a tensor it should hold. Tensors a shard
// holds but the index does not list are ignored.
//
// Binding rules (check() and gather()):
//   - a plain binding names one tensor whose dtype equals the binding's dtype
//     (or its alternativeDType) and whose shape equals the binding's shape;
//   - a stacked binding (experts > 0, "{e}" in the name) names the tensors
//     for e = 0 .. experts-1; each has the binding's shape without its leading
//     dimension; gather() concatenates them in e order;
//   - a tensor stored in the alternative dtype is converted to the binding's
//     dtype by gather(). Conversions: F8_E4M3 with its UE8M0 32x32 block
//     scales (the sibling tensor `<X>.scale` of `<X>.weight`, dtype F8_E8M0,
//     shape [ceil(N/32), ceil(K/32)]) -> BF16 or F32, as the released
//     `attn.wo_a` (reference-spec §4; dequantised exactly in fp32, then one
//     round-to-nearest-even to bf16); BF16 -> F32. Other pairs are rejected
//     by check().
// Tensors of features a plan does not enable (vision, MTP stages, Engram, ...)
// are simply not bound, so their presence or absence in the checkpoint does
// not matter.
//
// Error messages name the file (the shard holding the tensor, or the index
// for a tensor the index lacks), the tensor, and both sides, e.g.
//   "model.safetensors: tensor 'layers.3.attn.wq_a.weight' has shape
//    [64, 128], the plan expects [1280, 5120]".
// All const member functions are thread-safe (no mutable state).
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_CHECKPOINT_H
#define DSC_RUNTIME_CHECKPOINT_H

#include "dsc/runtime/Plan.h"
#include "dsc/runtime/Safetensors.h"
#include "dsc/runtime/Status.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace dsc::runtime {

class Checkpoint {
public:
  /// File name of the sharded index inside a checkpoint directory.
  static constexpr const char *kIndexFileName = "model.safetensors.index.json";
  /// File name of a single-file checkpoint inside a directory.
  static constexpr const char *kSingleFileName = "model.safetensors";

  /// Opens a checkpoint file, directory or index (see the file comment).
  static Expected<Checkpoint> open(const std::string &path);

  Checkpoint(Checkpoint &&) noexcept = default;
  Checkpoint &operator=(Checkpoint &&) noexcept = default;

  /// The resolved path: the .safetensors file or the index file.
  const std::string &path() const { return path_; }
  bool isSharded() const { return sharded_; }
  /// The opened files (one for a single-file checkpoint).
  const std::vector<SafetensorsFile> &files() const { return files_; }
  /// Number of tensors reachable through find().
  size_t numTensors() const;
  /// Sorted names of the tensors reachable through find().
  std::vector<std::string> tensorNames() const;

  /// The tensor `name`, or nullptr. Valid while the checkpoint lives.
  const TensorView *find(std::string_view name) const;
  /// The file holding `name`, or nullptr.
  const SafetensorsFile *fileOf(std::string_view name) const;

  /// Checks one binding (see "Binding rules"); FailedPrecondition for a
  /// dtype/shape mismatch, NotFound for a missing tensor.
  Status check(const TensorBinding &binding) const;
  /// Checks every binding and reports every problem found (one per line, the
  /// first 20, then a count); the code is that of the first problem.
  Status check(const std::vector<TensorBinding> &bindings) const;

  /// Bytes gather() returns: product(shape) * dtypeSize(dtype).
  static uint64_t gatheredBytes(const TensorBinding &binding);
  /// The binding's tensor(s) as one contiguous buffer in the binding's dtype
  /// and shape (little-endian, row-major; experts concatenated in e order;
  /// converted from the alternative dtype where stored so). Checks first.
  Expected<std::vector<std::byte>> gather(const TensorBinding &binding) const;
  /// gather() into caller memory of exactly gatheredBytes(binding) bytes.
  Status gatherInto(const TensorBinding &binding, std::span<std::byte> out) const;

  /// "{e}" in `pattern` replaced by `e`.
  static std::string expertName(std::string_view pattern, int64_t e);
  /// "<X>.weight" -> "<X>.scale"; other names get ".scale" appended.
  static std::string scaleName(std::string_view weightName);

private:
  Checkpoint() = default;
  /// One tensor of a binding (the whole binding, or expert e).
  struct Piece {
    std::string name;
    const TensorView *view = nullptr;
    const TensorView *scale = nullptr; ///< F8_E4M3 stored: its block scales
  };
  Status resolve(const TensorBinding &binding, int64_t expert, Piece &piece) const;
  Status notFoundStatus(const std::string &what) const;

  std::string path_;
  bool sharded_ = false;
  std::vector<SafetensorsFile> files_;
  /// Sharded: tensor name -> index into files_.
  std::map<std::string, size_t, std::less<>> weightMap_;
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_CHECKPOINT_H
