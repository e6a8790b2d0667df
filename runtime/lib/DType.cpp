//===- DType.cpp - Element type names and sizes ----------------------------===//
#include "dsc/runtime/DType.h"

namespace dsc::runtime {

namespace {

struct DTypeInfo {
  DType dtype;
  const char *name;
  size_t size;
};

constexpr DTypeInfo kDTypes[] = {
    {DType::BF16, "BF16", 2},       {DType::F16, "F16", 2},
    {DType::F32, "F32", 4},         {DType::F64, "F64", 8},
    {DType::I8, "I8", 1},           {DType::U8, "U8", 1},
    {DType::I16, "I16", 2},         {DType::I32, "I32", 4},
    {DType::I64, "I64", 8},         {DType::Bool, "BOOL", 1},
    {DType::F8_E4M3, "F8_E4M3", 1}, {DType::F8_E8M0, "F8_E8M0", 1},
};

} // namespace

const char *dtypeName(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.name;
  return "?";
}

size_t dtypeSize(DType dtype) {
  for (const DTypeInfo &info : kDTypes)
    if (info.dtype == dtype)
      return info.size;
  return 0;
}

std::optional<DType> parseDType(std::string_view name) {
  for (const DTypeInfo &info : kDTypes)
    if (name == info.name)
      return info.dtype;
  return std::nullopt;
}

} // namespace dsc::runtime
