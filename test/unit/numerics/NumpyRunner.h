//===- NumpyRunner.h - Run a numpy script as an independent reference -----===//
//
// Tests that compare against numpy write their inputs as raw little-endian
// files, run DSC_NUMPY_PYTHON on a script, and read raw outputs back. When
// no python3 with numpy is available the test is skipped, never passed.
//===----------------------------------------------------------------------===//
#ifndef DSC_TEST_NUMERICS_NUMPYRUNNER_H
#define DSC_TEST_NUMERICS_NUMPYRUNNER_H

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace dsc::test {

inline std::string numpyPython() {
#ifdef DSC_NUMPY_PYTHON
  std::string p = DSC_NUMPY_PYTHON;
#else
  std::string p;
#endif
  if (p.empty() || p.find("NOTFOUND") != std::string::npos)
    return {};
  std::string probe = p + " -c 'import numpy' >/dev/null 2>&1";
  return std::system(probe.c_str()) == 0 ? p : std::string();
}

/// A scratch directory removed at scope exit.
class ScratchDir {
public:
  explicit ScratchDir(const std::string &tag) {
    path_ = std::filesystem::temp_directory_path() /
            ("dsc_np_" + tag + "_" + std::to_string(::getpid()));
    std::filesystem::create_directories(path_);
  }
  ~ScratchDir() { std::filesystem::remove_all(path_); }
  std::string file(const std::string &name) const { return (path_ / name).string(); }

private:
  std::filesystem::path path_;
};

template <typename T>
void writeRaw(const std::string &path, const std::vector<T> &v) {
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char *>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
}

template <typename T> std::vector<T> readRaw(const std::string &path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  std::vector<T> v(in ? static_cast<size_t>(in.tellg()) / sizeof(T) : 0);
  in.seekg(0);
  in.read(reinterpret_cast<char *>(v.data()), static_cast<std::streamsize>(v.size() * sizeof(T)));
  return v;
}

/// Runs `script` (python source) with `args`; returns the exit status.
inline int runPython(const std::string &python, const ScratchDir &dir, const std::string &script,
                     const std::string &args) {
  const std::string path = dir.file("script.py");
  std::ofstream(path) << script;
  const std::string cmd = python + " " + path + " " + args;
  return std::system(cmd.c_str());
}

} // namespace dsc::test

#define DSC_REQUIRE_NUMPY(var)                                                         \
  const std::string var = ::dsc::test::numpyPython();                                  \
  if (var.empty())                                                                     \
  GTEST_SKIP() << "python3 with numpy not available (DSC_NUMPY_PYTHON)"

#endif // DSC_TEST_NUMERICS_NUMPYRUNNER_H
