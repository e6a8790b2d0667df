//===- SharedDir.h - Where tests find ../shared ---------------------------===//
//
// Tests read golden cases and released configs from the shared folder:
// $DSC_SHARED_DIR if set, else <repository>/../shared (set at configure time).
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_SUPPORT_SHAREDDIR_H
#define DSC_TEST_SUPPORT_SHAREDDIR_H

#include <cstdlib>
#include <string>

namespace dsc::test {

inline std::string sharedDir() {
  if (const char *env = std::getenv("DSC_SHARED_DIR"); env && *env)
    return env;
  return DSC_SHARED_DIR_DEFAULT;
}

/// <shared>/<relative>
inline std::string sharedPath(const std::string &relative) {
  return sharedDir() + "/" + relative;
}

} // namespace dsc::test

#endif // DSC_TEST_SUPPORT_SHAREDDIR_H
