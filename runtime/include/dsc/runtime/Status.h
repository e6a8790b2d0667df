//===- Status.h - Error values for the runtime (no exceptions) ------------===//
//
// The runtime reports every failure as a value: `Status` (ok or a message) and
// `Expected<T>` (a T or a failed Status). Messages name the file, tensor or key
// and the expected value. No exception crosses the runtime's API, and the C
// API turns a Status into a code plus message.
//===----------------------------------------------------------------------===//
#ifndef DSC_RUNTIME_STATUS_H
#define DSC_RUNTIME_STATUS_H

#include <cassert>
#include <optional>
#include <string>
#include <utility>
#include <variant>

namespace dsc::runtime {

enum class StatusCode {
  Ok = 0,
  InvalidArgument, ///< bad request or option
  NotFound,        ///< missing file or tensor
  DataLoss,        ///< truncated or corrupted file
  FailedPrecondition, ///< e.g. plan and checkpoint disagree
  Unavailable,     ///< e.g. no CUDA driver
  Internal,
};

class [[nodiscard]] Status {
public:
  Status() = default; ///< ok
  Status(StatusCode code, std::string message)
      : code_(code), message_(std::move(message)) {}
  static Status ok() { return Status(); }

  bool isOk() const { return code_ == StatusCode::Ok; }
  explicit operator bool() const { return isOk(); }
  StatusCode code() const { return code_; }
  const std::string &message() const { return message_; }

  /// Prefixes context ("model.safetensors: ") to a failed status.
  Status withContext(const std::string &context) const {
    if (isOk()) return *this;
    return Status(code_, context + message_);
  }

private:
  StatusCode code_ = StatusCode::Ok;
  std::string message_;
};

inline Status invalidArgument(std::string m) { return {StatusCode::InvalidArgument, std::move(m)}; }
inline Status notFound(std::string m) { return {StatusCode::NotFound, std::move(m)}; }
inline Status dataLoss(std::string m) { return {StatusCode::DataLoss, std::move(m)}; }
inline Status failedPrecondition(std::string m) { return {StatusCode::FailedPrecondition, std::move(m)}; }
inline Status unavailable(std::string m) { return {StatusCode::Unavailable, std::move(m)}; }
inline Status internalError(std::string m) { return {StatusCode::Internal, std::move(m)}; }

/// A value or the Status that explains why there is none.
template <typename T> class [[nodiscard]] Expected {
public:
  Expected(T value) : storage_(std::move(value)) {}
  Expected(Status status) : storage_(std::move(status)) {
    assert(!std::get<Status>(storage_).isOk() && "Expected built from an ok Status");
  }

  bool hasValue() const { return std::holds_alternative<T>(storage_); }
  explicit operator bool() const { return hasValue(); }

  T &value() & { return std::get<T>(storage_); }
  const T &value() const & { return std::get<T>(storage_); }
  T &&value() && { return std::get<T>(std::move(storage_)); }
  T &operator*() & { return value(); }
  const T &operator*() const & { return value(); }
  T *operator->() { return &value(); }
  const T *operator->() const { return &value(); }

  /// The failure; an ok Status when a value is present.
  Status status() const {
    return hasValue() ? Status() : std::get<Status>(storage_);
  }

private:
  std::variant<T, Status> storage_;
};

} // namespace dsc::runtime

#endif // DSC_RUNTIME_STATUS_H
