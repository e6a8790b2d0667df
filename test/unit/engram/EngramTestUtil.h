//===- EngramTestUtil.h - Helpers for the Engram tests --------------------===//
#ifndef DSC_TEST_ENGRAM_ENGRAMTESTUTIL_H
#define DSC_TEST_ENGRAM_ENGRAMTESTUTIL_H

#include "test/unit/support/SharedDir.h"

#include <nlohmann/json.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <unistd.h>

namespace dsc::test::engram {

inline std::string readText(const std::string &path) {
  std::ifstream f(path, std::ios::binary);
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

inline nlohmann::json readJson(const std::string &path) {
  return nlohmann::json::parse(readText(path));
}

/// Runs `script` with the numpy python (DSC_NUMPY_PYTHON); returns its
/// stdout, or sets *ok = false when python or numpy is unavailable.
inline std::string runPython(const std::string &script, bool *ok) {
  *ok = false;
  const std::string python = DSC_NUMPY_PYTHON;
  if (python.empty() || python.find("NOTFOUND") != std::string::npos)
    return "";
  char path[] = "/tmp/dsc_engram_test_XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0)
    return "";
  const ssize_t w = write(fd, script.data(), script.size());
  close(fd);
  if (w != ssize_t(script.size())) {
    unlink(path);
    return "";
  }
  std::string cmd = "'" + python + "' '" + path + "' 2>/dev/null";
  FILE *p = popen(cmd.c_str(), "r");
  std::string out;
  if (p) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0)
      out.append(buf, n);
    *ok = pclose(p) == 0;
  }
  unlink(path);
  return out;
}

/// True when the numpy python can import numpy.
inline bool haveNumpy() {
  bool ok = false;
  std::string out = runPython("import numpy\nprint('ok')\n", &ok);
  return ok && out.rfind("ok", 0) == 0;
}

} // namespace dsc::test::engram

#endif // DSC_TEST_ENGRAM_ENGRAMTESTUTIL_H
