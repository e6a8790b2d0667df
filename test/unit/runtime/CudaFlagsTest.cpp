//===- CudaFlagsTest.cpp - The tools' CUDA switches (tools/common/CudaFlags.h) ===//
//
// What: the DSC_CUDA_* variables map onto CudaOptions as the runtime read
// them before (it reads none now), the --cuda-* flags win over them, and a
// bad flag value is an error naming the flag.
// Why: EngineOptions::cuda replaced the runtime's getenv calls; dsc-run and
// dsc-bench keep the old switches through this mapping.
//===----------------------------------------------------------------------===//
#include "tools/common/CudaFlags.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <utility>

using dsc::runtime::CudaOptions;
using dsc::tools::CommandLine;
namespace runtime = dsc::runtime;

namespace {

class CudaFlags : public ::testing::Test {
protected:
  void SetUp() override { clear(); }
  void TearDown() override { clear(); }
  static void clear() {
    for (const char *v : {"DSC_CUDA_GRAPHS", "DSC_CUDA_SYNC", "DSC_CUDA_TOPK_QUADRATIC"})
      unsetenv(v);
  }
  static CudaOptions apply(const CommandLine &cl, std::string *error = nullptr) {
    CudaOptions options;
    std::string e = dsc::tools::applyCudaFlags(cl, options);
    if (error)
      *error = e;
    else
      EXPECT_EQ(e, "");
    return options;
  }
  /// A two-valued flag: the field's default without it, `on` and `off`
  /// set and clear it, and `bad` is a usage error with `error`'s text.
  static void expectTwoValued(const std::string &flag, const std::string &on,
                              const std::string &off, bool byDefault, bool CudaOptions::*field,
                              const std::string &bad, const std::string &error) {
    CommandLine cl;
    EXPECT_EQ(apply(cl).*field, byDefault) << flag << " absent";
    cl.options[flag] = on;
    EXPECT_TRUE(apply(cl).*field) << flag << " " << on;
    cl.options[flag] = off;
    EXPECT_FALSE(apply(cl).*field) << flag << " " << off;
    cl.options[flag] = bad;
    std::string got;
    apply(cl, &got);
    EXPECT_EQ(got, error);
  }
};

TEST_F(CudaFlags, DefaultsWithoutVariablesOrFlags) {
  CudaOptions o = apply(CommandLine());
  EXPECT_TRUE(o.graphs);
  EXPECT_FALSE(o.logGraphs);
  EXPECT_FALSE(o.syncEachLaunch);
  EXPECT_FALSE(o.quadraticTopk);
}

TEST_F(CudaFlags, VariablesAsTheRuntimeReadThem) {
  setenv("DSC_CUDA_GRAPHS", "0", 1);
  EXPECT_FALSE(apply(CommandLine()).graphs);
  setenv("DSC_CUDA_GRAPHS", "2", 1);
  CudaOptions log = apply(CommandLine());
  EXPECT_TRUE(log.graphs);
  EXPECT_TRUE(log.logGraphs);
  setenv("DSC_CUDA_GRAPHS", "1", 1);
  EXPECT_TRUE(apply(CommandLine()).graphs);
  EXPECT_FALSE(apply(CommandLine()).logGraphs);
  setenv("DSC_CUDA_SYNC", "0", 1);
  EXPECT_FALSE(apply(CommandLine()).syncEachLaunch);
  setenv("DSC_CUDA_SYNC", "yes", 1);
  EXPECT_TRUE(apply(CommandLine()).syncEachLaunch);
  setenv("DSC_CUDA_TOPK_QUADRATIC", "2", 1);
  EXPECT_FALSE(apply(CommandLine()).quadraticTopk) << "only =1 selected it";
  setenv("DSC_CUDA_TOPK_QUADRATIC", "1", 1);
  EXPECT_TRUE(apply(CommandLine()).quadraticTopk);
}

TEST_F(CudaFlags, FlagsWinOverVariables) {
  setenv("DSC_CUDA_GRAPHS", "0", 1);
  setenv("DSC_CUDA_TOPK_QUADRATIC", "1", 1);
  CommandLine cl;
  cl.options["--cuda-graphs"] = "log";
  cl.options["--cuda-topk"] = "radix";
  cl.flags.insert("--cuda-sync");
  CudaOptions o = apply(cl);
  EXPECT_TRUE(o.graphs);
  EXPECT_TRUE(o.logGraphs);
  EXPECT_FALSE(o.quadraticTopk);
  EXPECT_TRUE(o.syncEachLaunch);
  cl.options["--cuda-graphs"] = "off";
  EXPECT_FALSE(apply(cl).graphs);
}

TEST_F(CudaFlags, BadValuesNameTheFlag) {
  CommandLine cl;
  cl.options["--cuda-graphs"] = "2";
  std::string error;
  apply(cl, &error);
  EXPECT_EQ(error, "--cuda-graphs takes on, off or log, got '2'");
  cl.options.clear();
  cl.options["--cuda-topk"] = "o(n)";
  apply(cl, &error);
  EXPECT_EQ(error, "--cuda-topk takes radix or quadratic, got 'o(n)'");
  cl.options.clear();
  cl.options["--cuda-kernels"] = "slow";
  apply(cl, &error);
  EXPECT_EQ(error.rfind("--cuda-kernels takes fast, cpu-order or cpu-order=FAMILY,... (linear, ", 0), 0u)
      << error;
}

/// --cuda-kernels picks CudaOptions::cpuOrderFamilies; fast is the default.
TEST_F(CudaFlags, KernelsFlagSelectsTheCpuOrderKernels) {
  CommandLine cl;
  EXPECT_EQ(apply(cl).cpuOrderFamilies, 0u);
  cl.options["--cuda-kernels"] = "cpu-order";
  EXPECT_EQ(apply(cl).cpuOrderFamilies, runtime::kAllKernelFamilies);
  EXPECT_TRUE(apply(cl).cpuOrder(runtime::KernelFamily::MoeExperts));
  cl.options["--cuda-kernels"] = "fast";
  EXPECT_EQ(apply(cl).cpuOrderFamilies, 0u);
}

/// cpu-order=NAME,... selects exactly the named families.
TEST_F(CudaFlags, KernelsFlagNamesFamilies) {
  CommandLine cl;
  cl.options["--cuda-kernels"] = "cpu-order=norm,moe-experts";
  runtime::CudaOptions o = apply(cl);
  EXPECT_EQ(o.cpuOrderFamilies,
            uint32_t(runtime::KernelFamily::Norm) | uint32_t(runtime::KernelFamily::MoeExperts));
  EXPECT_TRUE(o.cpuOrder(runtime::KernelFamily::Norm));
  EXPECT_FALSE(o.cpuOrder(runtime::KernelFamily::Linear));
  // Every family has a name, and the names cover kAllKernelFamilies exactly.
  uint32_t all = 0;
  for (const runtime::KernelFamilyName &f : runtime::kKernelFamilyNames) {
    cl.options["--cuda-kernels"] = std::string("cpu-order=") + f.name;
    EXPECT_EQ(apply(cl).cpuOrderFamilies, uint32_t(f.family)) << f.name;
    all |= uint32_t(f.family);
  }
  EXPECT_EQ(all, runtime::kAllKernelFamilies);
}

/// An unknown family is a usage error naming it and listing the families.
TEST_F(CudaFlags, KernelsFlagRejectsUnknownFamily) {
  CommandLine cl;
  cl.options["--cuda-kernels"] = "cpu-order=norm,gemm";
  std::string error;
  apply(cl, &error);
  EXPECT_NE(error.find("unknown kernel family 'gemm'"), std::string::npos) << error;
  EXPECT_NE(error.find("moe-experts"), std::string::npos) << error;
  cl.options["--cuda-kernels"] = "cpu-order=";
  apply(cl, &error);
  EXPECT_NE(error.find("unknown kernel family ''"), std::string::npos) << error;
}

/// --cuda-attention picks CudaOptions::attention; the tensor-core kernels
/// are the default.
TEST_F(CudaFlags, AttentionFlagSelectsTheKernels) {
  using dsc::runtime::AttentionKernels;
  CommandLine cl;
  EXPECT_EQ(apply(cl).attention, AttentionKernels::TensorCore);
  const std::pair<const char *, AttentionKernels> cases[] = {
      {"single", AttentionKernels::Single},
      {"split", AttentionKernels::Split},
      {"mqa", AttentionKernels::Mqa},
      {"tc", AttentionKernels::TensorCore}};
  for (const auto &[value, kernels] : cases) {
    cl.options["--cuda-attention"] = value;
    EXPECT_EQ(apply(cl).attention, kernels) << value;
  }
  cl.options["--cuda-attention"] = "wide";
  std::string error;
  apply(cl, &error);
  EXPECT_EQ(error, "--cuda-attention takes single, split, mqa or tc, got 'wide'");
}

/// --cuda-moe-mma picks CudaOptions::moeE4m3Mma; the f16 tiles are the default.
TEST_F(CudaFlags, MoeMmaFlagSelectsE4m3) {
  expectTwoValued("--cuda-moe-mma", "e4m3", "f16", false, &CudaOptions::moeE4m3Mma, "fp4",
                  "--cuda-moe-mma takes f16 or e4m3, got 'fp4'");
}

/// --cuda-gemv picks CudaOptions::gemv; the row lanes are the default.
TEST_F(CudaFlags, GemvFlagSelectsTheFamily) {
  using dsc::runtime::GemvKernels;
  CommandLine cl;
  EXPECT_EQ(apply(cl).gemv, GemvKernels::Rows);
  const std::pair<const char *, GemvKernels> values[] = {
      {"lanes", GemvKernels::Lanes}, {"slots", GemvKernels::Slots}, {"tiles", GemvKernels::Tiles},
      {"wg", GemvKernels::Warpgroups}, {"rows", GemvKernels::Rows}};
  for (const auto &[name, family] : values) {
    cl.options["--cuda-gemv"] = name;
    EXPECT_EQ(apply(cl).gemv, family) << name;
  }
  cl.options["--cuda-gemv"] = "cols";
  std::string got;
  apply(cl, &got);
  EXPECT_EQ(got, "--cuda-gemv takes lanes, slots, tiles, wg or rows, got 'cols'");
}

/// --cuda-pdl picks CudaOptions::dependentLaunch; dependent launches are the default.
TEST_F(CudaFlags, PdlFlagSelectsDependentLaunch) {
  expectTwoValued("--cuda-pdl", "on", "off", true, &CudaOptions::dependentLaunch, "yes",
                  "--cuda-pdl takes on or off, got 'yes'");
}

/// --cuda-mhc picks CudaOptions::mhcOneLaunch; one launch is the default.
TEST_F(CudaFlags, MhcFlagSelectsTheOneLaunchEntry) {
  expectTwoValued("--cuda-mhc", "one", "steps", true, &CudaOptions::mhcOneLaunch, "fused",
                  "--cuda-mhc takes one or steps, got 'fused'");
}

/// --cuda-capture-order picks CudaOptions::captureHeirFirst; program order
/// is the default (the heir-first order is not measured yet).
TEST_F(CudaFlags, CaptureOrderFlagSelectsHeirFirst) {
  expectTwoValued("--cuda-capture-order", "heir", "program", false,
                  &CudaOptions::captureHeirFirst, "random",
                  "--cuda-capture-order takes program or heir, got 'random'");
}

/// --cuda-arena picks CudaOptions::privateSmallArenas; private is the default.
TEST_F(CudaFlags, ArenaFlagSelectsPrivateSmallArenas) {
  expectTwoValued("--cuda-arena", "private", "shared", true, &CudaOptions::privateSmallArenas,
                  "pooled", "--cuda-arena takes private or shared, got 'pooled'");
}

/// --cuda-streams N picks CudaOptions::streams (1 to 8; 4 by default).
TEST_F(CudaFlags, StreamsFlagSetsTheBranchStreams) {
  CommandLine cl;
  EXPECT_EQ(apply(cl).streams, 4);
  for (int n : {1, 2, 8}) {
    cl.options["--cuda-streams"] = std::to_string(n);
    EXPECT_EQ(apply(cl).streams, n);
  }
  for (const char *bad : {"0", "9", "four"}) {
    cl.options["--cuda-streams"] = bad;
    std::string got;
    apply(cl, &got);
    EXPECT_EQ(got, std::string("--cuda-streams takes 1, 2, 3, 4, 5, 6, 7 or 8, got '") + bad + "'");
  }
}

} // namespace

namespace {

/// --cpu-threads N, else DSC_CPU_THREADS, fills EngineOptions::cpuThreads.
TEST(CpuFlags, FlagThenVariable) {
  unsetenv("DSC_CPU_THREADS");
  dsc::runtime::EngineOptions o;
  EXPECT_EQ(dsc::tools::applyCpuFlags(CommandLine(), o), "");
  EXPECT_EQ(o.cpuThreads, 0); // hardware concurrency
  setenv("DSC_CPU_THREADS", "5", 1);
  EXPECT_EQ(dsc::tools::applyCpuFlags(CommandLine(), o), "");
  EXPECT_EQ(o.cpuThreads, 5);
  CommandLine cl;
  cl.options["--cpu-threads"] = "3";
  EXPECT_EQ(dsc::tools::applyCpuFlags(cl, o), "");
  EXPECT_EQ(o.cpuThreads, 3); // the flag wins
  cl.options["--cpu-threads"] = "0";
  EXPECT_EQ(dsc::tools::applyCpuFlags(cl, o), "--cpu-threads takes a thread count in [1, 4096], got '0'");
  unsetenv("DSC_CPU_THREADS");
  setenv("DSC_CPU_THREADS", "many", 1);
  EXPECT_EQ(dsc::tools::applyCpuFlags(CommandLine(), o),
            "DSC_CPU_THREADS takes a thread count in [1, 4096], got 'many'");
  unsetenv("DSC_CPU_THREADS");
}

} // namespace
