//===- HostTensor.h - An owning, contiguous host tensor --------------------===//
//
// Row-major storage with a dtype and a shape; 64-byte aligned so packed
// records and vector loads are safe. bf16 is stored as uint16_t bit patterns,
// fp8 / ue8m0 / packed fp4 as uint8_t.
//
// A tensor is owning (reset*: its own storage), described (describe*: a size
// without host bytes) or a view (view*: bytes owned by someone else, e.g. a
// Session's activation arena, MemoryPlan.h). View semantics:
//   - copying a view (construction or assignment) makes an owning deep copy,
//     so a copy never aliases the arena;
//   - moving a view moves the view (the same bytes, still not owned) and
//     leaves the source empty; the owner of the bytes must outlive it;
//   - reset*/describe*/copy-assignment on a view make it owning/described and
//     never write through the old view.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_HOSTTENSOR_H
#define DSC_RUNTIME_HOSTTENSOR_H

#include "dsc/runtime/Safetensors.h" // DType, dtypeSize

#include "dsc/runtime/Status.h"

#include <cassert>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace dsc::runtime {

class HostTensor {
public:
  /// Largest tensor resetChecked accepts (2^40 bytes).
  static constexpr uint64_t kMaxBytes = uint64_t(1) << 40;

  HostTensor() = default;
  HostTensor(DType dtype, std::vector<int64_t> shape) { reset(dtype, std::move(shape)); }
  HostTensor(const HostTensor &other) { *this = other; }
  HostTensor &operator=(const HostTensor &other) {
    if (this == &other)
      return *this;
    dtype_ = other.dtype_;
    shape_ = other.shape_;
    view_ = nullptr; // never write through a view we held
    if (!other.raw()) {
      storage_.reset();
      capacity_ = 0;
    } else if (other.bytes_ > capacity_ || !storage_) {
      size_t words = (other.bytes_ + 63) / 64;
      storage_.reset(words ? new Block[words] : nullptr);
      capacity_ = words * 64;
    }
    bytes_ = other.bytes_;
    if (bytes_ && other.raw())
      std::memcpy(storage_.get(), other.raw(), bytes_);
    return *this;
  }
  /// Moves leave `other` empty (no shape, no bytes, no capacity).
  HostTensor(HostTensor &&other) noexcept { *this = std::move(other); }
  HostTensor &operator=(HostTensor &&other) noexcept {
    if (this == &other)
      return *this;
    dtype_ = other.dtype_;
    shape_ = std::move(other.shape_);
    storage_ = std::move(other.storage_);
    view_ = other.view_;
    bytes_ = other.bytes_;
    capacity_ = other.capacity_;
    other.shape_.clear();
    other.view_ = nullptr;
    other.bytes_ = 0;
    other.capacity_ = 0;
    return *this;
  }

  /// Elements of `shape` times the element size of `dtype`, or nullopt for a
  /// negative dimension or a product that overflows 64 bits.
  static std::optional<uint64_t> checkedByteSize(DType dtype, const std::vector<int64_t> &shape) {
    uint64_t n = 1;
    for (int64_t d : shape) {
      if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n))
        return std::nullopt;
    }
    if (__builtin_mul_overflow(n, uint64_t(dtypeSize(dtype)), &n))
      return std::nullopt;
    return n;
  }
  static std::string shapeString(const std::vector<int64_t> &shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i)
      s += (i ? ", " : "") + std::to_string(shape[i]);
    return s + "]";
  }

  /// Re-shapes and zero-fills (reallocates only when growing). A negative
  /// dimension or more than kMaxBytes is InvalidArgument naming the shape;
  /// the tensor is then left empty.
  Status resetChecked(DType dtype, std::vector<int64_t> shape) {
    std::optional<uint64_t> bytes = checkedByteSize(dtype, shape);
    if (!bytes || *bytes > kMaxBytes) {
      std::string text = shapeString(shape);
      dtype_ = dtype;
      shape_.clear();
      view_ = nullptr;
      bytes_ = 0;
      return invalidArgument("tensor shape " + text + " of " + dtypeName(dtype) +
                             (bytes ? " needs " + std::to_string(*bytes) + " bytes, more than the limit of " +
                                          std::to_string(kMaxBytes)
                                    : std::string(" has a negative dimension or overflows")));
    }
    dtype_ = dtype;
    shape_ = std::move(shape);
    view_ = nullptr;
    if (*bytes > capacity_ || !storage_) {
      size_t words = size_t((*bytes + 63) / 64);
      storage_.reset(words ? new Block[words] : nullptr);
      capacity_ = words * 64;
    }
    bytes_ = size_t(*bytes);
    if (bytes_)
      std::memset(storage_.get(), 0, bytes_);
    return Status::ok();
  }
  /// resetChecked for shapes the caller has validated; an invalid shape
  /// asserts in debug builds and leaves an empty tensor otherwise.
  void reset(DType dtype, std::vector<int64_t> shape) {
    Status s = resetChecked(dtype, std::move(shape));
    assert(s.isOk() && "HostTensor::reset: invalid shape");
    (void)s;
  }

  /// Sets dtype and shape without host storage: byteSize() is the described
  /// size and bytes() is null. For weights that live only on a device backend
  /// (Engine::createSynthetic streams them with Backend::uploadChunk). Same
  /// checks as resetChecked.
  Status describeChecked(DType dtype, std::vector<int64_t> shape) {
    std::optional<uint64_t> bytes = checkedByteSize(dtype, shape);
    storage_.reset();
    view_ = nullptr;
    capacity_ = 0;
    dtype_ = dtype;
    if (!bytes || *bytes > kMaxBytes) {
      std::string text = shapeString(shape);
      shape_.clear();
      bytes_ = 0;
      return invalidArgument("tensor shape " + text + " of " + dtypeName(dtype) +
                             " is negative, overflows or exceeds " + std::to_string(kMaxBytes) +
                             " bytes");
    }
    shape_ = std::move(shape);
    bytes_ = size_t(*bytes);
    return Status::ok();
  }
  void describe(DType dtype, std::vector<int64_t> shape) {
    Status s = describeChecked(dtype, std::move(shape));
    assert(s.isOk() && "HostTensor::describe: invalid shape");
    (void)s;
  }
  /// Makes this tensor a non-owning view of `data` (64-byte aligned, at least
  /// `available` bytes, owned by the caller and outliving the view) with this
  /// dtype and shape. Does not zero. Any storage this tensor owned is freed.
  /// InvalidArgument for an invalid shape (the tensor is then left empty), a
  /// size above `available`, or a misaligned or null `data` with bytes.
  /// `alignment` 64 by default; a row slice of an aligned tensor (the row
  /// tiles of Session::run) passes its element size.
  Status viewChecked(DType dtype, std::vector<int64_t> shape, std::byte *data, size_t available,
                     size_t alignment = 64) {
    std::optional<uint64_t> bytes = checkedByteSize(dtype, shape);
    storage_.reset();
    capacity_ = 0;
    view_ = nullptr;
    dtype_ = dtype;
    shape_.clear();
    bytes_ = 0;
    if (!bytes || *bytes > kMaxBytes)
      return invalidArgument("tensor shape " + shapeString(shape) + " of " + dtypeName(dtype) +
                             " is negative, overflows or exceeds " + std::to_string(kMaxBytes) +
                             " bytes");
    if (*bytes > available)
      return invalidArgument("view of " + std::to_string(*bytes) + " bytes into " +
                             std::to_string(available) + " available bytes");
    if (*bytes && (!data || alignment == 0 || reinterpret_cast<uintptr_t>(data) % alignment != 0))
      return invalidArgument("view data is null or not " + std::to_string(alignment) +
                             "-byte aligned");
    shape_ = std::move(shape);
    bytes_ = size_t(*bytes);
    view_ = data;
    return Status::ok();
  }
  /// True when the bytes belong to someone else (viewChecked).
  bool isView() const { return view_ != nullptr; }
  /// False for a described tensor (no host copy of its bytes).
  bool hasStorage() const { return bytes_ == 0 || raw() != nullptr; }

  DType dtype() const { return dtype_; }
  const std::vector<int64_t> &shape() const { return shape_; }
  /// Dimension i; callers validate ranks first (asserts in debug builds,
  /// 0 out of range otherwise; never throws).
  int64_t dim(size_t i) const {
    assert(i < shape_.size() && "HostTensor::dim out of range");
    return i < shape_.size() ? shape_[i] : 0;
  }
  /// Element count (the shape was checked when set, so this cannot overflow).
  int64_t numElements() const {
    uint64_t n = 1;
    for (int64_t d : shape_)
      if (d < 0 || __builtin_mul_overflow(n, uint64_t(d), &n))
        return 0;
    return n > uint64_t(INT64_MAX) ? 0 : int64_t(n);
  }
  size_t byteSize() const { return bytes_; }

  std::byte *bytes() { return raw(); }
  const std::byte *bytes() const { return raw(); }
  template <typename T> T *data() { return reinterpret_cast<T *>(raw()); }
  template <typename T> const T *data() const { return reinterpret_cast<const T *>(raw()); }
  template <typename T> std::span<T> span() { return {data<T>(), bytes_ / sizeof(T)}; }
  template <typename T> std::span<const T> span() const { return {data<T>(), bytes_ / sizeof(T)}; }

private:
  struct alignas(64) Block { std::byte b[64]; };
  std::byte *raw() const {
    return view_ ? view_ : reinterpret_cast<std::byte *>(storage_.get());
  }
  DType dtype_ = DType::U8;
  std::vector<int64_t> shape_;
  std::unique_ptr<Block[]> storage_;
  std::byte *view_ = nullptr; ///< non-null: a view (storage_ is then empty)
  size_t bytes_ = 0, capacity_ = 0;
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_HOSTTENSOR_H
