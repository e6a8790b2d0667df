//===- HostTensor.h - An owning, contiguous host tensor --------------------===//
//
// Row-major storage with a dtype and a shape; 64-byte aligned so packed
// records and vector loads are safe. bf16 is stored as uint16_t bit patterns,
// fp8 / ue8m0 / packed fp4 as uint8_t.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_HOSTTENSOR_H
#define DSC_RUNTIME_HOSTTENSOR_H

#include "dsc/runtime/Safetensors.h" // DType, dtypeSize

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace dsc::runtime {

class HostTensor {
public:
  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape) { reset(dtype, std::move(shape)); }

  /// Re-shapes and zero-fills (reallocates only when growing).
  void reset(DType dtype, std::vector<int64_t> shape) {
    dtype_ = dtype;
    shape_ = std::move(shape);
    size_t bytes = size_t(numElements()) * dtypeSize(dtype_);
    if (bytes > capacity_) {
      size_t words = (bytes + 63) / 64;
      storage_.reset(new Block[words]);
      capacity_ = words * 64;
    }
    bytes_ = bytes;
    if (bytes_)
      std::memset(storage_.get(), 0, bytes_);
  }

  /// Sets dtype and shape without host storage: byteSize() is the described
  /// size and bytes() is null. For weights that live only on a device backend
  /// (Engine::createSynthetic streams them with Backend::uploadChunk).
  void describe(DType dtype, std::vector<int64_t> shape) {
    dtype_ = dtype;
    shape_ = std::move(shape);
    storage_.reset();
    capacity_ = 0;
    bytes_ = size_t(numElements()) * dtypeSize(dtype_);
  }
  /// False for a described tensor (no host copy of its bytes).
  bool hasStorage() const { return bytes_ == 0 || storage_ != nullptr; }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  int64_t dim(size_t i) const { return shape_.at(i); }
  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape_)
      n *= d;
    return n;
  }
  size_t byteSize() const { return bytes_; }

  std::byte *bytes() { return reinterpret_cast<std::byte *>(storage_.get()); }
  const std::byte *bytes() const { return reinterpret_cast<const std::byte *>(storage_.get()); }
  template <typename T> T *data() { return reinterpret_cast<T *>(storage_.get()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(storage_.get()); }
  template <typename T> std::span<T> span() { return {data<T>(), bytes_ / sizeof(T)}; }
  template <typename T> std::span<const T> span() const { return {data<T>(), bytes_ / sizeof(T)}; }

private:
  struct alignas(64) Block { std::byte b[64]; };
  DType dtype_ = DType::U8;
  std::vector<int64_t> shape_;
  std::unique_ptr<Block[]> storage_;
  size_t bytes_ = 0, capacity_ = 0;
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_HOSTTENSOR_H
