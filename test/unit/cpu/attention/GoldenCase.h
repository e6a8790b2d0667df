//===- GoldenCase.h - Loading golden cases for the attention tests --------===//
//
// A golden case folder (shared/golden/<case>): config.json (reference
// ModelArgs), model.safetensors (checkpoint), expected*.safetensors (a
// teacher-forced run with per-block dumps). Typed, shape-checked access to
// tensors; missing or mistyped tensors throw with the tensor name.
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_UNIT_CPU_ATTENTION_GOLDENCASE_H
#define DSC_TEST_UNIT_CPU_ATTENTION_GOLDENCASE_H

#include "dsc/runtime/Safetensors.h"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace dsc::test {

class TensorFile {
public:
  explicit TensorFile(const std::string &path) {
    auto f = runtime::SafetensorsFile::open(path);
    if (!f.hasValue())
      throw std::runtime_error(f.status().message());
    file_ = std::make_unique<runtime::SafetensorsFile>(std::move(f.value()));
  }
  bool has(const std::string &name) const { return file_->find(name) != nullptr; }
  const runtime::TensorView &view(const std::string &name) const {
    const runtime::TensorView *t = file_->find(name);
    if (!t)
      throw std::runtime_error(file_->path() + ": no tensor " + name);
    return *t;
  }
  template <typename T>
  const T *data(const std::string &name, runtime::DType dtype) const {
    const runtime::TensorView &t = view(name);
    if (t.dtype != dtype)
      throw std::runtime_error(name + ": unexpected dtype " + runtime::dtypeName(t.dtype));
    return reinterpret_cast<const T *>(t.bytes.data());
  }
  const uint16_t *bf16(const std::string &n) const { return data<uint16_t>(n, runtime::DType::BF16); }
  const float *f32(const std::string &n) const { return data<float>(n, runtime::DType::F32); }
  const uint8_t *e4m3(const std::string &n) const { return data<uint8_t>(n, runtime::DType::F8_E4M3); }
  const uint8_t *e8m0(const std::string &n) const { return data<uint8_t>(n, runtime::DType::F8_E8M0); }
  const int32_t *i32(const std::string &n) const { return data<int32_t>(n, runtime::DType::I32); }
  const int64_t *i64(const std::string &n) const { return data<int64_t>(n, runtime::DType::I64); }
  const uint8_t *u8(const std::string &n) const { return data<uint8_t>(n, runtime::DType::U8); }
  std::vector<int64_t> shape(const std::string &n) const { return view(n).shape; }
  int64_t numel(const std::string &n) const { return view(n).numElements(); }
  const std::string &metadata(const std::string &key) const {
    auto it = file_->metadata().find(key);
    if (it == file_->metadata().end())
      throw std::runtime_error(file_->path() + ": no metadata " + key);
    return it->second;
  }

private:
  std::unique_ptr<runtime::SafetensorsFile> file_;
};

inline nlohmann::json readJson(const std::string &path) {
  std::ifstream in(path);
  if (!in)
    throw std::runtime_error("cannot read " + path);
  return nlohmann::json::parse(in);
}

} // namespace dsc::test

#endif // DSC_TEST_UNIT_CPU_ATTENTION_GOLDENCASE_H
