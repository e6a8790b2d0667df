//===- ConfigTestUtil.h - Load, mutate and import configs in tests --------===//
#ifndef DSC_TEST_UNIT_MODELS_CONFIGTESTUTIL_H
#define DSC_TEST_UNIT_MODELS_CONFIGTESTUTIL_H

#include "models/ConfigImport.h"
#include "test/unit/support/SharedDir.h"

#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>

namespace dsc::test {

inline const char *kReleasedInference =
    "models/deepseek-v4.1-flash/inference_config.json";
inline const char *kReleasedHF = "models/deepseek-v4.1-flash/config.json";

/// The text of <shared>/<relative>; fails the test if unreadable.
inline std::string readShared(const std::string &relative) {
  auto buffer = llvm::MemoryBuffer::getFile(sharedPath(relative));
  EXPECT_TRUE(bool(buffer)) << "cannot read " << sharedPath(relative);
  return buffer ? (*buffer)->getBuffer().str() : std::string();
}

/// The parsed JSON object of <shared>/<relative>.
inline llvm::json::Object loadShared(const std::string &relative) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(readShared(relative));
  if (!v) {
    ADD_FAILURE() << llvm::toString(v.takeError());
    return {};
  }
  return *v->getAsObject();
}

inline std::string serialize(const llvm::json::Object &obj) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << llvm::json::Value(llvm::json::Object(obj));
  return text;
}

/// Imports `obj` as a file named `name` (default "config.json").
inline llvm::Expected<models::ModelSpec>
importObject(const llvm::json::Object &obj,
             const std::string &name = "config.json") {
  return models::importConfigText(serialize(obj), name);
}

/// The error message of importing the released config of `relative` after
/// `mutate`; "" (and a test failure) when the import succeeds.
inline std::string
errorAfter(const std::string &relative,
           const std::function<void(llvm::json::Object &)> &mutate) {
  llvm::json::Object obj = loadShared(relative);
  mutate(obj);
  llvm::Expected<models::ModelSpec> spec = importObject(obj);
  if (spec) {
    ADD_FAILURE() << "import succeeded; expected an error";
    return "";
  }
  return llvm::toString(spec.takeError());
}

/// The array at key `k` of `obj` (test fails if absent).
inline llvm::json::Array &arrayAt(llvm::json::Object &obj, llvm::StringRef k) {
  llvm::json::Array *a = obj.getArray(k);
  EXPECT_NE(a, nullptr) << k.str();
  static llvm::json::Array empty;
  return a ? *a : empty;
}

inline llvm::json::Array intArray(std::initializer_list<int64_t> values) {
  llvm::json::Array a;
  for (int64_t v : values)
    a.push_back(v);
  return a;
}

} // namespace dsc::test

#endif // DSC_TEST_UNIT_MODELS_CONFIGTESTUTIL_H
