//===- NativeExecutablesTest.cpp - The CUDA backend's executable bindings ---===//
//
// Logic of runtime/cuda that runs without a GPU: every native executable of
// NativeExecutables.def has a CUDA host function and a template that codegen
// embeds, unknown names have none, and the launch-geometry helpers cap grids
// as documented (CudaAdapter.h).
//===----------------------------------------------------------------------===//
#include "codegen/KernelCompiler.h"
#include "dsc/abi/NativeExecutables.h"
#include "runtime/cuda/CudaAdapter.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace {

TEST(CudaNativeExecutables, EveryEntryIsBound) {
  std::set<std::string> names;
  for (const dsc::abi::NativeExecutableInfo &e : dsc::abi::kNativeExecutables) {
    EXPECT_TRUE(names.insert(e.name).second) << e.name << " is listed twice";
    EXPECT_NE(dsc::cuda::findNativeHostFn(e.name), nullptr) << e.name;
    EXPECT_TRUE(dsc::codegen::hasKernelSource(e.templateName))
        << e.name << ": template " << e.templateName << ".cu is not embedded";
    EXPECT_EQ(dsc::abi::findNativeExecutable(e.name), &e);
  }
  EXPECT_EQ(names.size(), 2u) << "attention_inverse_rope and mhc_entry_pre_norm";
  EXPECT_EQ(dsc::cuda::findNativeHostFn("no_such_executable"), nullptr);
  EXPECT_EQ(dsc::abi::findNativeExecutable("no_such_executable"), nullptr);
}

TEST(CudaLaunchGeometry, GridsAreCapped) {
  EXPECT_EQ(dsc::cuda::gridFor(0).x, 0u);
  EXPECT_EQ(dsc::cuda::gridFor(1).x, 1u);
  EXPECT_EQ(dsc::cuda::gridFor(256).x, 1u);
  EXPECT_EQ(dsc::cuda::gridFor(257).x, 2u);
  EXPECT_EQ(dsc::cuda::gridFor(-5).x, 0u);
  EXPECT_EQ(dsc::cuda::gridFor((long long)1 << 40).x, 1u << 20);
  EXPECT_EQ(dsc::cuda::gridRows(7).x, 7u);
  EXPECT_EQ(dsc::cuda::gridRows((long long)1 << 30).x, 1u << 20);
}

} // namespace
