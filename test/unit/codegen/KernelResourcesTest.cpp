//===- KernelResourcesTest.cpp - ptxas -v resource usage of kernels -------===//
//
// parsePtxasResources on hand-written logs (NVRTC 13's layout and the older
// one-line layout), and CompiledKernel::entries of the selftest kernel, on a
// fresh compile and on a cache hit. The compile tests skip without NVRTC.
//===----------------------------------------------------------------------===//
#include "codegen/KernelCompiler.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include <unistd.h>

namespace fs = std::filesystem;
using namespace dsc::codegen;

TEST(PtxasResources, ParsesNvrtc13Log) {
  const std::string log =
      "ptxas info    : 0 bytes gmem\n"
      "ptxas info    : Compiling entry function 'dsc_a' for 'sm_90a'\n"
      "ptxas info    : Function properties for dsc_a\n"
      "ptxas         .     16 bytes stack frame, 8 bytes spill stores, 12 bytes spill loads\n"
      "ptxas info    : Used 255 registers, used 1 barriers, 256 bytes smem\n"
      "ptxas info    : Compile time = 2.373 ms\n"
      "ptxas info    : Function properties for _Z6helperf\n"
      "ptxas         .     40 bytes stack frame, 4 bytes spill stores, 4 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'dsc_b' for 'sm_90a'\n"
      "ptxas info    : Function properties for dsc_b\n"
      "ptxas         .     0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 8 registers, used 0 barriers\n";
  const auto e = parsePtxasResources(log);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].entry, "dsc_a");
  EXPECT_EQ(e[0].registers, 255);
  EXPECT_EQ(e[0].stackFrameBytes, 16);
  EXPECT_EQ(e[0].spillStoreBytes, 8);
  EXPECT_EQ(e[0].spillLoadBytes, 12);
  EXPECT_EQ(e[0].sharedBytes, 256);
  EXPECT_EQ(e[1].entry, "dsc_b");
  EXPECT_EQ(e[1].registers, 8);
  EXPECT_EQ(e[1].stackFrameBytes, 0);
  EXPECT_EQ(e[1].spillStoreBytes, 0);
  EXPECT_EQ(e[1].sharedBytes, 0);
}

TEST(PtxasResources, ParsesOneLineAndOlderLayouts) {
  const std::string log =
      "kernel.cu(3): warning #177-D: variable \"x\" was declared but never referenced\n"
      "ptxas info    : Compiling entry function 'k1' for 'sm_80'\n"
      "ptxas info    : Used 32 registers, 24 bytes stack frame, 4 bytes spill stores, "
      "8 bytes spill loads\n"
      "ptxas info    : Compiling entry function 'k2' for 'sm_80'\n"
      "ptxas info    : Function properties for k2\n"
      "    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads\n"
      "ptxas info    : Used 10 registers, 1024 bytes smem, 352 bytes cmem[0]\n";
  const auto e = parsePtxasResources(log);
  ASSERT_EQ(e.size(), 2u);
  EXPECT_EQ(e[0].entry, "k1");
  EXPECT_EQ(e[0].registers, 32);
  EXPECT_EQ(e[0].stackFrameBytes, 24);
  EXPECT_EQ(e[0].spillStoreBytes, 4);
  EXPECT_EQ(e[0].spillLoadBytes, 8);
  EXPECT_EQ(e[1].entry, "k2");
  EXPECT_EQ(e[1].registers, 10);
  EXPECT_EQ(e[1].sharedBytes, 1024);
  EXPECT_TRUE(parsePtxasResources("").empty());
  EXPECT_TRUE(parsePtxasResources("warning: something\n").empty());
}

TEST(PtxasResources, SelftestEntryOnCompileAndCacheHit) {
  if (nvrtcVersion().empty())
    GTEST_SKIP() << "NVRTC not available in this build";
  std::random_device rd;
  const fs::path dir = fs::temp_directory_path() / ("dsc-codegen-res-" + std::to_string(::getpid()) +
                                                    "-" + std::to_string(rd()));
  KernelCompileOptions opts;
  opts.cacheDir = dir.string();
  for (bool expectHit : {false, true}) {
    auto k = compileKernel("selftest", opts);
    ASSERT_TRUE(k) << k.status().message();
    EXPECT_EQ(k->fromCache, expectHit);
    ASSERT_EQ(k->entries.size(), 1u) << k->log;
    const KernelEntryResources &e = k->entries[0];
    EXPECT_EQ(e.entry, "dsc_selftest");
    EXPECT_GT(e.registers, 0) << k->log;
    EXPECT_EQ(e.spillStoreBytes, 0);
    EXPECT_EQ(e.spillLoadBytes, 0);
    EXPECT_GT(e.sharedBytes, 0) << k->log; // __shared__ float scratch[32]
  }
  // PTX only: ptxas does not run, no entries.
  opts.arch = "compute_90a";
  auto p = compileKernel("selftest", opts);
  ASSERT_TRUE(p) << p.status().message();
  EXPECT_TRUE(p->entries.empty());
  std::error_code ec;
  fs::remove_all(dir, ec);
}
