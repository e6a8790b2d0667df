//===- KernelPrologueTest.cpp - Every kernel entry waits for its predecessor ===//
//
// The runtime launches kernels as programmatic dependent launches
// (CudaOptions::dependentLaunch): a kernel may be scheduled while the one
// before it still runs, which is safe only if the kernel touches no memory
// before griddepcontrol.wait (codegen/kernels/common.cuh
// DSC_KERNEL_PROLOGUE). This compiles every embedded kernel template to PTX
// (compute_90a: NVRTC without ptxas) and checks, entry by entry, that
// griddepcontrol.wait comes before the first global, shared-memory copy or
// atomic access, that launch_dependents follows it, and that the module
// carries the mark the runtime looks for (dsc_kernel_prologue). Needs no
// GPU; skipped when NVRTC is not in the build.
//===----------------------------------------------------------------------===//
#include "codegen/KernelCompiler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>
#include <regex>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace dsc::codegen;

namespace {

struct Entry {
  std::string name, body;
};

/// The `.entry` functions of a PTX module, each with its text up to the next.
std::vector<Entry> entries(const std::string &ptx) {
  std::vector<Entry> out;
  const std::string marker = ".entry ";
  for (size_t at = ptx.find(marker); at != std::string::npos;) {
    const size_t next = ptx.find(marker, at + marker.size());
    const size_t nameBegin = at + marker.size();
    const size_t nameEnd = ptx.find_first_of("( \n", nameBegin);
    out.push_back({ptx.substr(nameBegin, nameEnd - nameBegin),
                   ptx.substr(at, next == std::string::npos ? std::string::npos : next - at)});
    at = next;
  }
  return out;
}

/// Offset of the first instruction that reads or writes global memory, copies
/// into shared memory or is an atomic (npos if none).
size_t firstMemoryAccess(const std::string &body) {
  static const std::regex access(
      R"(\b(ld|st|atom|red|prefetch|cp\.async)(\.[a-z0-9]+)*\.global\b|\bcp\.async\b|\b(atom|red)\.)");
  std::smatch m;
  return std::regex_search(body, m, access) ? size_t(m.position(0)) : std::string::npos;
}

TEST(KernelPrologue, PtxScanFindsTheFirstAccess) {
  EXPECT_EQ(firstMemoryAccess("mov.u32 %r1, 0;\nld.param.u64 %rd1, [p];\n"), std::string::npos);
  EXPECT_EQ(firstMemoryAccess("ld.param.u64 %rd1, [p];\nld.global.nc.v4.u32 {..}, [%rd1];"), 24u);
  EXPECT_EQ(firstMemoryAccess("st.global.f32 [%rd1], %f1;"), 0u);
  EXPECT_EQ(firstMemoryAccess("x;atom.global.add.u32 %r1, [%rd1], 1;"), 2u);
  EXPECT_EQ(firstMemoryAccess("x;red.shared.add.u32 [%r1], 1;"), 2u);
  EXPECT_EQ(firstMemoryAccess("cp.async.cg.shared.global [%r1], [%rd1], 16;"), 0u);
}

TEST(KernelPrologue, EveryEntryWaitsForItsPredecessor) {
  if (nvrtcVersion().empty())
    GTEST_SKIP() << "NVRTC not available in this build";
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("dsc-prologue-test-" +
                                                    std::to_string(::getpid()) + "-" +
                                                    std::to_string(rd()));
  KernelCompileOptions options;
  options.arch = "compute_90a"; // PTX only
  options.cacheDir = dir.string();
  size_t checked = 0;
  for (const std::string &name : kernelSourceNames()) {
    auto k = compileKernel(name, options);
    ASSERT_TRUE(k) << name << ": " << k.status().message();
    EXPECT_NE(k->ptx.find("dsc_kernel_prologue"), std::string::npos)
        << name << ": the module lacks the prologue mark";
    const std::vector<Entry> found = entries(k->ptx);
    EXPECT_FALSE(found.empty()) << name << ": no entry in the PTX";
    for (const Entry &e : found) {
      const size_t wait = e.body.find("griddepcontrol.wait;");
      ASSERT_NE(wait, std::string::npos) << name << "/" << e.name << ": no griddepcontrol.wait";
      const size_t access = firstMemoryAccess(e.body);
      EXPECT_TRUE(access == std::string::npos || wait < access)
          << name << "/" << e.name << ": memory accessed before griddepcontrol.wait";
      const size_t launch = e.body.find("griddepcontrol.launch_dependents;");
      EXPECT_TRUE(launch != std::string::npos && launch > wait)
          << name << "/" << e.name << ": no launch_dependents after the wait";
      ++checked;
    }
  }
  EXPECT_GE(checked, 80u); // every template's entries (85 when this test was written)
  std::error_code ec;
  fs::remove_all(dir, ec);
}

} // namespace
