//===- Safetensors.h - Memory-mapped safetensors files --------------------===//
//
// Reads the safetensors format (8-byte little-endian header length, a JSON
// header mapping tensor names to {dtype, shape, data_offsets}, then the raw
// data) through a read-only mmap. The header is validated completely on
// open: known dtypes, shapes whose byte size equals the offsets, offsets in
// bounds, sorted and non-overlapping, no duplicate names. Zero-size tensors
// are allowed. Every error names the file and the tensor.
//
// The dtype strings are the safetensors ones: BF16, F16, F32, F64, I8, U8,
// I16, I32, I64, BOOL, F8_E4M3, F8_E8M0 (the checkpoint's FP4 experts are I8).
//
// Rules enforced (each violation is a DataLoss/NotFound Status whose message
// starts with the file path and, where one is involved, names the tensor):
//   - the file holds at least the 8-byte length; the header length is >= 2,
//     <= 100,000,000 (the safetensors limit) and fits in the file;
//   - the header holds no NUL byte (the format pads it with spaces; the JSON
//     parser would stop at a NUL and leave the rest unchecked);
//   - the header is a JSON object; every entry but `__metadata__` is an object
//     with exactly `dtype`, `shape`, `data_offsets`; `__metadata__` maps
//     strings to strings; no name appears twice;
//   - shape entries are non-negative integers; data_offsets is [begin, end]
//     with begin <= end <= size of the data section;
//   - product(shape) * dtypeSize == end - begin (no overflow);
//   - byte ranges of tensors do not overlap (zero-size tensors never overlap).
// Gaps between tensors are tolerated. Typed access (`as<T>()`) needs the data
// to be aligned for T; files written by the safetensors library pad the
// header to 8 bytes, which makes every tensor aligned.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_SAFETENSORS_H
#define DSC_RUNTIME_SAFETENSORS_H

#include "dsc/runtime/Status.h"

#include <cassert>
#include <cstddef>
#include <optional>
#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "dsc/runtime/DType.h"

namespace dsc::runtime {

/// A tensor inside a mapped file; valid while the file object lives.
struct TensorView {
  std::string name;
  DType dtype = DType::U8;
  std::vector<int64_t> shape;
  std::span<const std::byte> bytes;
  /// [begin, end) relative to the start of the data section (after the header).
  uint64_t dataBegin = 0, dataEnd = 0;

  int64_t numElements() const;
  /// Typed access; the caller checks dtype first (asserts the element size).
  template <typename T> std::span<const T> as() const {
    assert(sizeof(T) == dtypeSize(dtype));
    assert(reinterpret_cast<uintptr_t>(bytes.data()) % alignof(T) == 0);
    return {reinterpret_cast<const T *>(bytes.data()), bytes.size() / sizeof(T)};
  }
};

/// One opened safetensors file. Move-only; unmaps on destruction.
class SafetensorsFile {
public:
  static Expected<SafetensorsFile> open(const std::string &path);

  SafetensorsFile(SafetensorsFile &&) noexcept;
  SafetensorsFile &operator=(SafetensorsFile &&) noexcept;
  ~SafetensorsFile();

  const std::string &path() const { return path_; }
  /// Size of the whole file in bytes.
  size_t fileSize() const { return mappingSize_; }
  /// Tensors in the order of their bytes in the file (data_offsets order;
  /// zero-size tensors by header order among equal offsets).
  const std::vector<TensorView> &tensors() const { return tensors_; }
  /// nullptr if absent.
  const TensorView *find(std::string_view name) const;
  /// The `__metadata__` string map of the header (may be empty).
  const std::map<std::string, std::string> &metadata() const { return metadata_; }

private:
  SafetensorsFile() = default;
  std::string path_;
  void *mapping_ = nullptr;
  size_t mappingSize_ = 0;
  std::vector<TensorView> tensors_;
  std::map<std::string, size_t, std::less<>> index_;
  std::map<std::string, std::string> metadata_;
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_SAFETENSORS_H
